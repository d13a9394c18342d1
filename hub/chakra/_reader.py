"""Read Chakra ET files (``<prefix>.<rank>.et``) into the model: algorithms and workloads.

Accepts files written by collhub and foreign ones (ASTRA-sim's examples, the MSCCL-IR
converter, any protobuf writer): any integer typing of the ``comm_*`` attributes, ``ctrl_deps``
as dependencies, id gaps, unknown fields and attributes, and gzip (``1f 8b`` magic).
Every problem is a :class:`hub.errors.TraceFormatError` naming the file, rank and node.
"""

from __future__ import annotations

import gzip
import os
import re
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import TraceFormatError
from . import _profile as P
from ._decode import NodeError, decode_ranks, frame_many
from ._model import Algorithm, AlgorithmMeta, Collective, NodeType, RankGraph
from ._wire import WireError, decode_global_metadata, decode_node, frame
from ._workload import Workload, WorkloadNode
from ._writer import rank_path

__all__ = ["rank_files", "read_algorithm", "read_global_metadata", "read_trace", "read_workload"]

#: Metadata attributes of foreign writers that are a copy of the source input: not kept.
_DROPPED_META = frozenset({"input_file"})


# -- files -------------------------------------------------------------------------------------
def _load(path: Path, rank: int | None) -> bytes:
    """The (decompressed) bytes of one file."""
    if path.is_dir():
        raise TraceFormatError("is a directory, not a Chakra ET file", path=str(path), rank=rank,
                               hint="pass the file prefix, e.g. out/ring for out/ring.0.et")
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise TraceFormatError("file not found", path=str(path), rank=rank) from None
    except OSError as exc:
        raise TraceFormatError(f"cannot read: {exc.strerror or exc}", path=str(path), rank=rank) from None
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise TraceFormatError(f"corrupt gzip data: {exc}", path=str(path), rank=rank,
                                   hint="the file starts with the gzip magic 1f 8b but does not decompress") from None
    if not data:
        raise TraceFormatError("empty file (no GlobalMetadata message)", path=str(path), rank=rank,
                               hint="a Chakra ET file starts with a length-delimited GlobalMetadata")
    return data


def _load_all(paths: list[Path]) -> tuple[bytearray, np.ndarray, np.ndarray]:
    """All files' bytes laid end to end (read in place, no extra copy), plus 32 zero bytes of
    padding for fixed-width reads at the end: (data, start of each file, size of each file)."""
    sizes = []
    for rank, path in enumerate(paths):
        if path.is_dir():
            _load(path, rank)  # raises
        try:
            sizes.append(path.stat().st_size)
        except OSError:
            _load(path, rank)  # raises with the reason
    data = bytearray(sum(sizes) + 32)
    view = memoryview(data)
    pos = 0
    real_sizes = []
    for rank, (path, size) in enumerate(zip(paths, sizes)):
        try:
            with open(path, "rb") as fh:
                got = fh.readinto(view[pos : pos + size])
                head = bytes(view[pos : pos + 2])
        except OSError as exc:
            raise TraceFormatError(f"cannot read: {exc.strerror or exc}", path=str(path), rank=rank) from None
        if size == 0:
            _load(path, rank)  # raises: empty file
        if head == b"\x1f\x8b" or got != size:
            return _concat(paths)  # gzip, or a file that changed while read
        pos += size
        real_sizes.append(size)
    sizes_a = np.asarray(real_sizes, np.int64)
    return data, np.concatenate(([0], np.cumsum(sizes_a)))[:-1], sizes_a


def _concat(paths: list[Path]) -> tuple[bytearray, np.ndarray, np.ndarray]:
    """The slower general path of :func:`_load_all` (gzip files)."""
    datas = [_load(path, rank) for rank, path in enumerate(paths)]
    sizes = np.array([len(d) for d in datas], np.int64)
    data = bytearray(b"".join(datas))
    data.extend(bytes(32))
    return data, np.concatenate(([0], np.cumsum(sizes)))[:-1], sizes


def _frame(data: bytes, path: Path, rank: int) -> tuple[list[int], list[int]]:
    try:
        return frame(data)
    except WireError as exc:
        raise TraceFormatError(f"{exc} (byte {exc.pos})", path=str(path), rank=rank,
                               hint="the file is truncated or corrupt") from None


