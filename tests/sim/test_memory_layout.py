"""What keeps a simulation's peak low at thousands of ranks (issue #19) changes no result.

The layout renumbers successors a block of nodes at a time and ``simulate`` drops the program's
own dependency columns once the layout has its copy. Checked: a ring all-reduce with a reduction
COMP per step (``hub.ring``) still takes the closed-form time of astra-sim.md §7.4 plus one ns
per COMP on the chain, whatever the block size (down to blocks smaller than one rank), and a
successor list split across blocks keeps its order (the real ASTRA-sim oracle tests cover the
rest, tests/sim/test_oracle.py).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from hub.algorithms import ring
from hub.sim import _layout, simulate
from hub.sim._program import program_from_algorithm

N, SIZE = 16, 1 << 20
BP = 50 * 2**30 / 1e9  # default links: 50 GiB/s, 500 ns


def _expected_ns() -> int:
    # 2(n-1) messages of S/n on the critical chain, each floor(L + (S/n)/B'); the n-1 reducing
    # COMPs on it cost 1 ns each (unset duration)
    return 2 * (N - 1) * math.floor(500 + (SIZE // N) / BP) + (N - 1)


@pytest.mark.parametrize("block", [1 << 20, 1000, 7, 1])
def test_block_size_changes_nothing(block: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_layout, "_BLOCK", block)
    alg = ring("allreduce", N).bind(SIZE)
    res = simulate(alg, f"ring:{N}", mode="unaware")
    assert res.time_ns == _expected_ns()
    assert res._program.succ_ptr is None  # released after the layout: the walk carries one copy


def test_blocked_successors_equal_one_block(monkeypatch: pytest.MonkeyPatch) -> None:
    prog = program_from_algorithm(ring("allreduce", N).bind(SIZE))
    whole = _layout.layout(prog)
    monkeypatch.setattr(_layout, "_BLOCK", 5)
    split = _layout.layout(prog)
    assert np.array_equal(whole.succ_ptr, split.succ_ptr)
    assert np.array_equal(whole.succ_idx, split.succ_idx)
    assert np.array_equal(whole.dur, split.dur) and split.dur.dtype == np.int64
