"""Read Chakra ET files (``<prefix>.<rank>.et``) into the model: algorithms and workloads.

Accepts files written by collhub and foreign ones (ASTRA-sim's examples, the MSCCL-IR
converter, any protobuf writer): any integer typing of the ``comm_*`` attributes, ``ctrl_deps``
as dependencies, id gaps, unknown fields and attributes, and gzip (``1f 8b`` magic).
Every problem is a :class:`hub.errors.TraceFormatError` naming the file, rank and node.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import TraceFormatError
from . import _profile as P
from ._decode import NodeError, decode_ranks, frame_many
from ._files import load, load_all
from ._model import Algorithm, AlgorithmMeta, Collective, NodeType, RankGraph
from ._validate import check_algorithm, limit
from ._wire import TypedValue, WireError, decode_global_metadata, decode_node, frame
from ._workload import Workload, WorkloadNode
from ._writer import rank_path

__all__ = ["rank_files", "read_algorithm", "read_global_metadata", "read_trace", "read_workload"]

#: Metadata attributes of foreign writers that are a copy of the source input: not kept.
_DROPPED_META = frozenset({"input_file"})


def _frame(data: bytes, path: Path, rank: int) -> tuple[list[int], list[int]]:
    try:
        return frame(data, empty_nodes=False)
    except WireError as exc:
        raise TraceFormatError(f"{exc} (byte {exc.pos})", path=str(path), rank=rank,
                               hint="the file is truncated or corrupt") from None


def _typed_metadata(data: bytes, s: int, e: int, path: Path, rank: int) -> tuple[str, dict[str, TypedValue]]:
    try:
        version, attrs = decode_global_metadata(data, s, e)
    except WireError as exc:
        raise TraceFormatError(f"malformed GlobalMetadata: {exc} (byte {exc.pos})", path=str(path), rank=rank,
                               hint="the first message of a Chakra ET file must be a GlobalMetadata") from None
    return version, {name: tv for name, tv in attrs if tv is not None}


def _metadata(data: bytes, s: int, e: int, path: Path, rank: int) -> tuple[str, dict[str, Any]]:
    version, typed = _typed_metadata(data, s, e, path, rank)
    return version, {name: tv.value for name, tv in typed.items()}


def read_global_metadata(path: str | os.PathLike[str]) -> tuple[str, dict[str, Any]]:
    """``(version, attributes)`` of one ET file's GlobalMetadata, everything included (also what
    :func:`read_algorithm` drops, such as a converter's embedded ``input_file``)."""
    path = Path(path)
    data = load(path, None)
    starts, ends = _frame(data, path, 0)
    if not starts:
        raise TraceFormatError("empty file: no GlobalMetadata", path=str(path),
                               hint="a Chakra ET file starts with a length-delimited GlobalMetadata")
    return _metadata(data, starts[0], ends[0], path, 0)


def _first_metadata(path: Path) -> tuple[str, dict[str, TypedValue], bytes, list[int], list[int]]:
    data = load(path, 0)
    starts, ends = _frame(data, path, 0)
    version, typed = _typed_metadata(data, starts[0], ends[0], path, 0)
    return version, typed, data, starts, ends


def _present_ranks(prefix: str | os.PathLike[str]) -> list[int]:
    """The rank numbers N of the files ``<prefix>.<N>.et`` in the prefix's directory, sorted:
    one directory listing, whatever a file claims."""
    path = Path(os.fspath(prefix))
    pat = re.compile(re.escape(path.name) + r"\.(0|[1-9]\d{0,9})\.et$")
    try:
        names = os.listdir(path.parent if str(path.parent) else ".")
    except OSError:
        return []
    return sorted(int(m.group(1)) for f in names if (m := pat.match(f)))


