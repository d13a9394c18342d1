"""The lazy workload read: every node checked at once, the node objects made on first use.

A workload read from files (:func:`hub.chakra.read_workload`) is checked whole by a compiled
scan (``hub/_native/_codec_workload_scan.c``) that refuses exactly the ranks the compiled
decoder refuses, without making a Python object per node; making the WorkloadNode objects (about
2 µs each, most of an eager read) waits until ``Workload.ranks`` is first used.

Rules, stated here once:

* the read reads every file into one reused buffer (fresh pages for every file cost as much as
  the scan) and keeps, per rank, the file's identity (device, inode, size, modification time) and
  its message spans, not its bytes;
* on first use each file is read again; a file whose identity changed since the read is refused
  (:class:`hub.errors.TraceFormatError`, "changed since it was read"), since the scan's verdict
  was about the old bytes;
* a rank the scan refuses is read eagerly by the caller (``_workload_io``), whose general
  decoder reports what is wrong: errors come from the read, never from the first use, unless a
  file changed in between;
* gzip files are read whole (they must be inflated) and are handled like the others.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..errors import TraceFormatError
from ._load import _GZIP_MAGIC, _open_regular, load
from ._meta import metadata
from ._workload import WorkloadNode
from ._workload_io import _collector_paused, _compiled_rank, _read_workload_rank

__all__ = ["PendingWorkload", "ScannedRank", "read_reusing", "scanned_rank"]

#: what identifies a file's bytes without reading them: (device, inode, size, mtime in ns)
Stamp = tuple[int, int, int, int]


def _stamp(st: os.stat_result) -> Stamp:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def read_reusing(path: Path, rank: int, budget: int, buf: bytearray) -> tuple[Any, Stamp]:
    """The bytes of one rank file, read into ``buf`` (grown as needed; overwritten by the next
    file) where the file is plain, else (gzip) :func:`hub.chakra._load.load`'s bytes; and the
    file's stamp."""
    fh = _open_regular(path, rank)
    with fh:
        st = os.fstat(fh.fileno())
        if st.st_size + 1 > len(buf):
            buf.extend(bytes(st.st_size + 1 - len(buf)))
        view = memoryview(buf)
        try:
            n = fh.readinto(view[: st.st_size + 1])  # one byte more: a file grown since the stat
        except OSError:
            n = -1
    if n < 0 or n != st.st_size or view[:2] == _GZIP_MAGIC or n == 0:
        return load(path, rank, budget), _stamp(st)  # its checks and its errors (empty, gzip, I/O)
    return view[:n], _stamp(st)


def scanned_rank(
    data: Any, stamp: Stamp, path: Path, rank: int, ranks: int
) -> tuple[ScannedRank, str, dict[str, Any], list[tuple[int, int, int]], set[str]] | None:
    """One rank file checked by the compiled scan, no node object made: (the rank kept for later,
    version, metadata attributes, dangling dependencies, the COMM_COLL nodes' names), or None
    where the scan refuses the rank (the eager read then reads it and reports what is wrong)."""
    import numpy as np

    from .._native import _codec

    out = _codec.scan_workload_file(data, ranks)
    if out is None:
        return None
    starts_b, ends_b, _ids, _deps, _per, _types, coll_names, dangling_b = out
    starts, ends = np.frombuffer(starts_b, dtype=np.int64), np.frombuffer(ends_b, dtype=np.int64)
    first = bytes(data[: int(ends[0])])  # the GlobalMetadata, as bytes for its decoder
    version, attrs = metadata(first, int(starts[0]), int(ends[0]), path, rank)
    pairs = np.frombuffer(dangling_b, dtype=np.int64).tolist()
    dangling = [(rank, n, d) for n, d in zip(pairs[::2], pairs[1::2], strict=True)]
    gz = bool(data[:2] == _GZIP_MAGIC)
    return ScannedRank(stamp, starts, ends, path, rank, ranks, gz), version, attrs, dangling, coll_names


class ScannedRank:
    """A rank file the scan accepted: its stamp and message spans (the GlobalMetadata's first)."""

    __slots__ = ("ends", "gz", "path", "rank", "ranks", "stamp", "starts")

    def __init__(self, stamp: Stamp, starts: Any, ends: Any, path: Path, rank: int, ranks: int, gz: bool) -> None:
        self.stamp, self.starts, self.ends, self.path = stamp, starts, ends, path
        self.rank, self.ranks, self.gz = rank, ranks, gz

    def __len__(self) -> int:
        return int(self.starts.size) - 1

    def nodes(self) -> list[WorkloadNode]:
        """The rank's WorkloadNode objects (dangling dependencies dropped), as the eager read makes them."""
        from ._validate import limit

        try:
            stamp = _stamp(os.stat(self.path))
        except OSError:
            stamp = None
        data = load(self.path, self.rank, limit("COLLHUB_MAX_INFLATED_BYTES")) if stamp == self.stamp else b""
        if stamp != self.stamp or (not self.gz and len(data) != self.stamp[2]):
            raise TraceFormatError(
                "changed since it was read",
                path=str(self.path),
                rank=self.rank,
                hint="a workload's nodes are made when first used, from its files: read the set again",
            )
        got = _compiled_rank(data, self.starts, self.ends, self.rank, self.ranks)
        if got is None:  # not where the scan took the same bytes (tests): the general decoder, to be sure
            return _read_workload_rank(data, self.path, self.rank, self.ranks, compiled=False)[0]
        return got[0]


class PendingWorkload:
    """The ranks of a lazy workload (hub.chakra.Workload.lazy): made once, on first use."""

    def __init__(self, ranks: list[ScannedRank | list[WorkloadNode]]) -> None:
        self._ranks = ranks
        self.counts = [len(r) for r in ranks]

    def nodes(self) -> list[list[WorkloadNode]]:
        with _collector_paused():
            return [r if isinstance(r, list) else r.nodes() for r in self._ranks]
