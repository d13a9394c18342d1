"""``hub.hierarchical`` with ``fused=true`` (issue #19: an 8192-rank all-reduce that fits).

Counts are derived by hand from the two-level ring: the intra-node rings run L-1 steps of one
message of N chunks each way (reduce-scatter, all-gather), the inter-node rings N-1 steps of one
chunk each way, with a cost COMP per reducing RECV. The verifier proves the result an all-reduce;
the real ASTRA-sim (``$COLLHUB_ASTRASIM_DIR``, tests/sim/difftest.py) runs it and gives the same time as hub.simulate.
"""

from __future__ import annotations

import numpy as np
import pytest

from hub.algorithms import hierarchical
from hub.chakra import NodeType
from hub.errors import AlgorithmError, UsageError
from hub.verify import check


@pytest.mark.parametrize(("n", "local"), [(4, 1), (4, 4), (6, 2), (12, 3), (16, 8), (64, 8)])
@pytest.mark.parametrize("inplace", [True, False])
def test_fused_allreduce_verifies(n: int, local: int, inplace: bool) -> None:
    check(hierarchical("allreduce", n, local_size=local, fused=True, inplace=inplace))


@pytest.mark.parametrize(("n", "local"), [(16, 4), (24, 8), (64, 8)])
def test_fused_counts(n: int, local: int) -> None:
    nodes = n // local
    alg = hierarchical("allreduce", n, local_size=local, fused=True)
    assert dict(alg.meta.extra) == {"local_size": local, "fused": True}
    for r, g in enumerate(alg.graphs):
        sends = np.flatnonzero(g.kind == NodeType.SEND)
        comps = np.flatnonzero(g.kind == NodeType.COMP)
        assert len(sends) == 2 * (local - 1) + 2 * (nodes - 1)
        assert len(g) == 2 * len(sends) + (local - 1) + (nodes - 1)  # SEND + RECV each, COMP per reduction
        inter = sends[(g.peer[sends] // local) != r // local]
        intra = sends[(g.peer[sends] // local) == r // local]
        assert len(inter) == 2 * (nodes - 1) and set(g.count[inter].tolist()) <= {1}
        assert set(g.count[intra].tolist()) <= {nodes}  # a whole 1/L of the data per intra message
        # local rank l's inter-node rings carry the chunks of its group l*N .. l*N+N-1
        l_off = g.src_off[inter]
        assert set((l_off // nodes).tolist()) == {r % local}
        assert len(comps) == (local - 1) + (nodes - 1)


def test_fused_node_count_is_linear_in_nodes_plus_local() -> None:
    """5(N-1) + 5(L-1) nodes per rank: 8192 ranks of 8 would have 5150 each (42M in all), not 5n."""
    alg = hierarchical("allreduce", 512, local_size=8, fused=True)
    assert alg.node_count() == 512 * (5 * 63 + 5 * 7)


@pytest.mark.parametrize("coll", ["allgather", "reducescatter", "alltoall"])
def test_fused_is_for_allreduce_only(coll: str) -> None:
    with pytest.raises(AlgorithmError, match="fused applies to allreduce"):
        hierarchical(coll, 16, local_size=4, fused=True)


def test_fused_over_max_ranks_is_refused() -> None:
    with pytest.raises(UsageError, match="max_ranks"):
        hierarchical("allreduce", 2048, fused=True)


@pytest.mark.parametrize("mode", ["unaware", "aware"])
def test_fused_simulates_as_real_astrasim(mode: str) -> None:
    from hub.sim import simulate

    from ..sim.difftest import oracle_time, oracle_unavailable

    why = oracle_unavailable()
    if why:
        pytest.skip(why)
    alg = hierarchical("allreduce", 16, local_size=4, fused=True).bind(1 << 20)
    network = "ring:16" if mode == "aware" else "ring:4,ring:4"
    assert simulate(alg, network, mode=mode).time_ns == oracle_time(alg, network, mode)
