"""The link-load bound (hub/sim/_bounds/linkload.py): a ``channels: 2`` ring that sends both channels
the same way round on ``ring:8`` puts 2(p-1)/p x S bytes on each link of one direction.

Worked by hand, not by the code under test: all-reduce of S = 64 MiB on 8 ranks, each channel
moves S/2 in 2(p-1) steps of S/(2p) per rank, so each clockwise link carries 2 x 2(p-1) x S/(2p)
= 2(p-1)S/p = 117440512 B. At 50 GiB/s (53.687 B/ns) that is 2187500 ns, twice the cut bound
2(p-1)S/(p B_in) = 1093750 ns, which counts both link directions (B_in = 2 links). The
congestion-unaware model charges no queueing and reports ~1.1 ms, below what the links allow.
Counter-rotating channels (``bidirectional``) use both directions: their link bound equals the
cut bound and nothing is flagged.
"""

from __future__ import annotations

import pytest

from hub.algorithms import make
from hub.sim import simulate

S = 64 << 20
B = 50 * 2**30 / 1e9
LINK_BOUND = 2 * 7 * S / 8 / B
CUT_BOUND = 2 * 7 * S / (8 * 2 * B)
# each clockwise link carries 2 channels x 14 steps = 28 messages; the models truncate each by < 1 ns
MSGS = 28


def test_one_direction_two_channels_is_flagged_in_the_unaware_model() -> None:
    alg = make("ring", collective="allreduce", ranks=8, channels=2)
    res = simulate(alg, "ring:8", mode="unaware", size=S)
    assert res.bound_ns == pytest.approx(CUT_BOUND)
    assert res.link_bound_ns == pytest.approx(LINK_BOUND - MSGS)
    assert res.time_ns < res.link_bound_ns and res.time_ns >= res.bound_ns  # the cut bound misses it
    (warning,) = res.warnings
    assert "below the link-load lower bound" in warning and "mode 'aware'" in warning
    m = res.metrics()
    assert m["time_over_link_bound"] == pytest.approx(res.time_ns / (LINK_BOUND - MSGS))
    aware = simulate(alg, "ring:8", mode="aware", size=S)
    assert aware.time_ns >= LINK_BOUND - MSGS and aware.warnings == []


def test_counter_rotating_channels_use_both_directions() -> None:
    alg = make("ring", collective="allreduce", ranks=8, channels=2, bidirectional=True)
    res = simulate(alg, "ring:8", mode="unaware", size=S)
    assert res.link_bound_ns == pytest.approx(CUT_BOUND - MSGS / 2)
    assert res.warnings == []


def test_tiny_messages_have_no_link_bound() -> None:
    res = simulate(make("ring", collective="allreduce", ranks=8), "ring:8", mode="unaware", size=64)
    assert res.link_bound_ns is None  # 64 B messages: the truncation allowance exceeds the bytes' time


@pytest.mark.parametrize(
    ("name", "params", "ranks"),
    [
        ("ring", {"channels": 2}, 8),
        ("ring", {"bidirectional": True}, 16),
        ("halving_doubling", {}, 16),
        ("double_binary_tree", {}, 12),
        ("direct", {}, 6),
    ],
)
def test_native_pair_count_equals_numpy(name: str, params: dict, ranks: int) -> None:
    """The one-pass C count of bytes and messages per (src, dst) pair (``_sim.pair_loads``) gives the
    numpy path's pairs, sums (bit for bit) and link loads."""
    import numpy as np

    from hub.sim._bounds.linkload import _pair_loads, _pair_loads_np, _route_loads
    from hub.sim._engine.program import program_from_algorithm
    from hub.topology import parse_topology

    alg = make(name, collective="allreduce", ranks=ranks, **params).bind(3 * S + 7)
    prog = program_from_algorithm(alg)
    native, ref = _pair_loads(prog), _pair_loads_np(prog)
    assert native is not None and ref is not None
    for a, b in zip(native, ref, strict=True):
        assert a.tolist() == b.tolist()
    graph = parse_topology(f"ring:{ranks}").to_link_graph()
    got = _route_loads(prog, graph, len(graph.links))
    want = _route_loads(prog, graph, len(graph.links), native=False)
    assert got is not None and want is not None
    assert all(np.array_equal(x, y) for x, y in zip(got, want, strict=True))
