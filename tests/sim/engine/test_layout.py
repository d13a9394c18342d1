"""Engine internals that the fast walk relies on, checked against hand-computed timelines.

The engine renumbers nodes position-major, keys messages by a dense channel id and keeps its
per-node columns in its own order (hub/sim/_engine/layout.py); these tests pin down the cases where that
could go wrong: ranks of unequal length, per-node times mapped back to program order, zero-delay
messages (equal-time events), and message keys too wide to pack into one int64.
Default links: bw 50 GiB/s -> B' = 50 * 2^30 / 1e9 B/ns, latency 500 ns.
"""

from __future__ import annotations

import math
import re

import pytest

from hub.chakra import AlgorithmMeta, Buffer, Collective, RankGraphBuilder, build_algorithm
from hub.sim import simulate

MODES = ("unaware", "aware")
BP = 50 * 2**30 / 1e9
D = math.floor(500 + 131072 / BP)  # one 128-KiB message over one hop: 2941 ns


def _alg(builders: list[RankGraphBuilder]):  # noqa: ANN202
    return build_algorithm(AlgorithmMeta(Collective.CUSTOM, len(builders), 1, 1), builders)


@pytest.mark.parametrize("mode", MODES)
def test_unequal_ranks_times_in_program_order(mode):
    # rank 0: SEND->1, COMP 2 us, SEND->2; rank 1: RECV<-0; rank 2: RECV<-0, COMP 3 us.
    # On ring:3 both peers of rank 0 are one hop away (0->2 goes counter-clockwise).
    b0, b1, b2 = RankGraphBuilder(0), RankGraphBuilder(1), RankGraphBuilder(2)
    s = b0.send(1, src=(Buffer.INPUT, 0), size=131072)
    c = b0.comp(deps=[s], duration_micros=2)
    b0.send(2, src=(Buffer.INPUT, 0), size=131072, deps=[c])
    b1.recv(0, dst=(Buffer.OUTPUT, 0), size=131072)
    r = b2.recv(0, dst=(Buffer.OUTPUT, 0), size=131072)
    b2.comp(deps=[r], duration_micros=3)
    res = simulate(_alg([b0, b1, b2]), "ring:3", mode=mode)
    assert D == 2941
    assert res.time_ns == 2 * D + 2000 + 3000
    assert res.rank_finish_ns == [2 * D + 2000, D, 2 * D + 5000]
    st = res._engine
    # program order: rank 0 nodes 0..2, rank 1 node 0, rank 2 nodes 0..1
    assert list(st.start) == [0, D, D + 2000, 0, 0, 2 * D + 2000]
    assert list(st.fin) == [D, D + 2000, 2 * D + 2000, D, 2 * D + 2000, 2 * D + 5000]
    assert list(st.cause) == [-1, 0, 1, 0, 2, 4]  # a RECV's cause is the SEND whose data arrived
    assert [(e["rank"], e["node"]) for e in res.critical_path] == [(0, 0), (0, 1), (0, 2), (2, 0), (2, 1)]


@pytest.mark.parametrize("mode", MODES)
def test_zero_delay_message_runs_at_the_same_time(mode):
    # latency 0 and 0 bytes: the SEND's arrival is scheduled for "now" and must still run
    b0, b1 = RankGraphBuilder(0), RankGraphBuilder(1)
    s = b0.send(1, src=(Buffer.INPUT, 0), size=0)
    b0.comp(deps=[s], duration_micros=1)
    r = b1.recv(0, dst=(Buffer.OUTPUT, 0), size=0)
    b1.send(0, src=(Buffer.INPUT, 0), size=0, deps=[r])
    b0.recv(1, dst=(Buffer.OUTPUT, 0), size=0)
    alg = _alg([b0, b1])
    # ASTRA-sim asserts on events at t = 0 (EventQueue::proceed): hub.simulate gives its time with
    # that reason as a warning (the drop-in and astrasim.bundle refuse: tests/sim/astrasim/test_dropin.py)
    res = simulate(alg, "ring:2@lat=0", mode=mode)
    assert res.time_ns == 1000 and res.astrasim_aborts is not None
    assert any(re.search(r"ASTRA-sim aborts: .* at t = 0", w) for w in res.warnings), res.warnings
    # the engine itself runs the zero-delay arrivals in the same instant
    from hub.sim._engine.loop import run_engine
    from hub.sim._engine.network import network_model
    from hub.sim._engine.program import program_from_algorithm
    from hub.topology import load_topology

    delay, net = network_model(load_topology("ring:2@lat=0"), mode)
    st = run_engine(program_from_algorithm(alg), delay=delay, net=net)
    assert st.time_ns == 1000 and st.t0_events > 0
    assert st.rank_finish == [1000, 0]


