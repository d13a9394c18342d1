"""Opening input files so that no input can block a command: regular files, or bounded reads.

A path a user gives may name a fifo with no writer, a terminal, a socket or a device. Opening
one for reading blocks until a writer comes (a fifo), and reading it blocks until data comes;
neither may hold a command forever. :func:`open_input`:

* refuses directories, and anything that is not a regular file, a fifo/pipe, a socket or a
  character device (a block device) at once, by ``stat``;
* opens every input with ``O_NONBLOCK``, so the open itself never waits for a fifo's writer;
* reads a regular file as usual; any other input through :class:`_Waiting`, which waits for
  data with ``poll`` at most :func:`input_timeout` seconds (``COLLHUB_INPUT_TIMEOUT``, default
  10) at a time: a fifo whose writer never comes, or a pipe that stays silent that long, ends
  with one error naming the path. Sizes are the caller's to bound (``max_bytes``).
"""

from __future__ import annotations

import io
import os
import select
import stat
from collections.abc import Callable

from .errors import FormatError, HubError

__all__ = ["DEFAULT_INPUT_TIMEOUT", "input_timeout", "open_input", "read_input"]

ENV_INPUT_TIMEOUT = "COLLHUB_INPUT_TIMEOUT"
#: Seconds a fifo, pipe, terminal or socket may stay silent before its read is given up.
DEFAULT_INPUT_TIMEOUT = 10.0

#: ``error(path, message, hint)`` -> the exception to raise (the caller's class)
MakeError = Callable[[str, str, "str | None"], HubError]


def _format_error(path: str, message: str, hint: str | None) -> HubError:
    return FormatError(f"{path}: {message}", hint=hint)


def input_timeout() -> float:
    """``COLLHUB_INPUT_TIMEOUT`` in seconds (default 10; a bad value means the default)."""
    raw = os.environ.get(ENV_INPUT_TIMEOUT, "").strip()
    try:
        value = float(raw) if raw else DEFAULT_INPUT_TIMEOUT
    except ValueError:
        return DEFAULT_INPUT_TIMEOUT
    return value if 0 < value < 1e8 else DEFAULT_INPUT_TIMEOUT


class _Waiting(io.RawIOBase):
    """A non-blocking descriptor read as a blocking stream whose every wait is bounded."""

    def __init__(self, fd: int, path: str, timeout: float, error: MakeError) -> None:
        self._fd, self._path, self._timeout, self._error = fd, path, timeout, error

    def readable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        poller = select.poll()
        poller.register(self._fd, select.POLLIN | select.POLLPRI)
        while True:
            # poll first: a fifo opened with O_NONBLOCK reads as EOF until a writer comes, and
            # poll reports nothing (not even POLLHUP) until one came and went
            if not poller.poll(self._timeout * 1000):
                raise self._error(
                    self._path,
                    f"no data within {self._timeout:g} s (a fifo without a writer, or a silent pipe)",
                    f"give a regular file, or make sure something writes to it ({ENV_INPUT_TIMEOUT} sets the wait)",
                )
            try:
                return os.readv(self._fd, [buffer])
            except BlockingIOError:
                continue

    def close(self) -> None:
        if not self.closed:
            try:
                os.close(self._fd)
            finally:
                super().close()


def open_input(path: str | os.PathLike[str], *, error: MakeError = _format_error) -> io.BufferedReader:
    """Open input ``path`` for reading in binary, bounded as the module docstring says.

    ``error(path, message, hint)`` makes the exception raised for an input that cannot be used
    (the caller's class: an ``ImportFormatError`` for MSCCL-IR, say).
    """
    where = str(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except IsADirectoryError:
        raise error(where, "is a directory, not a file", None) from None
    except OSError as exc:
        raise error(where, f"cannot read: {exc.strerror or exc}", None) from None
    try:
        mode = os.fstat(fd).st_mode  # of what was opened: a path swapped meanwhile cannot slip by
        if stat.S_ISDIR(mode):
            raise error(where, "is a directory, not a file", None)
        if stat.S_ISREG(mode):
            os.set_blocking(fd, True)
            return open(fd, "rb", closefd=True)  # noqa: SIM115 - the caller closes it
        if not (stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISSOCK(mode)):
            raise error(where, "is not a regular file, pipe or fifo", "give a regular file")
        return io.BufferedReader(_Waiting(fd, where, input_timeout(), error))
    except BaseException:
        os.close(fd)
        raise


def read_input(path: str | os.PathLike[str], max_bytes: int, *, error: MakeError = _format_error) -> bytes:
    """The whole of input ``path`` (at most ``max_bytes``; more is an error), read as :func:`open_input` does."""
    with open_input(path, error=error) as fh:
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise error(str(path), f"larger than the limit of {max_bytes} bytes", None)
    return data
