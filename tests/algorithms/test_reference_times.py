"""Built-in algorithms reproduce ASTRA-sim's measured reference times (astra-sim.md §9).

The expected numbers were measured with ASTRA-sim itself (8 NPUs, 50 GiB/s, 500 ns, Ring), so
they check the algorithms' dependency structure independently of this code. Runs through the
built-in simulator (``hub.sim``).
"""

from __future__ import annotations

import pytest

from hub.algorithms import direct, ring
from hub.sim import simulate


@pytest.mark.parametrize("mode", ["unaware", "aware"])
def test_pipelined_ring_allreduce_matches_astrasim(mode: str) -> None:
    # 14 x 2941 ns (+ 7 COMPs of 1 ns on the critical path when present)
    assert simulate(ring("allreduce", 8), "ring:8", size=1 << 20, mode=mode).time_ns == 41181
    assert simulate(ring("allreduce", 8, reduction_comp=False), "ring:8", size=1 << 20, mode=mode).time_ns == 41174


@pytest.mark.parametrize(
    ("topology", "mode", "expected"),
    [
        ("ring:8", "unaware", 4441),
        ("ring:8", "aware", 24910),  # 24910: measured on these very ETs
        ("switch:8", "unaware", 3441),
        ("switch:8", "aware", 20528),
        ("fc:8", "unaware", 2941),
        ("fc:8", "aware", 2941),
    ],
)
def test_direct_alltoall_matches_astrasim_custom_direct(topology: str, mode: str, expected: int) -> None:
    # "custom direct": every rank sends 131072 B to each of the 7 others at t = 0. The aware Ring
    # value depends on the ETs' node order (astra-sim.md §9 caveat): 24910 is what the real
    # binary gives for the files hub.direct writes (tests/sim/test_oracle.py runs it).
    assert simulate(direct("alltoall", 8), topology, size=1 << 20, mode=mode).time_ns == expected