@pytest.mark.parametrize("mode", MODES)
def test_wide_message_keys_still_match_exactly(mode):
    # tags and sizes spanning ~2^31 and ~2^33 cannot be packed into one int64 key with the
    # NPU pair: the channel ids are factorized instead. RECVs are posted in the other order.
    big = 1 << 33
    b0, b1 = RankGraphBuilder(0), RankGraphBuilder(1)
    b0.send(1, src=(Buffer.INPUT, 0), size=big, tag=(1 << 31) - 1)
    b0.send(1, src=(Buffer.INPUT, 0), size=1, tag=0)
    b1.recv(0, dst=(Buffer.OUTPUT, 0), size=1, tag=0)
    b1.recv(0, dst=(Buffer.OUTPUT, 0), size=big, tag=(1 << 31) - 1)
    res = simulate(_alg([b0, b1]), "ring:2", mode=mode)
    slow = math.floor(500 + big / BP)  # = 500 + 8e9 / 50 exactly
    assert slow == 160_000_500
    if mode == "unaware":
        assert list(res._engine.fin) == [slow, 500, 500, slow]
        assert res.time_ns == slow
    else:  # one link 0->1, FIFO: the big message holds it for floor(big/B') = 1.6e8 ns, the small one
        # waits, then takes floor(500 + 1/B') = 500 ns: both arrive at 160_000_500
        assert list(res._engine.fin) == [slow, slow, slow, slow]
        assert res.time_ns == slow


def test_closed_form_renumbering_equals_the_sorted_one(monkeypatch):
    """Equal-length ranks get (perm, inv) in closed form; they equal the sorted permutation and
    its scattered inverse."""
    import numpy as np

    from hub.sim._engine import layout as _layout

    monkeypatch.setattr(_layout, "BLOCK", 3)
    for nranks, length in ((1, 1), (1, 5), (4, 1), (3, 7), (8, 4)):
        counts = np.full(nranks, length, dtype=np.int64)
        rank = np.repeat(np.arange(nranks, dtype=np.int32), length)
        perm, inv = _layout._renumbering(rank, counts)
        want = _layout._position_major(rank, counts)
        assert perm.dtype == inv.dtype == np.int32
        assert perm.tolist() == want.tolist()
        assert inv[perm].tolist() == list(range(rank.size))


def test_flattening_bound_on_the_fly_equals_flattening_the_bound_algorithm():
    """program_from_algorithm(per_chunk=...) (sizes bound rank by rank, ranks sharing arrays
    computed once) against Algorithm.bind's copy, node for node; messages and bytes alike."""
    import numpy as np

    from hub.algorithms import make
    from hub.chakra import NodeType, chunk_bytes
    from hub.sim._engine.program import program_from_algorithm

    for name, coll, ranks in (("ring", "allreduce", 6), ("double_binary_tree", "allreduce", 5)):
        alg = make(name, coll, ranks)
        nbytes = 3 * (1 << 20) + 7  # not a multiple of the chunks: the rounding up shows
        fly = program_from_algorithm(alg, per_chunk=chunk_bytes(nbytes, alg.meta.reference_chunks))
        bound = program_from_algorithm(alg.bind(nbytes))
        assert np.array_equal(np.asarray(fly.size), np.asarray(bound.size)), name
        assert (fly.messages, fly.bytes) == (bound.messages, bound.bytes), name
        kinds = np.asarray(bound.kind)
        assert fly.messages == int(np.count_nonzero(kinds == int(NodeType.SEND))) and fly.bytes > 0, name


def test_comp_costs_land_on_the_comps_of_every_rank():
    """The COMP costs written rank by rank equal comp_ns over the whole concatenated columns."""
    import numpy as np

    from hub.algorithms import make
    from hub.chakra import NodeType
    from hub.sim._engine.program import comp_ns, program_from_algorithm

    alg = make("ring", "allreduce", 5).bind(5 << 20)
    for red in (None, 7.5):
        prog = program_from_algorithm(alg, red)
        kind = np.concatenate([g.kind for g in alg.graphs])
        raw = np.concatenate([g.duration for g in alg.graphs])
        comp = kind == int(NodeType.COMP)
        assert comp.any()
        want = np.where(comp, comp_ns(raw, np.asarray(prog.size), red), 0)
        assert np.array_equal(np.asarray(prog.dur), want), red