def _metadata(data: bytes, s: int, e: int, path: Path, rank: int) -> tuple[str, dict[str, Any]]:
    try:
        version, attrs = decode_global_metadata(data, s, e)
    except WireError as exc:
        raise TraceFormatError(f"malformed GlobalMetadata: {exc} (byte {exc.pos})", path=str(path), rank=rank,
                               hint="the first message of a Chakra ET file must be a GlobalMetadata") from None
    return version, {name: tv.value for name, tv in attrs if tv is not None}


def read_global_metadata(path: str | os.PathLike[str]) -> tuple[str, dict[str, Any]]:
    """``(version, attributes)`` of one ET file's GlobalMetadata, everything included (also what
    :func:`read_algorithm` drops, such as a converter's embedded ``input_file``)."""
    path = Path(path)
    data = _load(path, None)
    starts, ends = _frame(data, path, 0)
    if not starts:
        raise TraceFormatError("empty file: no GlobalMetadata", path=str(path))
    return _metadata(data, starts[0], ends[0], path, 0)


def rank_files(prefix: str | os.PathLike[str]) -> list[Path]:
    """The rank files of ``prefix``: the count comes from rank 0's ``ranks`` attribute, else by
    probing ``.0.et``, ``.1.et``, ... until one is missing. Gaps are errors."""
    first = rank_path(prefix, 0)
    if not first.exists():
        raise TraceFormatError("file not found", path=str(first), rank=0,
                               hint=f"expected files {first.name.removesuffix('.0.et')}.<rank>.et")
    data = _load(first, 0)
    starts, ends = _frame(data, first, 0)
    _v, attrs = _metadata(data, starts[0], ends[0], first, 0)
    count = attrs.get(P.META.RANKS)
    if isinstance(count, int) and not isinstance(count, bool) and count > 0:
        paths = [rank_path(prefix, r) for r in range(count)]
        for r, p in enumerate(paths):
            if not p.exists():
                raise TraceFormatError(f"missing rank file (GlobalMetadata says {count} ranks)", path=str(p), rank=r)
        return paths
    paths = []
    while rank_path(prefix, len(paths)).exists():
        paths.append(rank_path(prefix, len(paths)))
    # a later rank file after the first missing one is a gap
    pat = re.compile(re.escape(Path(os.fspath(prefix)).name) + r"\.(\d+)\.et$")
    parent = first.parent
    later = sorted(int(m.group(1)) for f in parent.iterdir() if (m := pat.match(f.name)))
    if later and later[-1] >= len(paths):
        missing = rank_path(prefix, len(paths))
        raise TraceFormatError(f"missing rank file (rank {later[-1]} exists)", path=str(missing), rank=len(paths),
                               hint="rank files must be numbered 0..N-1 without gaps")
    return paths


# -- algorithms --------------------------------------------------------------------------------
def _collective_of(value: Any) -> tuple[Collective, str]:
    """Parse a ``collective`` attribute: ``allreduce`` or the converter's ``algo@allreduce``."""
    text = str(value)
    name, _, coll = text.rpartition("@")
    try:
        return Collective.parse(coll), name
    except ValueError:
        return Collective.CUSTOM, name


def _meta_from_attrs(attrs: dict[str, Any], ranks: int, path: Path) -> AlgorithmMeta:
    M = P.META
    extra = tuple(
        (k, v) for k, v in attrs.items()
        if k not in P.META_NAMES and k not in _DROPPED_META and isinstance(v, (str, int, float, bool))
    )
    if M.PROFILE in attrs:
        try:
            coll = Collective.parse(attrs.get(M.COLLECTIVE, "custom"))
            size = attrs.get(M.SIZE)
            return AlgorithmMeta(
                collective=coll, ranks=ranks, in_chunks=int(attrs.get(M.IN_CHUNKS, 0)),
                out_chunks=int(attrs.get(M.OUT_CHUNKS, 0)), scratch_chunks=int(attrs.get(M.SCRATCH_CHUNKS, 0)),
                inplace=bool(attrs.get(M.INPLACE, False)), root=int(attrs.get(M.ROOT, 0)),
                name=str(attrs.get(M.ALGORITHM, "")), producer=str(attrs.get(M.PRODUCER, "")),
                size=int(size) if size is not None else None, extra=extra,
            )
        except (TypeError, ValueError) as exc:
            raise TraceFormatError(f"bad collhub profile metadata: {exc}", path=str(path), rank=0) from None
    coll, name = (Collective.CUSTOM, "")
    if M.COLLECTIVE in attrs:
        coll, name = _collective_of(attrs[M.COLLECTIVE])
    return AlgorithmMeta(collective=coll, ranks=ranks, in_chunks=0, out_chunks=0, name=name, extra=extra)


