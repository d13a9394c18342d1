"""A failed write leaves nothing behind: no temporary files, no partial set of rank files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hub.chakra import _writer, write_algorithm
from hub.errors import OutputError, UsageError

from .conftest import ring_allreduce


def test_failure_in_rename_midway_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_replace = os.replace
    calls = []

    def flaky(src, dst):
        calls.append(dst)
        if len(calls) == 3:  # two rank files are already in place
            raise OSError(28, "No space left on device", str(dst))
        return real_replace(src, dst)

    monkeypatch.setattr(_writer.os, "replace", flaky)
    with pytest.raises(OutputError, match="No space left on device"):
        write_algorithm(ring_allreduce(4).bind(64), tmp_path / "ring")
    assert len(calls) == 3
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("threads", [1, 2])
def test_failure_while_encoding_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, threads: int) -> None:
    calls = []
    real = _writer.encode_rank_into

    def boom(g, rank, out, **kwargs):
        calls.append(rank)
        if len(calls) == 2:
            raise RuntimeError("simulated crash")
        return real(g, rank, out, **kwargs)

    monkeypatch.setattr(_writer, "_cpus", lambda: threads)
    monkeypatch.setattr(_writer, "BATCH_NODES", 10)  # a second thread even for a small set
    monkeypatch.setattr(_writer, "encode_rank_into", boom)
    with pytest.raises(RuntimeError):
        write_algorithm(ring_allreduce(8).bind(64), tmp_path / "ring")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("threads", [1, 2])
def test_failure_while_writing_keeps_old_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, threads: int) -> None:
    old = write_algorithm(ring_allreduce(8).bind(64), tmp_path / "ring")
    before = {p: p.read_bytes() for p in old}
    real_writev = os.writev
    written = []

    def failing_writev(fd, buffers):
        written.append(fd)
        if len(written) == 3:
            raise OSError(5, "Input/output error")
        return real_writev(fd, buffers)

    monkeypatch.setattr(_writer, "_cpus", lambda: threads)
    monkeypatch.setattr(_writer, "BATCH_NODES", 10)
    monkeypatch.setattr(_writer.os, "writev", failing_writev)
    with pytest.raises(OutputError, match="Input/output error"):
        write_algorithm(ring_allreduce(8).bind(128), tmp_path / "ring")
    assert sorted(tmp_path.iterdir()) == sorted(before)
    assert {p: p.read_bytes() for p in old} == before


def test_missing_directories_are_created(tmp_path: Path) -> None:
    paths = write_algorithm(ring_allreduce(2).bind(64), tmp_path / "no" / "such" / "ring")
    assert [p.name for p in paths] == ["ring.0.et", "ring.1.et"]


def test_parent_that_is_a_file_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(UsageError, match="cannot write"):
        write_algorithm(ring_allreduce(2).bind(64), tmp_path / "file" / "ring")
    assert (tmp_path / "file").read_text() == "x"


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_unwritable_directory(tmp_path: Path) -> None:
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o500)
    try:
        with pytest.raises(UsageError):
            write_algorithm(ring_allreduce(2).bind(64), d / "ring")
        assert list(d.iterdir()) == []
    finally:
        d.chmod(0o700)


@pytest.mark.parametrize("threads", [1, 2])
def test_every_file_holds_its_rank_encoded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, threads: int) -> None:
    """Threads and reused buffers change nothing on disk: each file is the rank's own bytes."""
    from hub.chakra._encode import encode_rank

    monkeypatch.setattr(_writer, "_cpus", lambda: threads)
    monkeypatch.setattr(_writer, "BATCH_NODES", 10)
    alg = ring_allreduce(16).bind(1 << 20)
    paths = write_algorithm(alg, tmp_path / "ring")
    for rank, path in enumerate(paths):
        assert path.read_bytes().endswith(encode_rank(alg.graphs[rank], rank))
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in paths)  # no temporaries left


def test_encode_into_grows_a_new_buffer_and_keeps_the_old() -> None:
    from hub.chakra._encode import encode_rank, encode_rank_into

    alg = ring_allreduce(8).bind(64)
    small = bytearray(16)
    view, buf = encode_rank_into(alg.graphs[0], 0, small)
    assert buf is not small and len(small) == 16  # too small: a new buffer, the old one untouched
    assert bytes(view) == encode_rank(alg.graphs[0], 0)
    view1, buf1 = encode_rank_into(alg.graphs[1], 1, buf)
    assert buf1 is buf and bytes(view1) == encode_rank(alg.graphs[1], 1)  # large enough: reused
