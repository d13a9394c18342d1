"""The bytes of one MSCCL-IR input, as bounded pieces: a regular file, a pipe or a fifo, gzip or not.

Nothing here seeks, so ``/dev/stdin``, ``<(zcat x.xml.gz)`` and named pipes are read as streams;
:func:`hub.inputs.open_input` bounds every wait for their data (a fifo with no writer fails in
``COLLHUB_INPUT_TIMEOUT`` seconds, not never).
The size limit counts the (decompressed) XML as it is read: a file never has to be read whole, or
inflated whole, before it is refused.
"""

from __future__ import annotations

import io
import os
import stat
import zlib
from collections.abc import Generator
from pathlib import Path

from hub.errors import ImportFormatError
from hub.inputs import open_input

__all__ = ["PIECE", "is_regular", "pieces", "whole"]

PIECE = 1 << 20  # bytes handed to expat per call
_GZIP_MAGIC = b"\x1f\x8b"


class _Prefixed(io.RawIOBase):
    """A raw stream that yields ``head`` first, then the rest of ``raw`` (peeking without seeking)."""

    def __init__(self, head: bytes, raw: io.BufferedIOBase) -> None:
        self._head = head
        self._raw = raw

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        if self._head:
            n = min(len(buffer), len(self._head))
            buffer[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        return self._raw.readinto(buffer)


def _import_error(path: str, message: str, hint: str | None) -> ImportFormatError:
    return ImportFormatError(message, path=path, hint=hint)


def is_regular(path: Path) -> bool:
    """True for a regular file (its size is known up front); False for pipes, fifos and errors."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def _read_exact(raw: io.BufferedIOBase, n: int) -> bytes:
    out = b""
    while len(out) < n:
        more = raw.read(n - len(out))
        if not more:
            break
        out += more
    return out


def pieces(path: Path, max_bytes: int) -> Generator[bytes, None, None]:
    """Yield the XML bytes of ``path`` in pieces of at most :data:`PIECE` bytes.

    Raises :class:`ImportFormatError` when the input cannot be opened or read, is a directory
    or a device that is not a stream, is corrupt gzip, or exceeds ``max_bytes`` of XML.
    """
    where = str(path)
    try:
        st = os.stat(path)
    except OSError as e:
        raise ImportFormatError(f"cannot read: {e.strerror}", path=where) from None
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        raise ImportFormatError("is a directory, not an MSCCL-IR file", path=where)
    if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISSOCK(mode)):
        raise ImportFormatError("is not a file, pipe or fifo", path=where)
    if stat.S_ISREG(mode) and st.st_size > max_bytes:
        raise ImportFormatError(
            f"file is {st.st_size} bytes, above the limit of {max_bytes} bytes",
            path=where,
            hint="raise the max_bytes parameter if the file is trusted",
        )
    # a fifo without a writer or a silent pipe must not block: every wait is bounded (hub.inputs)
    raw = open_input(path, error=_import_error)
    compressed = False
    try:
        head = _read_exact(raw, 2)
        compressed = head == _GZIP_MAGIC
        stream: io.BufferedIOBase = io.BufferedReader(_Prefixed(head, raw))
        if compressed:
            import gzip  # (only here: most inputs are plain XML)

            stream = gzip.GzipFile(fileobj=stream)
        total = 0
        while True:
            piece = stream.read(PIECE)
            if not piece:
                return
            total += len(piece)
            if total > max_bytes:
                what = "decompressed XML" if compressed else "input"
                raise ImportFormatError(
                    f"{what} exceeds the limit of {max_bytes} bytes",
                    path=where,
                    hint="raise the max_bytes parameter if the file is trusted",
                )
            yield piece
    except (OSError, EOFError, zlib.error) as e:
        hint = "a truncated or corrupt .gz file?" if compressed else None
        detail = e.strerror if isinstance(e, OSError) and e.strerror else str(e) or type(e).__name__
        raise ImportFormatError(f"cannot read: {detail}", path=where, hint=hint) from None
    finally:
        raw.close()


def whole(path: Path, max_bytes: int, limit: int) -> bytes | None:
    """The whole XML of a regular file (gzip or not) when it is at most ``limit`` bytes, else None.

    None also when it cannot be read: the streaming read then reports that where it happens (a
    parse error ahead of a corrupt gzip tail is reported first, as when streaming).
    """
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
        return None
    if st.st_size <= max_bytes:  # (a larger one is refused by pieces(), which says so)
        # plain XML in one read, not in pieces joined (gzip goes through pieces() below); the
        # file may change meanwhile: read at most limit + 1 bytes and check what was read
        try:
            with open_input(path, error=_import_error) as f:  # swapped for a fifo since the stat: bounded
                data = f.read(limit + 1)
        except (OSError, ImportFormatError):
            return None
        if not data.startswith(_GZIP_MAGIC):
            return data if len(data) <= min(limit, max_bytes) else None
    out: list[bytes] = []
    total = 0
    it = pieces(path, max_bytes)
    try:
        for piece in it:
            total += len(piece)
            if total > limit:
                return None
            out.append(piece)
    except ImportFormatError:
        return None
    finally:
        it.close()
    return b"".join(out)