def rank_files(prefix: str | os.PathLike[str]) -> list[Path]:
    """The rank files of ``prefix``, which must be ``.0.et`` .. ``.N-1.et`` without gaps.

    When rank 0's GlobalMetadata declares ``ranks``, exactly that many files must be present
    (checked against one directory listing before anything is allocated by the claim)."""
    first = rank_path(prefix, 0)
    if not first.exists() and not first.is_symlink():
        raise TraceFormatError("file not found", path=str(first), rank=0,
                               hint=f"expected files {first.name.removesuffix('.0.et')}.<rank>.et")
    _v, typed, _d, _s, _e = _first_metadata(first)
    present = _present_ranks(prefix)
    contiguous = next((i for i, r in enumerate(present) if r != i), len(present))
    declared = typed.get(P.META.RANKS)
    if declared is not None:
        count = declared.value
        if not _is_int_value(declared):
            raise TraceFormatError(f"GlobalMetadata attribute ranks holds {declared.field} {count!r}, not an integer",
                                   path=str(first), rank=0, hint="ranks is the number of rank files (int32)")
        if count < 1:
            raise TraceFormatError(f"GlobalMetadata attribute ranks = {count} is out of range", path=str(first),
                                   rank=0, hint="ranks is the number of rank files, at least 1")
        if contiguous < count:
            raise TraceFormatError(f"missing rank file (GlobalMetadata says {count} ranks, "
                                   f"{len(present)} rank file(s) present)", path=str(rank_path(prefix, contiguous)),
                                   rank=contiguous, hint="rank files must be numbered 0..N-1 without gaps")
        if present[-1] >= count:
            raise TraceFormatError(
                f"GlobalMetadata attribute ranks = {count}, but rank file {present[-1]} is present "
                f"({len(present)} rank files)", path=str(first), rank=0,
                hint="the set mixes outputs: remove the extra rank files or rewrite the whole set")
        return [rank_path(prefix, r) for r in range(count)]
    if present and present[-1] >= contiguous:
        missing = rank_path(prefix, contiguous)
        raise TraceFormatError(f"missing rank file (rank {present[-1]} exists)", path=str(missing), rank=contiguous,
                               hint="rank files must be numbered 0..N-1 without gaps")
    return [rank_path(prefix, r) for r in range(max(contiguous, 1))]


def _is_int_value(tv: TypedValue) -> bool:
    return isinstance(tv.value, int) and not isinstance(tv.value, bool) and not tv.field.endswith("_list")


# -- algorithms --------------------------------------------------------------------------------
def _collective_of(value: Any) -> tuple[Collective, str]:
    """Parse a ``collective`` attribute: ``allreduce`` or the converter's ``algo@allreduce``."""
    text = str(value)
    name, _, coll = text.rpartition("@")
    try:
        return Collective.parse(coll), name
    except ValueError:
        return Collective.CUSTOM, name


#: profile metadata attribute -> what its value must be
_META_INTS = (P.META.RANKS, P.META.IN_CHUNKS, P.META.OUT_CHUNKS, P.META.SCRATCH_CHUNKS, P.META.ROOT, P.META.SIZE,
              P.META.RANK)
_META_STRS = (P.META.COLLECTIVE, P.META.ALGORITHM, P.META.PRODUCER, P.META.PROFILE, P.META.SCHEMA)
#: attributes every rank file of one profile set states identically
_META_SHARED = (P.META.PROFILE, P.META.COLLECTIVE, P.META.RANKS, P.META.IN_CHUNKS, P.META.OUT_CHUNKS,
                P.META.SCRATCH_CHUNKS, P.META.INPLACE, P.META.ROOT, P.META.SIZE)


def _check_meta_types(typed: dict[str, TypedValue], path: Path, rank: int) -> None:
    """Profile attributes hold the type the profile prescribes (a double size of 1.5 is not 1 B)."""
    for name in _META_INTS:
        tv = typed.get(name)
        if tv is not None and not _is_int_value(tv):
            raise TraceFormatError(f"GlobalMetadata attribute {name} holds {tv.field} {tv.value!r}, not an integer",
                                   path=str(path), rank=rank,
                                   hint="docs/spec/collective-profile.md types it int32/int64")
    for name in _META_STRS:
        tv = typed.get(name)
        if tv is not None and not isinstance(tv.value, str):
            raise TraceFormatError(f"GlobalMetadata attribute {name} holds {tv.field} {tv.value!r}, not a string",
                                   path=str(path), rank=rank, hint="docs/spec/collective-profile.md types it string")
    tv = typed.get(P.META.INPLACE)
    if tv is not None and not (isinstance(tv.value, bool) or (_is_int_value(tv) and tv.value in (0, 1))):
        raise TraceFormatError(f"GlobalMetadata attribute inplace holds {tv.field} {tv.value!r}, not a bool",
                               path=str(path), rank=rank, hint="inplace is a bool_val")


