from __future__ import annotations

import numpy as np

from hub.chakra import RankGraph


def _graph(deps: list[list[int]]) -> RankGraph:
    ptr = np.cumsum([0] + [len(d) for d in deps])
    return RankGraph.from_columns(len(deps), dep_ptr=ptr, dep_pos=[x for d in deps for x in d])


def test_topological_rank_keeps_positions_when_already_ordered() -> None:
    assert _graph([[], [0], [0, 1]]).topological_rank().tolist() == [0, 1, 2]


def test_topological_rank_orders_forward_dependencies_lowest_position_first() -> None:
    # node 0 waits for node 2; 1 and 2 are ready: 1 first (lower position), then 2, then 0
    assert _graph([[2], [], []]).topological_rank().tolist() == [2, 0, 1]


def test_topological_rank_is_none_on_a_cycle() -> None:
    assert _graph([[1], [0], []]).topological_rank() is None


def test_is_bound_sees_one_unbound_rank_among_shared_arrays() -> None:
    from hub.algorithms import make
    from hub.chakra import Algorithm, NodeType

    alg = make("ring", "allreduce", 8).bind(1 << 20)
    assert alg.is_bound
    g = alg.graphs[5].copy()
    g.size[int(np.argmax(g.kind == NodeType.RECV))] = -1
    assert not Algorithm(alg.meta, tuple(g if r == 5 else h for r, h in enumerate(alg.graphs))).is_bound
