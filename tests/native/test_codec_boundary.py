"""The boundary of ``hub._native._codec``: bad types, wrong lengths, None, huge values and random
bytes give a clean exception (or the codec's "not mine, ask the general decoder" answer), never a
crash. The codec's results on real traces are tested against the general decoder in tests/chakra."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hub._native import _codec

from ._hostile import sweep

STUB = Path(__file__).resolve().parents[2] / "hub" / "_native" / "_codec.pyi"
I64 = np.int64


def test_hostile_arguments_never_crash() -> None:
    # configure() replaces the process's attribute tables: it runs in the sweep's child only
    assert "calls" in sweep("hub._native._codec", STUB)


@pytest.mark.parametrize(
    "bases, sizes",
    [([0], [2**62]), ([2**62], [2**62]), ([-1], [1]), ([0], [-1]), ([9], [0]), ([0, 1], [1])],
)
def test_a_file_span_outside_the_data_is_refused(bases: list[int], sizes: list[int]) -> None:
    with pytest.raises(ValueError, match="frame_files"):
        _codec.frame_files(b"\x00" * 8, np.array(bases, I64), np.array(sizes, I64))


@pytest.mark.parametrize("starts, ends", [([0], [99]), ([-1], [2]), ([3], [2]), ([0], [2**62])])
def test_a_node_span_outside_the_data_is_refused(starts: list[int], ends: list[int]) -> None:
    data = b"\x08\x01\x18\x05\x00\x00\x00\x00"
    with pytest.raises(ValueError, match="span"):
        _codec.decode_metadata(data, np.array(starts, I64), np.array(ends, I64))
    # node_types answers -1 (the general decoder decides) instead of raising
    assert _codec.node_types(data, np.array(starts, I64), np.array(ends, I64)) == -1


def test_starts_and_ends_must_pair() -> None:
    with pytest.raises(ValueError):
        _codec.node_types(b"", np.zeros(2, I64), np.zeros(1, I64))
    with pytest.raises(ValueError):
        _codec.decode_metadata(b"", np.zeros(2, I64), np.zeros(1, I64))


def test_buffers_of_the_wrong_item_size_are_named() -> None:
    with pytest.raises(TypeError, match="starts"):
        _codec.node_types(b"", np.zeros(1, np.int32), np.zeros(1, I64))
    with pytest.raises(TypeError):
        _codec.frame_files(None, np.zeros(1, I64), np.zeros(1, I64))


@pytest.mark.parametrize("seed", range(8))
def test_random_bytes_are_framed_or_refused(seed: int) -> None:
    data = np.random.default_rng(seed).integers(0, 256, 4096, dtype=np.uint8).tobytes()
    bases, sizes = np.array([0, 1000], I64), np.array([1000, 3096], I64)
    starts, ends, counts, bad = _codec.frame_files(data, bases, sizes)
    if starts is not None and ends is not None:
        s, e = np.frombuffer(starts, I64), np.frombuffer(ends, I64)
        assert ((0 <= s) & (s <= e) & (e <= len(data))).all()
        # every span it framed is one the other passes may read
        assert _codec.node_types(data, s, e) >= -1
    # framed (three tables) or declined (three Nones: the general decoder words the damage)
    assert isinstance(bad, int) and (starts is None) == (ends is None) == (counts is None)
    for ranks in (1, 2):  # the workload scan reads it as one file: a table, or None (not its case)
        scanned = _codec.scan_workload_file(data, ranks)
        assert scanned is None or len(scanned) == 8


@pytest.mark.parametrize("ranks", [-1, 0, 2**62])
def test_a_rank_count_out_of_range_is_refused_or_declined(ranks: int) -> None:
    try:
        out = _codec.scan_workload_file(b"\x00" * 16, ranks)
    except (ValueError, OverflowError, MemoryError):
        return
    assert out is None