def _check_same_meta(first: dict[str, TypedValue], typed: dict[str, TypedValue], paths: list[Path], rank: int) -> None:
    """Every rank file of a set states the same profile facts as rank 0: a zero-length or
    damaged GlobalMetadata must not turn a profile set into a ``custom`` one."""
    for name in _META_SHARED:
        a, b = first.get(name), typed.get(name)
        va, vb = (a.value if a is not None else None), (b.value if b is not None else None)
        if va != vb:
            bad_rank, bad = (0, va) if name == P.META.PROFILE and va is None else (rank, vb)
            raise TraceFormatError(
                f"GlobalMetadata attribute {name} is {bad!r} here but {(vb if bad_rank == 0 else va)!r} in rank "
                f"{rank if bad_rank == 0 else 0}'s file", path=str(paths[bad_rank]), rank=bad_rank,
                hint="the rank files come from different outputs, or one GlobalMetadata is damaged")


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
            raise TraceFormatError(f"bad collhub profile metadata: {exc}", path=str(path), rank=0,
                                   hint="see docs/spec/collective-profile.md") from None
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
    parts_s: list[np.ndarray] = []
    parts_e: list[np.ndarray] = []
    per_file: list[int] = []
    for r, path in enumerate(paths):
        st, en = _frame(file_bytes(r), path, r)
        parts_s.append(np.asarray(st, np.int64) + bases[r])
        parts_e.append(np.asarray(en, np.int64) + bases[r])
        per_file.append(len(st))
    return np.concatenate(parts_s), np.concatenate(parts_e), np.asarray(per_file, np.int64)


#: from this many files on, messages are framed for all files at once (one numpy step per
#: message index) rather than file by file in Python
_VECTOR_FRAMING_FILES = 64
#: nodes decoded per vectorized pass
_BATCH_NODES = 1 << 17


def read_algorithm(prefix: str | os.PathLike[str]) -> Algorithm:
    """Read ``<prefix>.<rank>.et`` for every rank into an :class:`Algorithm`."""
    paths = rank_files(prefix)
    data, bases, sizes = load_all(paths)
    buf = np.frombuffer(data, np.uint8)
    starts, ends, counts = _frames(data, bases, sizes, paths, buf)
    first = np.concatenate(([0], np.cumsum(counts)))[:-1]
    meta_typed: dict[str, TypedValue] = {}
    for rank, path in enumerate(paths):
        _v, typed = _typed_metadata(data, int(starts[first[rank]]), int(ends[first[rank]]), path, rank)
        _check_meta_types(typed, path, rank)
        if rank == 0:
            meta_typed = typed
        else:
            _check_same_meta(meta_typed, typed, paths, rank)
        file_rank = typed[P.META.RANK].value if P.META.RANK in typed else None
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
    meta = _meta_from_attrs({k: tv.value for k, tv in meta_typed.items()}, len(paths), paths[0])
    if P.META.PROFILE not in meta_typed:
        _check_no_profile_nodes(graphs, paths)
    alg = Algorithm(meta, tuple(graphs))
    check_algorithm(alg, paths=paths, ranges=False)  # the decoder checked the ranges of the wire values
    return alg


def _check_no_profile_nodes(graphs: list[RankGraph], paths: list[Path]) -> None:
    """Nodes with the profile's buffer semantics need the profile's GlobalMetadata: without it
    (a zero-length or damaged first message) the set would silently read as ``custom``."""
    for rank, g in enumerate(graphs):
        has = (g.src_buf >= 0) | (g.dst_buf >= 0)
        if has.any():
            p = int(np.argmax(has))
            raise TraceFormatError(
                "node carries collhub profile attributes (sbuf/dbuf) but the GlobalMetadata has no "
                "collhub_profile", path=str(paths[rank]), rank=rank, node=int(g.ids[p]),
                hint="the GlobalMetadata is empty or damaged; rewrite the set")


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


