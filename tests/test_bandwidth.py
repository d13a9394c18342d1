"""nccl-tests' bandwidth figures, one definition for hub.simulate, astrasim and replay (hub/_bandwidth.py).

Expected factors are nccl-tests' own, read from its source at a0b82b2 (v2.19.6): the ``factor``
in each ``src/<collective>.cu``'s ``*GetBw`` (all_reduce.cu: ``2*(nranks-1)/nranks``;
all_gather.cu, reduce_scatter.cu, alltoall.cu, gather.cu, scatter.cu: ``(nranks-1)/nranks``;
broadcast.cu: ``1``; reduce.cu: ``busBw = baseBw``), and doc/PERFORMANCE.md's summary.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from hub.chakra import Collective
from hub.sim import algbw_GBps, busbw_factor

#: collective -> nccl-tests' factor at n ranks, as the fraction its source computes
NCCL_TESTS = {
    Collective.ALLREDUCE: lambda n: Fraction(2 * (n - 1), n),
    Collective.ALLGATHER: lambda n: Fraction(n - 1, n),
    Collective.REDUCESCATTER: lambda n: Fraction(n - 1, n),
    Collective.ALLTOALL: lambda n: Fraction(n - 1, n),
    Collective.GATHER: lambda n: Fraction(n - 1, n),
    Collective.SCATTER: lambda n: Fraction(n - 1, n),
    Collective.BROADCAST: lambda n: Fraction(1),
    Collective.REDUCE: lambda n: Fraction(1),
}


def test_every_collective_but_custom_has_nccl_tests_factor() -> None:
    assert set(NCCL_TESTS) == set(Collective) - {Collective.CUSTOM}


@pytest.mark.parametrize("coll", sorted(NCCL_TESTS))
@pytest.mark.parametrize("n", [1, 2, 3, 8, 1024])
def test_factors_are_nccl_tests(coll: Collective, n: int) -> None:
    assert busbw_factor(coll, n) == pytest.approx(float(NCCL_TESTS[coll](n)), rel=1e-15)


@pytest.mark.parametrize(
    ("spelling", "coll"),
    [
        ("all_reduce", "allreduce"),
        ("AllGather", "allgather"),
        ("reduce-scatter", "reducescatter"),
        ("Gather", "gather"),
    ],
)
def test_any_spelling_of_a_collective(spelling: str, coll: str) -> None:
    assert busbw_factor(spelling, 4) == busbw_factor(Collective(coll), 4)


def test_no_factor_for_custom_unknown_or_no_ranks() -> None:
    assert busbw_factor(Collective.CUSTOM, 8) is None
    assert busbw_factor("sendrecv", 8) is None
    assert busbw_factor(None, 8) is None
    assert busbw_factor(Collective.ALLREDUCE, 0) is None


def test_algbw_in_either_time_unit() -> None:
    # 1 GB in 1 s (1e9 ns) is 1 GB/s whichever unit it is timed in
    assert algbw_GBps(10**9, ns=1e9) == 1.0
    assert algbw_GBps(10**9, seconds=1.0) == 1.0
    assert algbw_GBps(3 * 2**20, ns=1500.0) == 3 * 2**20 / 1500.0
    with pytest.raises(TypeError):
        algbw_GBps(1, ns=1.0, seconds=1.0)
    with pytest.raises(TypeError):
        algbw_GBps(1)


def test_the_plugins_use_the_one_definition() -> None:
    import collhub_astrasim
    import collhub_replay

    assert not hasattr(collhub_astrasim, "bus_factor") and not hasattr(collhub_replay, "bus_factor")
