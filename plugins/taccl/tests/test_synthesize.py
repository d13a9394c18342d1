"""Synthesis on collhub networks: every result is verified, simulates as modelled, is seeded."""

from __future__ import annotations

import numpy as np
import pytest

from collhub_taccl import SynthesizeParams, synthesize
from hub.sim import simulate
from hub.topology import bytes_per_ns
from hub.verify import verify


def _extra(alg) -> dict:
    return dict(alg.meta.extra)


@pytest.mark.parametrize("network", ["ring:4", "dgx1", "mesh:2x3", "fattree:2x2", "rail:2x4"])
@pytest.mark.parametrize("collective", ["allgather", "alltoall", "reducescatter", "allreduce"])
def test_small_cases_verify(network: str, collective: str) -> None:
    alg = synthesize(SynthesizeParams(collective=collective, network=network, time_limit=10), progress=False)
    assert alg.collective.value == collective
    assert verify(alg).ok
    ex = _extra(alg)
    assert ex["taccl.makespan_ns"] >= ex["taccl.lower_bound_ns"] > 0
    # the model's uncontended costs follow hub.simulate's aware model, so a simulation never beats the bound
    res = simulate(alg, network, size=ex["taccl.size"], mode="aware")
    assert res.time_ns >= ex["taccl.lower_bound_ns"] * 0.999


def test_ring8_allgather_is_optimal_and_simulates_as_modelled() -> None:
    alg = synthesize(SynthesizeParams(collective="allgather", network="ring:8", size="1MiB"), progress=False)
    ex = _extra(alg)
    assert ex["taccl.milp_status"] == "Optimal" and ex["taccl.milp_gap"] == 0
    # bidirectional ring of 8: the farthest chunk is 4 hops away; one hop of a 1 MiB/8 chunk
    # costs floor(500 ns + 131072 B / 50 GB/s) in ASTRA-sim's aware model
    hop = int(500 + (1 << 20) / 8 / bytes_per_ns(50))
    assert ex["taccl.makespan_ns"] == 4 * hop
    assert simulate(alg, "ring:8", size="1MiB", mode="aware").time_ns == 4 * hop


def test_beats_the_one_way_ring_on_dgx1() -> None:
    from hub.algorithms import ring

    alg = synthesize(SynthesizeParams(collective="allgather", network="dgx1", size="8MiB"), progress=False)
    ours = simulate(alg, "dgx1", size="8MiB", mode="aware").time_ns
    theirs = simulate(ring("allgather", 8), "dgx1", size="8MiB", mode="aware").time_ns
    assert ours < theirs / 2  # six NVLinks per GPU against one ring direction


def test_chunks_per_rank_and_determinism() -> None:
    p = SynthesizeParams(collective="allgather", network="torus:3x3", chunks=2, seed=7, time_limit=20)
    a, b = synthesize(p, progress=False), synthesize(p, progress=False)
    assert a.meta.out_chunks == 18 and verify(a).ok
    for ga, gb in zip(a.graphs, b.graphs, strict=False):
        for col in ("kind", "peer", "tag", "src_off", "dst_off"):
            assert np.array_equal(getattr(ga, col), getattr(gb, col))


def test_time_limit_returns_a_verified_incumbent(capsys: pytest.CaptureFixture[str]) -> None:
    alg = synthesize(
        # 0.05 s: far below what HiGHS needs for this routing MILP on any machine (0.5 s was met
        # now and then on a quiet one, and the test then saw no time limit)
        SynthesizeParams(collective="allgather", network="hypercube:6", size="64MiB", time_limit=0.05),
        progress=False,
    )
    ex = _extra(alg)
    assert verify(alg).ok
    assert ex["taccl.time_limited"] is True
    assert "time limit" in capsys.readouterr().err


def test_stage3_variants_agree_on_correctness() -> None:
    pytest.importorskip("ortools.sat.python.cp_model", exc_type=ImportError)
    base = dict(collective="allgather", network="torus:4x4", size="16MiB", time_limit=20)
    fixed = synthesize(SynthesizeParams(**base, stage3="fixed-order"), progress=False)
    cp = synthesize(SynthesizeParams(**base, stage3="cpsat"), progress=False)
    assert verify(fixed).ok and verify(cp).ok
    # CP-SAT starts from the fixed-order schedule of the same routes and keeps it unless it finds better
    assert _extra(cp)["taccl.stage3_makespan"] <= _extra(cp)["taccl.stage2_makespan"]
    assert _extra(cp)["taccl.makespan_ns"] <= _extra(fixed)["taccl.makespan_ns"]
    assert _extra(cp)["taccl.makespan_ns"] == simulate(cp, "torus:4x4", size="16MiB", mode="aware").time_ns


def test_dgx1_8mib_allgather_beats_sccl_three_chunks() -> None:
    """Issue #29: on DGX-1 the 8 MiB all-gather is no slower than SCCL's 3-chunk algorithm
    (28,040 ns, hub.simulate aware). 12 chunks per rank; the link order that simulates faster."""
    size = 8 << 20
    alg = synthesize(SynthesizeParams(collective="allgather", network="dgx1", size=size, chunks=12, time_limit=20))
    assert verify(alg).ok
    t = simulate(alg, "dgx1", size=size, mode="aware").time_ns
    assert t <= 28_040
    e = _extra(alg)
    assert e["taccl.link_order"] in ("queued", "data")
    assert t == min(e["taccl.queued_aware_ns"], e["taccl.data_aware_ns"])
    # each order on its own is what auto compared
    for order in ("queued", "data"):
        one = synthesize(
            SynthesizeParams(
                collective="allgather", network="dgx1", size=size, chunks=12, time_limit=20, link_order=order
            )
        )
        assert _extra(one)["taccl.link_order"] == order
        assert simulate(one, "dgx1", size=size, mode="aware").time_ns == e[f"taccl.{order}_aware_ns"]