_WORKLOAD_INTS = ("comm_type", "comm_size", "comm_src", "comm_dst", "comm_tag")


def _check_workload_node(node: WorkloadNode, ranks: int, path: Path, rank: int) -> None:
    """Integer attributes hold integers, sizes are >= 0 and peers are ranks of the set."""
    for key in _WORKLOAD_INTS:
        v = node.attrs.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
            raise TraceFormatError(f"attribute {key} holds {v!r}, not an integer", path=str(path), rank=rank,
                                   node=node.id, hint="Chakra readers take comm_* attributes as integers")
    if node.comm_size is not None and node.comm_size < 0:
        raise TraceFormatError(f"attribute comm_size = {node.comm_size} is out of range", path=str(path), rank=rank,
                               node=node.id, hint="comm_size is a byte count >= 0")
    if node.type in (NodeType.SEND, NodeType.RECV):
        key = "comm_dst" if node.type == NodeType.SEND else "comm_src"
        peer = node.attrs.get(key)
        if isinstance(peer, int) and not 0 <= peer < ranks:
            raise TraceFormatError(f"attribute {key} = {peer} is not a rank of 0..{ranks - 1}", path=str(path),
                                   rank=rank, node=node.id, hint="a message goes to or comes from a rank of the set")


def _read_workload_rank(data: bytes, path: Path, rank: int, ranks: int = 1 << 31
                        ) -> tuple[list[WorkloadNode], str, dict[str, Any], list[tuple[int, int, int]]]:
    starts, ends = _frame(data, path, rank)
    version, attrs = _metadata(data, starts[0], ends[0], path, rank)
    nodes = []
    seen: set[int] = set()
    for s, e in zip(starts[1:], ends[1:], strict=False):
        try:
            nd = decode_node(data, s, e)
        except WireError as exc:
            raise TraceFormatError(f"malformed node message: {exc} (byte {exc.pos})", path=str(path), rank=rank,
                                   hint="the file is truncated or corrupt") from None
        if not 1 <= nd["type"] <= 7:
            raise TraceFormatError(f"unknown node type {nd['type']}", path=str(path), rank=rank, node=nd["id"],
                                   hint="Chakra node types are 1..7")
        if nd["id"] in seen:
            raise TraceFormatError("duplicate node id", path=str(path), rank=rank, node=nd["id"],
                                   hint="node ids must be unique within a rank file")
        seen.add(nd["id"])
        nodes.append(_workload_node(nd))
    dangling: list[tuple[int, int, int]] = []
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
                                       rank=rank, node=node.id, hint=f"every {node.type.name} needs {need} (int32)")
        _check_workload_node(node, ranks, path, rank)
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
    budget = limit("COLLHUB_MAX_INFLATED_BYTES")  # for the whole set
    meta: dict[str, Any] = {}
    dangling: list[tuple[int, int, int]] = []
    for rank, path in enumerate(paths):
        data = load(path, rank, max(budget, 0))
        budget -= len(data)
        nodes, v, attrs, dang = _read_workload_rank(data, path, rank, len(paths))
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
    data = load(first, 0)
    starts, ends = _frame(data, first, 0)
    _v, attrs = _metadata(data, starts[0], ends[0], first, 0)
    if P.META.PROFILE in attrs:
        return read_algorithm(prefix)
    if P.META.WORKLOAD in attrs:
        return read_workload(prefix)
    kinds = set()
    for s, e in zip(starts[1:], ends[1:], strict=False):
        try:
            kinds.add(decode_node(data, s, e)["type"])
        except WireError as exc:
            raise TraceFormatError(f"malformed node message: {exc} (byte {exc.pos})", path=str(first), rank=0,
                                   hint="the file is truncated or corrupt") from None
    if NodeType.COLL in kinds:
        return read_workload(prefix)
    if kinds & {NodeType.SEND, NodeType.RECV}:
        return read_algorithm(prefix)
    return read_workload(prefix)


