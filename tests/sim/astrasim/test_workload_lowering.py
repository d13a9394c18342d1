"""The workload lowering's array paths against plain per-node Python (hub.sim._astrasim.workload).

The lowering appends a custom collective's graph from a template, finds a rank's dependency edges
by binary search and keeps the feeder's child orders as arrays; each is checked here against the
per-node rule it replaces, on real traces and on the catalog's algorithms (the recorded ASTRA-sim
cases of test_astrasim_dropin check the printed numbers).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from hub.algorithms import CATALOG, make
from hub.chakra import Collective, NodeType, Workload, WorkloadNode, read_workload
from hub.errors import SimulationError
from hub.sim._astrasim.workload import feeder_orders, program_from_workload
from hub.sim._engine.feeder import _child_order, _dedup_edges
from hub.sim._engine.program import K_COMP, K_END, K_NOP, K_RECV, K_SEND, K_START, program_from_algorithm
from hub.workload import algorithm_chooser
from tests.conftest import SHARED_DATA

DATA = SHARED_DATA / "chakra-pytorch"
TRACES = [("dlrm8", "dlrm"), ("coll4", "coll4"), ("ddp2", "ddp2")]


def _kids_per_node(graph: object) -> dict[int, list[int]]:
    """The feeder's child order of every node with several children, one node at a time."""
    n = len(graph)  # type: ignore[arg-type]
    ids = np.asarray(graph.ids, dtype=np.int64).astype(np.uint64)  # type: ignore[attr-defined]
    ptr = np.asarray(graph.dep_ptr, dtype=np.int64)  # type: ignore[attr-defined]
    parents = np.asarray(graph.dep_pos, dtype=np.int64)  # type: ignore[attr-defined]
    child = np.repeat(np.arange(n, dtype=np.int64), np.diff(ptr))
    o = np.lexsort((child, parents))
    sp = np.zeros(n + 1, dtype=np.int64)
    if parents.size:
        np.cumsum(np.bincount(parents, minlength=n), out=sp[1:])
    sp, si, _ = _dedup_edges(sp, child[o], n, np.bincount(child, minlength=n))
    si = _child_order(sp, si, ids)
    return {p: list(si[sp[p] : sp[p + 1]]) for p in range(n) if sp[p + 1] - sp[p] > 1}


@pytest.mark.parametrize("name", list(CATALOG))
def test_feeder_child_orders_as_arrays_equal_the_per_node_lists(name: str) -> None:
    alg = make(name, Collective.ALLREDUCE, 8)
    for graph in alg.graphs:
        _, kids = feeder_orders(graph)
        got: dict[int, list[int]] = {}
        at = 0
        for p, c in zip(kids.parents.tolist(), kids.counts.tolist(), strict=True):
            got[p] = kids.children[at : at + c].tolist()
            at += c
        assert got == {p: [int(x) for x in v] for p, v in _kids_per_node(graph).items()}


def _check_program(wl: Workload, name: str) -> None:
    """Per rank, every workload dependency is an edge from the dependency's last engine node to the
    node's first, and each collective's graph sits between its START and END with the algorithm's
    kinds and tags (instance in the high bits)."""
    pick = algorithm_chooser({Collective.ALLREDUCE: name}, check=program_from_algorithm)
    prog = program_from_workload(wl, pick, wl.rank_count)
    kind = list(prog.kind)
    rank, lid = list(prog.rank), list(prog.local_id)
    ptr, idx = list(prog.succ_ptr), list(prog.succ_idx)
    edges = {(p, c) for p in range(prog.n) for c in idx[ptr[p] : ptr[p + 1]]}
    g = 0
    for r, nodes in enumerate(wl.ranks):
        first: dict[int, int] = {}
        last: dict[int, int] = {}
        for node in nodes:
            assert rank[g] == r and lid[g] == node.id
            first[node.id] = g
            if kind[g] == K_START:
                inst = prog.inst[g]
                g += 1
                while not (kind[g] == K_END and prog.inst[g] == inst):
                    assert kind[g] in (K_SEND, K_RECV, K_COMP, K_NOP) and prog.tagx[g] >> 32 == inst
                    g += 1
            last[node.id] = g
            g += 1
        for node in nodes:
            for d in node.deps:
                assert (last[d], first[node.id]) in edges
    assert g == prog.n


