"""The boundary of ``hub._native._verify``: bad types, wrong lengths, None and huge values give a
clean exception (the argument named where it is a column), never a crash."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hub._native import _verify, load_verify

from ._hostile import sweep

STUB = Path(__file__).resolve().parents[2] / "hub" / "_native" / "_verify.pyi"


def test_hostile_arguments_never_crash() -> None:
    assert "calls" in sweep("hub._native._verify", STUB)


def test_the_loader_gives_the_module() -> None:
    assert load_verify() is _verify


def test_a_column_of_the_wrong_item_size_is_named() -> None:
    with pytest.raises(ValueError, match="owner"):
        _verify.csr(np.zeros(2, np.int64), np.zeros(2, np.int32), 2, np.zeros(3, np.int64), np.zeros(2, np.int32))


def test_a_column_of_the_wrong_length_is_named() -> None:
    owner = np.array([0, 1], np.int32)
    with pytest.raises(ValueError, match="ptr"):
        _verify.csr(owner, owner.copy(), 2, np.zeros(2, np.int64), np.zeros(2, np.int32))


def test_a_read_only_output_is_refused() -> None:
    owner = np.array([0, 1], np.int32)
    ptr = np.zeros(3, np.int64)
    ptr.flags.writeable = False
    with pytest.raises((ValueError, TypeError, BufferError)):
        _verify.csr(owner, owner.copy(), 2, ptr, np.zeros(2, np.int32))


def test_a_good_call_still_works() -> None:
    owner = np.array([1, 0, 1], np.int32)
    other = np.array([7, 8, 9], np.int32)
    ptr, out = np.zeros(3, np.int64), np.zeros(3, np.int32)
    _verify.csr(owner, other, 2, ptr, out)
    assert ptr.tolist() == [0, 1, 3] and out.tolist() == [8, 7, 9]


@pytest.mark.parametrize("n", [-1, 2**62, 2**70])
def test_a_node_count_out_of_range_is_refused(n: int) -> None:
    owner = np.array([0], np.int32)
    with pytest.raises((ValueError, OverflowError, MemoryError)):
        _verify.csr(owner, owner.copy(), n, np.zeros(2, np.int64), np.zeros(1, np.int32))


def test_no_nodes_and_no_edges_below_zero() -> None:
    empty32, empty64 = np.zeros(0, np.int32), np.zeros(0, np.int64)
    with pytest.raises(ValueError, match="n: "):
        _verify.csr(empty32, empty32, -1, empty64, empty32)


def test_an_owner_outside_the_nodes_is_refused() -> None:
    owner = np.array([0, 5], np.int32)
    with pytest.raises(ValueError, match="owner out of range"):
        _verify.csr(owner, owner.copy(), 2, np.zeros(3, np.int64), np.zeros(2, np.int32))
