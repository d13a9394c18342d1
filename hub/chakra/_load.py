"""The bytes of Chakra ET rank files, read safely: regular files only, bounded gzip inflation,
and sets no larger than the machine's memory (docs/security.md, "Chakra ET files and outputs").

Every problem is a :class:`hub.errors.TraceFormatError` naming the file and rank.
"""

from __future__ import annotations

import os
import re
import stat
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import TraceFormatError
from ._validate import limit

__all__ = ["load", "load_batches", "stat_regular"]

_GZIP_MAGIC = b"\x1f\x8b"
_NOT_FOUND_HINT = "a set is <prefix>.0.et, <prefix>.1.et, ...; pass the prefix"
_KIND = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a fifo"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def not_found_hint(path: Path) -> str:
    """The hint for a missing rank file: when what was given is itself a rank file
    (``out/ring.0.et`` given, ``out/ring.0.et.0.et`` looked for), say which prefix to pass."""
    m = re.match(r"^(?P<given>(?P<prefix>.+)\.\d+\.et)\.\d+\.et$", str(path))
    if m and Path(m["given"]).is_file():
        return f"{m['given']} is one rank file of a set; pass the set's prefix: {m['prefix']}"
    return _NOT_FOUND_HINT


def _not_regular(path: Path, rank: int | None, mode: int) -> TraceFormatError:
    what = next((name for test, name in _KIND if test(mode)), "not a regular file")
    hint = (
        "pass the file prefix, e.g. out/ring for out/ring.0.et"
        if stat.S_ISDIR(mode)
        else "Chakra ET files are read from regular files only (no fifos or devices)"
    )
    return TraceFormatError(f"is {what}, not a Chakra ET file", path=str(path), rank=rank, hint=hint)


def stat_regular(path: Path, rank: int | None) -> int:
    """The size of ``path``, which must be a regular file (a fifo would block, /dev/zero never ends)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise TraceFormatError("file not found", path=str(path), rank=rank, hint=not_found_hint(path)) from None
    except OSError as exc:
        raise TraceFormatError(
            f"cannot read: {exc.strerror or exc}", path=str(path), rank=rank, hint="check the file's permissions"
        ) from None
    if not stat.S_ISREG(st.st_mode):
        raise _not_regular(path, rank, st.st_mode)
    return st.st_size


def _open_regular(path: Path, rank: int | None) -> Any:
    """``path`` opened for reading without blocking (O_NONBLOCK: a fifo swapped in after the
    stat must not hang us), checked again to be a regular file."""
    stat_regular(path, rank)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise TraceFormatError("file not found", path=str(path), rank=rank, hint=not_found_hint(path)) from None
    except OSError as exc:
        raise TraceFormatError(
            f"cannot read: {exc.strerror or exc}", path=str(path), rank=rank, hint="check the file's permissions"
        ) from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise _not_regular(path, rank, mode)
    return os.fdopen(fd, "rb")


def _inflate(raw: bytes, budget: int, path: Path, rank: int | None) -> bytes:
    """Decompress gzip data as a stream, refusing more than ``budget`` bytes of output (a small
    file can inflate a thousandfold); concatenated members are read like ``gzip.decompress``."""
    out = bytearray()
    rest: bytes = raw
    while True:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        buf = rest
        try:
            while True:
                # max_length bounds what one call may produce; it is >= 1 (0 would mean unlimited)
                out += d.decompress(buf, budget + 1 - len(out))
                if len(out) > budget:
                    raise TraceFormatError(
                        f"gzip data inflates past the limit of {budget} bytes",
                        path=str(path),
                        rank=rank,
                        hint="a compressed set may hold at most COLLHUB_MAX_INFLATED_BYTES "
                        "(docs/security.md); decompress it yourself if it is real",
                    )
                buf = d.unconsumed_tail
                if d.eof or not buf:
                    break
        except zlib.error as exc:
            raise TraceFormatError(
                f"corrupt gzip data: {exc}",
                path=str(path),
                rank=rank,
                hint="the file starts with the gzip magic 1f 8b but does not decompress",
            ) from None
        if not d.eof:
            raise TraceFormatError(
                "corrupt gzip data: the compressed stream is cut off",
                path=str(path),
                rank=rank,
                hint="the file starts with the gzip magic 1f 8b but is truncated",
            )
        rest = d.unused_data
        if not rest.strip(b"\0"):
            return bytes(out)
        if rest[:2] != _GZIP_MAGIC:
            raise TraceFormatError(
                "corrupt gzip data: trailing bytes after the compressed stream",
                path=str(path),
                rank=rank,
                hint="the file starts with the gzip magic 1f 8b but does not decompress",
            )


def load(path: Path, rank: int | None, budget: int | None = None) -> bytes:
    """The (decompressed) bytes of one file."""
    size = stat_regular(path, rank)
    if size > _physical_memory():
        raise TraceFormatError(
            f"{size} bytes do not fit in memory",
            path=str(path),
            rank=rank,
            hint="the file (a sparse one?) is larger than this machine can read",
        )
    fh = _open_regular(path, rank)
    try:
        with fh:
            data = fh.read()
    except OSError as exc:
        raise TraceFormatError(
            f"cannot read: {exc.strerror or exc}", path=str(path), rank=rank, hint="check the file's permissions"
        ) from None
    if data[:2] == _GZIP_MAGIC:
        data = _inflate(data, limit("COLLHUB_MAX_INFLATED_BYTES") if budget is None else budget, path, rank)
    if not data:
        raise TraceFormatError(
            "empty file (no GlobalMetadata message)",
            path=str(path),
            rank=rank,
            hint="a Chakra ET file starts with a length-delimited GlobalMetadata",
        )
    return data


def _physical_memory() -> int:
    """This machine's RAM in bytes (unbounded where the platform does not say)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):  # pragma: no cover - not POSIX
        return 1 << 62


