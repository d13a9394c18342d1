"""The boundary of ``hub._native._sim`` under hostile arguments: bad types, wrong lengths, None and
huge values give a clean exception, never a crash. (tests/native/test_sim.py holds the argument
contract column by column and the table builders on hand-written tables.)"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hub._native import _sim, load_sim

from ._hostile import sweep

STUB = Path(__file__).resolve().parents[2] / "hub" / "_native" / "_sim.pyi"


def test_hostile_arguments_never_crash() -> None:
    assert "calls" in sweep("hub._native._sim", STUB)


def test_the_loader_gives_the_module() -> None:
    assert load_sim() is _sim


@pytest.mark.parametrize("n", [2**62, 2**70, -(2**62)])
def test_huge_node_counts_are_refused(n: int) -> None:
    z = np.zeros(1, np.int32)
    with pytest.raises((ValueError, OverflowError)):
        _sim.successors(z, np.zeros(n if 0 <= n < 8 else 1, np.int32), np.zeros(2, np.int64), z)
    with pytest.raises((ValueError, OverflowError)):
        _sim.pair_loads(z, z, z, np.zeros(1, np.int64), n, 5, np.zeros(1, np.float64), np.zeros(1, np.int64))


def test_a_negative_count_read_from_a_table_matches_no_buffer() -> None:
    # run sizes succ_idx by succ_ptr's last entry: a damaged (negative) one is refused, not "any length"
    from .test_sim import _args

    args, _ = _args(1, succ_ptr=np.array([0, 0, -1], np.int64), succ_idx=np.zeros(0, np.int32))
    with pytest.raises(ValueError, match="succ_idx"):
        _sim.run(*args)
