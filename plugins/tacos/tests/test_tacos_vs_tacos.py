"""Against TACOS itself (astra-sim/tacos 1811f1f, run on this machine; issue #13's table):
same cost model (a link carries one whole chunk at a time, busy 0.5 µs + chunk / 50 GiB/s;
1 MiB per NPU), our makespan must be <= TACOS's. The expected numbers are TACOS's outputs."""

from __future__ import annotations

import pytest

from collhub_tacos import SynthesizeParams, synthesize_schedule

# topology string, chunks per NPU, TACOS's collective time (µs), TACOS's lower bound (µs)
ROWS = [
    ("torus:8x8@bw=50,lat=500", 1, 340.53, 320.5),
    ("mesh:8x8@bw=50,lat=500", 4, 678.23, 678.23),
    ("torus:4x4x4@bw=50,lat=500", 4, 231.46, 226.08),
]


@pytest.mark.parametrize("topology,chunks,theirs,bound", ROWS)
def test_beats_or_equals_tacos(topology: str, chunks: int, theirs: float, bound: float) -> None:
    syn = synthesize_schedule(
        SynthesizeParams(collective="allgather", topology=topology, chunks=chunks, model="tacos", seeds=3)
    )
    assert syn.makespan_us <= theirs + 0.005  # TACOS prints two decimals
    assert syn.bound_us == pytest.approx(bound, abs=0.01)
    assert syn.makespan_us >= syn.bound_us - 1e-6
