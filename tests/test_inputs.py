"""hub.inputs: regular files read as usual, special files never block (real fifos, pipes, sockets)."""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path

import pytest

from hub.errors import FormatError
from hub.inputs import open_input, read_input


@pytest.fixture(autouse=True)
def _short_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLLHUB_INPUT_TIMEOUT", "0.5")


def test_regular_file(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"hello")
    assert read_input(tmp_path / "a", 100) == b"hello"
    with pytest.raises(FormatError, match="larger than the limit of 3 bytes"):
        read_input(tmp_path / "a", 3)


@pytest.mark.parametrize("kind", ["directory", "missing"])
def test_not_a_file(tmp_path: Path, kind: str) -> None:
    path = tmp_path if kind == "directory" else tmp_path / "nope"
    with pytest.raises(FormatError, match="directory" if kind == "directory" else "No such file"):
        open_input(path)


def test_fifo_without_writer_ends_in_time(tmp_path: Path) -> None:
    path = tmp_path / "f"
    os.mkfifo(path)
    start = time.monotonic()
    with pytest.raises(FormatError, match=r"no data within 0\.5 s"):
        read_input(path, 100)
    assert time.monotonic() - start < 3


def test_fifo_with_a_writer_is_read_to_the_end(tmp_path: Path) -> None:
    path = tmp_path / "f"
    os.mkfifo(path)

    def write() -> None:
        with open(path, "wb") as f:
            for _ in range(3):
                f.write(b"abc")
                f.flush()
                time.sleep(0.1)

    t = threading.Thread(target=write, daemon=True)
    t.start()
    assert read_input(path, 100) == b"abcabcabc"
    t.join(5)


def test_silent_pipe_and_socket_end_in_time(tmp_path: Path) -> None:
    r, w = os.pipe()
    try:
        with pytest.raises(FormatError, match="no data within"):
            read_input(f"/proc/self/fd/{r}", 100)
    finally:
        os.close(r)
        os.close(w)
    path = tmp_path / "s"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    try:
        with pytest.raises(FormatError, match="cannot read|not a regular file|no data within"):
            read_input(path, 100)
    finally:
        server.close()


def test_the_callers_error_class_is_used(tmp_path: Path) -> None:
    class Mine(FormatError):
        pass

    with pytest.raises(Mine, match="x: is a directory"):
        open_input(tmp_path, error=lambda path, message, hint: Mine(f"x: {message}", hint=hint))