def load_batches(paths: list[Path], batch_bytes: int) -> Iterator[tuple[bytearray, np.ndarray, np.ndarray, int]]:
    """The (decompressed) bytes of consecutive rank files, a batch of about ``batch_bytes`` at a
    time, laid end to end: (data, start of each file, size of each file, first rank).

    One buffer is reused for every batch (it is overwritten by the next one), so reading a set
    costs memory for one batch, not the whole set, and no fresh pages per batch. Every file is
    checked to be a regular file, and the set to fit in memory, before anything is read; gzip
    files inflate within COLLHUB_MAX_INFLATED_BYTES for the whole set.
    """
    sizes = [stat_regular(path, rank) for rank, path in enumerate(paths)]  # refuse fifos before reading
    total = sum(sizes)
    if total > _physical_memory():
        raise TraceFormatError(
            f"{total} bytes of rank files do not fit in memory",
            path=str(paths[0]),
            rank=0,
            hint="the set (or a sparse file in it) is larger than this machine can read",
        )
    budget = limit("COLLHUB_MAX_INFLATED_BYTES")
    buf = bytearray()
    r = 0
    while r < len(paths):
        r2, want = r + 1, sizes[r]
        while r2 < len(paths) and want + sizes[r2] <= batch_bytes:
            want += sizes[r2]
            r2 += 1
        if len(buf) < want:
            try:
                buf = bytearray(max(want, 2 * len(buf)))
            except MemoryError:
                raise TraceFormatError(
                    f"{total} bytes of rank files do not fit in memory",
                    path=str(paths[0]),
                    rank=0,
                    hint="the set (or a sparse file in it) is larger than this machine can read",
                ) from None
        got = _read_into(buf, paths, sizes, r, r2)
        if got is None:  # gzip, or a file that changed while read: the general path
            parts = []
            for rank in range(r, r2):
                parts.append(load(paths[rank], rank, max(budget, 0)))
                budget -= len(parts[-1])
            got = [len(p) for p in parts]
            buf = bytearray(b"".join(parts))
        lens = np.asarray(got, np.int64)
        yield buf, np.concatenate(([0], np.cumsum(lens)))[:-1], lens, r
        r = r2


def _read_into(buf: bytearray, paths: list[Path], sizes: list[int], r: int, r2: int) -> list[int] | None:
    """Read plain rank files r..r2-1 into ``buf`` end to end; None when one is gzip or changed size."""
    view = memoryview(buf)
    pos = 0
    for rank in range(r, r2):
        path, size = paths[rank], sizes[rank]
        if size == 0:
            load(path, rank)  # raises: empty file
        fh = _open_regular(path, rank)
        try:
            with fh:
                got = fh.readinto(view[pos : pos + size])
                extra = fh.read(1)
        except OSError as exc:
            raise TraceFormatError(
                f"cannot read: {exc.strerror or exc}", path=str(path), rank=rank, hint="check the file's permissions"
            ) from None
        if got != size or extra or bytes(view[pos : pos + 2]) == _GZIP_MAGIC:
            return None
        pos += size
    return sizes[r:r2]