@pytest.mark.parametrize(("folder", "prefix"), TRACES)
@pytest.mark.parametrize("name", ["ring", "double_binary_tree"])
def test_real_traces_lower_to_their_dependencies_and_graphs(folder: str, prefix: str, name: str) -> None:
    if not (DATA / folder).is_dir():
        pytest.skip(f"the real traces are not at {DATA}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # dlrm8's dangling root dependencies
        wl = read_workload(DATA / folder / prefix)
    _check_program(wl, name)


def _comp(i: int, deps: list[int]) -> WorkloadNode:
    return WorkloadNode(id=i, name=f"c{i}", type=NodeType.COMP, deps=deps, duration_micros=1)


def test_a_dependency_outside_the_rank_is_refused_first_in_node_order() -> None:
    wl = Workload(ranks=[[_comp(5, []), _comp(2, [5, 9]), _comp(7, [8])]])
    with pytest.raises(SimulationError, match="rank 0 node 2: dependency 9 is not a node of this rank"):
        program_from_workload(wl, algorithm_chooser(None), 1)


def test_an_id_used_twice_is_refused() -> None:
    wl = Workload(ranks=[[_comp(1, []), _comp(1, [])]])
    with pytest.raises(SimulationError, match="node id 1 appears twice"):
        program_from_workload(wl, algorithm_chooser(None), 1)


def _p2p(i: int, t: NodeType, other: int | None, deps: list[int], cpu: bool = False) -> WorkloadNode:
    dst, src = (other, None) if t == NodeType.SEND else (None, other)
    return WorkloadNode(
        id=i, name=f"p{i}", type=t, deps=deps, comm_size=64, comm_tag=3, is_cpu_op=cpu, comm_dst=dst, comm_src=src
    )


def test_point_to_point_nodes_carry_peer_tag_size_and_resource() -> None:
    wl = Workload(
        ranks=[
            [_comp(1, []), _p2p(2, NodeType.SEND, 1, [1]), _p2p(3, NodeType.SEND, 1, [], cpu=True)],
            [_p2p(1, NodeType.RECV, 0, []), _p2p(2, NodeType.RECV, 0, [1]), _comp(4, [2])],
        ]
    )
    prog = program_from_workload(wl, algorithm_chooser(None), 2)
    assert list(prog.kind) == [K_COMP, K_SEND, K_SEND, K_RECV, K_RECV, K_COMP]
    assert list(prog.peer) == [-1, 1, 1, 0, 0, -1]
    assert list(prog.size) == [-1, 64, 64, 64, 64, -1]
    assert list(prog.tagx) == [0, 3, 3, 3, 3, 0]
    assert list(prog.dur) == [1000, 0, 0, 0, 0, 1000]
    assert list(prog.acq or []) == [1, 2, 3, 0, 0, 1]  # GPU compute, GPU comm, CPU; RECVs take none


@pytest.mark.parametrize(
    ("node", "text"),
    [
        (_p2p(2, NodeType.SEND, None, []), "rank 0 node 2: SEND without comm_dst/comm_size"),
        (_p2p(2, NodeType.RECV, 0, []), "rank 0 node 2: peer NPU 0 is not another rank"),
        (_p2p(2, NodeType.SEND, 5, []), "rank 0 node 2: peer NPU 5 is not another rank"),
    ],
)
def test_bad_point_to_point_nodes_are_refused(node: WorkloadNode, text: str) -> None:
    wl = Workload(ranks=[[_comp(1, []), node, _comp(1, [])], [_comp(1, [])]])
    with pytest.raises(SimulationError, match=text):
        program_from_workload(wl, algorithm_chooser(None), 2)


def test_the_free_sets_grouping_rule_equals_its_sorted_statement() -> None:
    """hub.sim._engine.feeder._rule_idx (one pass over the buckets) against the rule as stated: groups by
    first use of their bucket, newest first; newest first inside."""
    from hub.sim._engine.feeder import _rule_idx

    rng = np.random.default_rng(7)
    for _ in range(300):
        buckets = int(rng.integers(1, 30))
        seq = rng.choice(200, size=int(rng.integers(0, 40)), replace=False).tolist()
        first: dict[int, int] = {}
        for i, k in enumerate(seq):
            first.setdefault(k % buckets, i)
        want = sorted(range(len(seq)), key=lambda i: (-first[seq[i] % buckets], -i))
        assert _rule_idx(seq, buckets) == want