def _frames(data: bytes, bases: np.ndarray, sizes: np.ndarray, paths: list[Path],
            buf: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Message spans of every file laid end to end in ``data``: (starts, ends, counts)."""

    def file_bytes(r: int) -> bytes:
        return data[int(bases[r]) : int(bases[r] + sizes[r])]

    if len(paths) >= _VECTOR_FRAMING_FILES:
        starts, ends, counts, bad = frame_many(buf, bases, bases + sizes)
        if bad.any():
            r = int(np.argmax(bad))
            _frame(file_bytes(r), paths[r], r)  # raises with the precise message
        return starts, ends, counts
    parts_s, parts_e, counts = [], [], []
    for r, path in enumerate(paths):
        st, en = _frame(file_bytes(r), path, r)
        parts_s.append(np.asarray(st, np.int64) + bases[r])
        parts_e.append(np.asarray(en, np.int64) + bases[r])
        counts.append(len(st))
    return np.concatenate(parts_s), np.concatenate(parts_e), np.asarray(counts, np.int64)


#: from this many files on, messages are framed for all files at once (one numpy step per
#: message index) rather than file by file in Python
_VECTOR_FRAMING_FILES = 64
#: nodes decoded per vectorized pass
_BATCH_NODES = 1 << 17


def read_algorithm(prefix: str | os.PathLike[str]) -> Algorithm:
    """Read ``<prefix>.<rank>.et`` for every rank into an :class:`Algorithm`."""
    paths = rank_files(prefix)
    data, bases, sizes = _load_all(paths)
    buf = np.frombuffer(data, np.uint8)
    starts, ends, counts = _frames(data, bases, sizes, paths, buf)
    first = np.concatenate(([0], np.cumsum(counts)))[:-1]
    meta_attrs: dict[str, Any] = {}
    for rank, path in enumerate(paths):
        _v, attrs = _metadata(data, int(starts[first[rank]]), int(ends[first[rank]]), path, rank)
        if rank == 0:
            meta_attrs = attrs
        file_rank = attrs.get(P.META.RANK)
        if isinstance(file_rank, int) and file_rank != rank:
            raise TraceFormatError(f"GlobalMetadata says this is rank {file_rank}", path=str(path), rank=rank,
                                   hint="rank files were renamed or mixed from different outputs")
    # drop each file's GlobalMetadata span; decode the nodes in batches of whole ranks
    is_node = np.ones(starts.size, bool)
    is_node[first] = False
    node_s, node_e, node_counts = starts[is_node], ends[is_node], counts - 1
    node_base = np.concatenate(([0], np.cumsum(node_counts)))
    graphs: list[RankGraph] = []
    r = 0
    while r < len(paths):
        r2 = r + 1
        while r2 < len(paths) and node_base[r2 + 1] - node_base[r] <= _BATCH_NODES:
            r2 += 1
        a, b = int(node_base[r]), int(node_base[r2])
        try:
            graphs.extend(decode_ranks(data, buf, node_s[a:b], node_e[a:b], node_counts[r:r2]))
        except NodeError as exc:
            rank = r + exc.rank
            raise TraceFormatError(str(exc), path=str(paths[rank]), rank=rank, node=exc.node, hint=exc.hint) from None
        r = r2
    return Algorithm(_meta_from_attrs(meta_attrs, len(paths), paths[0]), tuple(graphs))


# -- workloads ---------------------------------------------------------------------------------
def _workload_node(nd: dict[str, Any]) -> WorkloadNode:
    attrs = {name: tv.value for name, tv in nd["attrs"] if tv is not None}

    def num(key: str) -> int | None:
        v = attrs.get(key)
        return int(v) if isinstance(v, (int, bool)) else None

    return WorkloadNode(
        id=nd["id"], name=nd["name"], type=NodeType(nd["type"]), deps=nd["data_deps"] + nd["ctrl_deps"],
        duration_micros=nd["duration_micros"], comm_type=num("comm_type"), comm_size=num("comm_size"),
        comm_src=num("comm_src"), comm_dst=num("comm_dst"), comm_tag=num("comm_tag"),
        is_cpu_op=bool(attrs.get("is_cpu_op", False)), pg_name=str(attrs.get("pg_name", "")), attrs=attrs,
        ctrl_deps=list(nd["ctrl_deps"]), inputs=nd["inputs"], outputs=nd["outputs"],
        start_time_micros=nd["start_time_micros"],
    )


def _read_workload_rank(data: bytes, path: Path, rank: int
                        ) -> tuple[list[WorkloadNode], str, dict[str, Any], list[tuple[int, int, int]]]:
    starts, ends = _frame(data, path, rank)
    version, attrs = _metadata(data, starts[0], ends[0], path, rank)
    nodes = []
    seen: set[int] = set()
    for s, e in zip(starts[1:], ends[1:]):
        try:
            nd = decode_node(data, s, e)
        except WireError as exc:
            raise TraceFormatError(f"malformed node message: {exc} (byte {exc.pos})", path=str(path), rank=rank,
                                   hint="the file is truncated or corrupt") from None
        if not 1 <= nd["type"] <= 7:
            raise TraceFormatError(f"unknown node type {nd['type']}", path=str(path), rank=rank, node=nd["id"])
        if nd["id"] in seen:
            raise TraceFormatError("duplicate node id", path=str(path), rank=rank, node=nd["id"])
        seen.add(nd["id"])
        nodes.append(_workload_node(nd))
    dangling = []
    for node in nodes:
        missing = [d for d in node.deps if d not in seen]
        if missing:
            # Chakra's original ETFeeder issues such a node as if the dependency were met (its
            # tests issue nodes whose ctrl_deps name the converter's deleted root first); the
            # dependency is dropped here and reported once per read (hub.chakra.DanglingDependencyWarning).
            dangling.extend((rank, node.id, d) for d in missing)
            node.deps = [d for d in node.deps if d in seen]
            node.ctrl_deps = [d for d in node.ctrl_deps if d in seen]
        if node.type in (NodeType.SEND, NodeType.RECV):
            need = "comm_dst" if node.type == NodeType.SEND else "comm_src"
            if node.attrs.get(need) is None:
                raise TraceFormatError(f"{node.type.name} node has no {need} attribute", path=str(path),
                                       rank=rank, node=node.id)
    return nodes, version, attrs, dangling


def read_workload(prefix: str | os.PathLike[str]) -> Workload:
    """Read ``<prefix>.<rank>.et`` workload files (every node type, METADATA included).

    Dependencies on nodes absent from their file are dropped (treated as satisfied, as Chakra's
    original ETFeeder does), listed in ``Workload.dangling`` and reported by one
    :class:`hub.chakra.DanglingDependencyWarning` for the whole read.
    """
    paths = rank_files(prefix)
    ranks = []
    version, name = "", ""
    meta: dict[str, Any] = {}
    dangling: list[tuple[int, int, int]] = []
    for rank, path in enumerate(paths):
        nodes, v, attrs, dang = _read_workload_rank(_load(path, rank), path, rank)
        if rank == 0:
            version, name, meta = v, str(attrs.get(P.META.WORKLOAD, "")), attrs
        ranks.append(nodes)
        dangling.extend(dang)
    if not name:
        coll_names = {n.name for r in ranks for n in r if n.type == NodeType.COLL}
        name = coll_names.pop() if len(coll_names) == 1 else ""
    if dangling:
        from ._workload import warn_dangling

        warn_dangling(str(prefix), dangling)
    return Workload(ranks=ranks, version=version, name=name, metadata=meta, dangling=dangling)


def read_trace(prefix: str | os.PathLike[str]) -> Algorithm | Workload:
    """Read an algorithm or a workload, whichever the files hold.

    Profile metadata means an algorithm; otherwise rank 0's nodes decide: any COMM_COLL_NODE
    means a workload, else any SEND/RECV means an algorithm, else a workload.
    """
    first = rank_path(prefix, 0)
    data = _load(first, 0)
    starts, ends = _frame(data, first, 0)
    _v, attrs = _metadata(data, starts[0], ends[0], first, 0)
    if P.META.PROFILE in attrs:
        return read_algorithm(prefix)
    if P.META.WORKLOAD in attrs:
        return read_workload(prefix)
    kinds = set()
    for s, e in zip(starts[1:], ends[1:]):
        try:
            kinds.add(decode_node(data, s, e)["type"])
        except WireError as exc:
            raise TraceFormatError(f"malformed node message: {exc} (byte {exc.pos})", path=str(first), rank=0) from None
    if NodeType.COLL in kinds:
        return read_workload(prefix)
    if kinds & {NodeType.SEND, NodeType.RECV}:
        return read_algorithm(prefix)
    return read_workload(prefix)


