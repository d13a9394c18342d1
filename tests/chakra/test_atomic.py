"""A failed write leaves nothing behind: no temporary files, no partial set of rank files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hub.chakra import _writer, write_algorithm
from hub.errors import UsageError

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
    with pytest.raises(UsageError, match="No space left on device"):
        write_algorithm(ring_allreduce(4).bind(64), tmp_path / "ring")
    assert len(calls) == 3
    assert list(tmp_path.iterdir()) == []


def test_failure_while_encoding_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = _writer.encode_ranks

    def boom(graphs, ranks, **kwargs):
        calls.append(ranks)
        if len(calls) == 2:
            raise RuntimeError("simulated crash")
        return real(graphs, ranks, **kwargs)

    monkeypatch.setattr(_writer, "BATCH_NODES", 10)  # several batches
    monkeypatch.setattr(_writer, "encode_ranks", boom)
    with pytest.raises(RuntimeError):
        write_algorithm(ring_allreduce(4).bind(64), tmp_path / "ring")
    assert list(tmp_path.iterdir()) == []


def test_failure_while_writing_keeps_old_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    old = write_algorithm(ring_allreduce(4).bind(64), tmp_path / "ring")
    before = {p: p.read_bytes() for p in old}
    real_fdopen = os.fdopen
    opened = []

    def failing_fdopen(fd, *args, **kwargs):
        opened.append(fd)
        if len(opened) == 3:
            os.close(fd)
            raise OSError(5, "Input/output error")
        return real_fdopen(fd, *args, **kwargs)

    monkeypatch.setattr(_writer.os, "fdopen", failing_fdopen)
    with pytest.raises(UsageError, match="Input/output error"):
        write_algorithm(ring_allreduce(4).bind(128), tmp_path / "ring")
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
