"""Workload files: ASTRA-sim's typing of every node, read and written.

Workload nodes carry any type, IOInfo and arbitrary attributes, and a workload read from a file
is rewritten byte for byte. The general message codec (:mod:`._wire`, :mod:`._decode`, and
:func:`encode_workload_node` / :func:`_workload_node` here) is the reference and states the
rules; a compiled pass each way (``hub/_native/_codec_workload.c``, ``_codec_workload_write.c``)
does the same per-node work for ranks of the usual kinds (real PyTorch traces: scalars, strings,
IOInfo) and refuses a rank with anything else, which the general codec then reads or writes and
whose errors it reports. Tests compare the two on real traces and fuzzed input.
"""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .._units import MAX_BYTES
from ..errors import ExportError, TraceFormatError, UsageError
from . import _profile as P
from ._attrsets import Attributes, check_attributes
from ._decode import decode_node
from ._fileset import check_prefix, rank_files, rank_path, stale_rank_files, write_files_atomically
from ._load import load
from ._meta import frame_file, metadata
from ._model import COMM_TYPE_OF, NodeType
from ._validate import limit
from ._wire import TypedValue, WireError, delimit, encode_global_metadata, encode_node
from ._workload import Workload, WorkloadNode

__all__ = ["WORKLOAD_TYPING", "encode_workload_node", "read_workload", "write_workload"]


def _num(attrs: dict[str, Any], key: str) -> int | None:
    v = attrs.get(key)
    return int(v) if isinstance(v, (int, bool)) else None


_WORKLOAD_INTS = ("comm_type", "comm_size", "comm_src", "comm_dst", "comm_tag")
#: a node without attributes (most COMP nodes) has none of the comm_* values
_NO_COMM = dict.fromkeys(_WORKLOAD_INTS)
#: NodeType by value (the reader checked 1..7 first): a table lookup, not an enum call per node
_NODE_TYPES = {int(t): t for t in NodeType}


def _workload_node(nd: dict[str, Any]) -> WorkloadNode:
    attrs = {name: tv.value for name, tv in nd["attrs"] if tv is not None}
    comm = {key: _num(attrs, key) for key in _WORKLOAD_INTS} if attrs else _NO_COMM
    return WorkloadNode(
        id=nd["id"],
        name=nd["name"],
        type=_NODE_TYPES[nd["type"]],
        deps=nd["data_deps"] + nd["ctrl_deps"],
        duration_micros=nd["duration_micros"],
        **comm,
        is_cpu_op=bool(attrs.get("is_cpu_op", False)),
        pg_name=str(attrs.get("pg_name", "")),
        attrs=attrs,
        ctrl_deps=list(nd["ctrl_deps"]),
        inputs=nd["inputs"],
        outputs=nd["outputs"],
        start_time_micros=nd["start_time_micros"],
    )


def _check_workload_node(node: WorkloadNode, ranks: int, path: Path, rank: int) -> None:
    """Integer attributes hold integers, sizes are >= 0 and peers are ranks of the set."""
    for key in _WORKLOAD_INTS:
        v = node.attrs.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
            raise TraceFormatError(
                f"attribute {key} holds {v!r}, not an integer",
                path=str(path),
                rank=rank,
                node=node.id,
                hint="Chakra readers take comm_* attributes as integers",
            )
    if node.comm_size is not None and not 0 <= node.comm_size <= MAX_BYTES:
        raise TraceFormatError(
            f"attribute comm_size = {node.comm_size} is out of range",
            path=str(path),
            rank=rank,
            node=node.id,
            hint=f"comm_size is a byte count, 0..{MAX_BYTES} (1 TiB: no accelerator holds a larger buffer)",
        )
    if node.type in (NodeType.SEND, NodeType.RECV):
        key = "comm_dst" if node.type == NodeType.SEND else "comm_src"
        peer = node.attrs.get(key)
        if isinstance(peer, int) and not 0 <= peer < ranks:
            raise TraceFormatError(
                f"attribute {key} = {peer} is not a rank of 0..{ranks - 1}",
                path=str(path),
                rank=rank,
                node=node.id,
                hint="a message goes to or comes from a rank of the set",
            )


def _read_workload_rank(
    data: bytes, path: Path, rank: int, ranks: int = 1 << 31, compiled: bool = True
) -> tuple[list[WorkloadNode], str, dict[str, Any], list[tuple[int, int, int]]]:
    """One rank file's nodes, version, metadata attributes and dangling dependencies: through the
    compiled pass (``compiled``), else (or where it refuses the rank) the general decoder, which is
    the reference and reports every error."""
    starts, ends = _frame(data, path, rank) if compiled else frame_file(data, path, rank)
    version, attrs = metadata(data, starts[0], ends[0], path, rank)
    if compiled:
        got = _compiled_rank(data, starts, ends, rank, ranks)
        if got is not None:
            return got[0], version, attrs, got[1]
        starts, ends = frame_file(data, path, rank)  # the general loop's own spans (plain ints)
    nodes = []
    seen: set[int] = set()
    for s, e in zip(starts[1:], ends[1:], strict=True):
        try:
            nd = decode_node(data, s, e)
        except WireError as exc:
            raise TraceFormatError(
                f"malformed node message: {exc} (byte {exc.pos})",
                path=str(path),
                rank=rank,
                hint="the file is truncated or corrupt",
            ) from None
        if not 1 <= nd["type"] <= 7:
            raise TraceFormatError(
                f"unknown node type {nd['type']}",
                path=str(path),
                rank=rank,
                node=nd["id"],
                hint="Chakra node types are 1..7",
            )
        if nd["id"] in seen:
            raise TraceFormatError(
                "duplicate node id",
                path=str(path),
                rank=rank,
                node=nd["id"],
                hint="node ids must be unique within a rank file",
            )
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
                raise TraceFormatError(
                    f"{node.type.name} node has no {need} attribute",
                    path=str(path),
                    rank=rank,
                    node=node.id,
                    hint=f"every {node.type.name} needs {need} (int32)",
                )
        _check_workload_node(node, ranks, path, rank)
    return nodes, version, attrs, dangling


def _frame(data: bytes, path: Path, rank: int) -> tuple[Any, Any]:
    """The message spans of one file by the compiled framing; where it refuses the file, the
    general one says what is wrong."""
    import numpy as np

    from ._ranks import frame_files

    starts, ends, _counts, bad = frame_files(data, np.zeros(1, np.int64), np.array([len(data)], np.int64))
    if bad >= 0 or not starts.size:
        return frame_file(data, path, rank)
    return starts, ends


def _compiled_rank(
    data: bytes, starts: Any, ends: Any, rank: int, ranks: int
) -> tuple[list[WorkloadNode], list[tuple[int, int, int]]] | None:
    """The compiled pass (``hub/_native/_codec_workload.c``): the same nodes as the general loop
    below, or None where it refuses the rank (a node it does not take, an id used twice: the
    general loop then reads it and reports what is wrong). Dangling dependencies are found by
    numpy over the whole rank and dropped as the general loop drops them."""
    import numpy as np

    from .._native import _codec

    s = np.ascontiguousarray(starts[1:], dtype=np.int64)
    e = np.ascontiguousarray(ends[1:], dtype=np.int64)
    out = _codec.decode_workload(data, s, e, ranks, WorkloadNode, _TYPES_BY_VALUE)
    if out is None:
        return None
    nodes, ids_b, deps_b, per_b = out
    ids = np.frombuffer(ids_b, dtype=np.int64)
    if np.unique(ids).size != ids.size:
        return None  # a duplicate id: the general loop names it
    deps = np.frombuffer(deps_b, dtype=np.int64)
    dangling: list[tuple[int, int, int]] = []
    if deps.size:
        absent = ~np.isin(deps, ids)
        if absent.any():
            owner = np.repeat(np.arange(ids.size), np.frombuffer(per_b, dtype=np.int64))
            seen = set(ids.tolist())
            for i in np.unique(owner[absent]).tolist():
                node = nodes[i]
                dangling.extend((rank, node.id, d) for d in node.deps if d not in seen)
                node.deps = [d for d in node.deps if d in seen]
                node.ctrl_deps = [d for d in node.ctrl_deps if d in seen]
    return nodes, dangling


#: NodeType by value, index 0 unused (the compiled pass refuses types outside 1..7)
_TYPES_BY_VALUE = (None, *(_NODE_TYPES[v] for v in range(1, 8)))


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused while the nodes are made: a workload is millions
    of small containers (a node, its attrs, its lists) that hold no cycles, and the collections
    their allocation triggers (each walking every young object, the old ones every so often)
    cost more than making them (measured: 7.4 against 2.9 µs a node on dlrm8)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def read_workload(prefix: str | os.PathLike[str], *, compiled: bool = True, lazy: bool = True) -> Workload:
    """Read ``<prefix>.<rank>.et`` workload files (every node type, METADATA included).

    Every node is checked here (errors are raised by the read). With ``lazy`` (and ``compiled``),
    the node objects are made when ``Workload.ranks`` is first used, from the files read again
    then (:mod:`._workload_lazy`; a file changed since the read is refused then, with
    :class:`hub.errors.TraceFormatError`); the read keeps only the node spans. Dependencies on
    nodes absent from their file are dropped (treated as satisfied, as Chakra's original ETFeeder
    does), listed in ``Workload.dangling`` and reported by one
    :class:`hub.chakra.DanglingDependencyWarning` for the whole read. ``compiled=False`` reads
    with the general decoder only (the reference the compiled passes are tested against).
    """
    from ._workload_lazy import PendingWorkload, ScannedRank, read_reusing, scanned_rank

    paths = rank_files(prefix)
    ranks: list[ScannedRank | list[WorkloadNode]] = []
    version, name = "", ""
    budget = limit("COLLHUB_MAX_INFLATED_BYTES")  # for the whole set
    meta: dict[str, Any] = {}
    dangling: list[tuple[int, int, int]] = []
    coll_names: set[str] = set()
    buf = bytearray()  # reused by the lazy read: no fresh pages per file
    with _collector_paused():
        for rank, path in enumerate(paths):
            scanned = None
            if compiled and lazy:
                data, stamp = read_reusing(path, rank, max(budget, 0), buf)
                scanned = scanned_rank(data, stamp, path, rank, len(paths))
                if scanned is None:
                    data = bytes(data)
            else:
                data = load(path, rank, max(budget, 0))
            budget -= len(data)
            if scanned is not None:
                kept, v, attrs, dang, names = scanned
                ranks.append(kept)
                coll_names |= names
            else:
                nodes, v, attrs, dang = _read_workload_rank(bytes(data), path, rank, len(paths), compiled)
                ranks.append(nodes)
                coll_names.update(n.name for n in nodes if n.type == NodeType.COLL)
            if rank == 0:
                version, name, meta = v, str(attrs.get(P.META.WORKLOAD, "")), attrs
            dangling.extend(dang)
            del data  # a view of buf, which the next file's read may resize
    if not name:
        name = coll_names.pop() if len(coll_names) == 1 else ""
    if dangling:
        from ._workload import warn_dangling

        warn_dangling(str(prefix), dangling)
    pending = PendingWorkload(ranks)
    if all(isinstance(r, list) for r in ranks):
        return Workload(ranks=pending.nodes(), version=version, name=name, metadata=meta, dangling=dangling)
    return Workload.lazy(pending, version=version, name=name, metadata=meta, dangling=dangling)


#: Exact oneof typing of the attributes ASTRA-sim reads in a workload (chakra-et.md §4.3, §7).
WORKLOAD_TYPING: dict[str, str] = {
    "is_cpu_op": "bool_val",
    "num_ops": "int64_val",
    "tensor_size": "uint64_val",
    "tensor_loc": "int32_val",
    "comm_type": "int64_val",
    "comm_priority": "int32_val",
    "comm_size": "int64_val",
    "comm_src": "int32_val",
    "comm_dst": "int32_val",
    "comm_tag": "int32_val",
    "pg_name": "string_val",
    "involved_dim": "bool_list",
}


def _typed_workload_attr(name: str, value: Any) -> Any:
    field = WORKLOAD_TYPING.get(name)
    if field is None or isinstance(value, TypedValue):
        return value
    if field == "bool_list":
        return TypedValue(field, [bool(v) for v in value])
    if field == "bool_val":
        return TypedValue(field, bool(value))
    if field == "string_val":
        return TypedValue(field, str(value))
    return TypedValue(field, int(value))


def _named_workload_attrs(node: WorkloadNode) -> list[tuple[str, Any]]:
    """The attributes collhub's WorkloadNode fields stand for, in ASTRA-sim's generator order:
    ``is_cpu_op`` on every node (it picks the hardware-resource class), then the ``comm_*``."""
    comm: tuple[str, ...]
    if node.type == NodeType.COLL:
        comm = ("comm_type", "comm_size")
    elif node.type in (NodeType.SEND, NodeType.RECV):
        comm = ("comm_src", "comm_dst", "comm_size", "comm_tag")
    else:
        comm = ("comm_type", "comm_size", "comm_src", "comm_dst", "comm_tag")
    named: list[tuple[str, Any]] = [("is_cpu_op", bool(node.is_cpu_op))]
    named += [(key, getattr(node, key)) for key in comm if getattr(node, key) is not None]
    if node.pg_name:
        named.append(("pg_name", node.pg_name))
    return named


def encode_workload_node(node: WorkloadNode, rank: int = 0) -> bytes:
    """The body of one workload Node with ASTRA-sim's attribute typing.

    Attributes already in ``node.attrs`` keep their order (a workload read from a file is
    rewritten byte for byte), with the named fields' current values; named fields not in
    ``attrs`` come first. Attributes whose value is None are left out.
    """
    named = _named_workload_attrs(node)
    values = dict(named)
    attrs = [(k, v) for k, v in named if k not in node.attrs]
    attrs += [(k, values.get(k, v)) for k, v in node.attrs.items()]
    if node.id < 0 or any(d < 0 for d in node.deps):
        raise UsageError(f"workload rank {rank}, node {node.id}: ids must be >= 0")
    data_deps = list(node.deps)
    ctrl_deps = list(node.ctrl_deps)
    for d in ctrl_deps:  # deps = data_deps + ctrl_deps as read; keep each occurrence once
        if d in data_deps:
            data_deps.remove(d)
        else:
            ctrl_deps = []  # ctrl_deps no longer match deps: write everything as data_deps
            data_deps = list(node.deps)
            break
    typed = []
    for key, value in attrs:
        if value is None:
            continue
        try:
            typed.append((key, _typed_workload_attr(key, value)))
        except (TypeError, ValueError) as exc:
            raise UsageError(f"workload rank {rank}, node {node.id}: attribute {key!r}: {exc}") from None
    try:
        return encode_node(
            id=node.id,
            name=node.name,
            type=int(node.type),
            data_deps=data_deps,
            ctrl_deps=ctrl_deps,
            duration_micros=max(int(node.duration_micros or 0), 0),
            attrs=typed,
            # dependencies read as ctrl_deps stay ctrl_deps (a file is rewritten as it was read);
            # collhub's own dependencies are data_deps, which every Chakra reader honours
            start_time_micros=max(int(node.start_time_micros or 0), 0),
            inputs=node.inputs,
            outputs=node.outputs,
        )
    except TypeError as exc:  # a value infer_typed cannot store
        raise UsageError(
            f"workload rank {rank}, node {node.id}: {exc}",
            hint="attribute values must be bool, int, float, str, bytes or lists of one of those",
        ) from None


def write_workload(
    wl: Workload, prefix: str | os.PathLike[str], *, attributes: Attributes = "profile", compiled: bool = True
) -> list[Path]:
    """Write ``wl`` as ``<prefix>.<rank>.et`` files (GlobalMetadata ``version`` = ``wl.version``).

    Nodes are written the same way in both attribute sets, with ASTRA-sim's typing. With
    ``"profile"`` the GlobalMetadata also names the workload (attribute ``workload``); with
    ``"astrasim"`` it holds the version only, byte-identical to ASTRA-sim's microbenchmark
    workloads, and a COMM_COLL node whose ``comm_type`` is no Chakra CollectiveCommType raises
    :class:`hub.errors.ExportError`. Each rank is encoded by the compiled pass
    (``hub/_native/_codec_workload_write.c``) when its values are of the plain kinds, else by
    :func:`encode_workload_node`, the reference (``compiled=False``: always), which gives the
    same bytes.
    """
    from .._native import _codec

    check_prefix(prefix)
    check_attributes(attributes)
    known = set(COMM_TYPE_OF.values())
    contents = []
    for rank, nodes in enumerate(wl.ranks):
        if attributes == "astrasim":
            for nd in nodes:
                if nd.type == NodeType.COLL and nd.comm_type not in known:
                    raise ExportError(
                        f"workload rank {rank}, node {nd.id}: comm_type {nd.comm_type} is not a "
                        "Chakra CollectiveCommType",
                        hint=f"ASTRA-sim knows {sorted(known)}",
                    )
        attrs = [(P.META.WORKLOAD, TypedValue("string_val", wl.name))] if wl.name and attributes == "profile" else []
        meta = delimit(encode_global_metadata(wl.version or P.ET_VERSION, attrs))
        body = _codec.encode_workload(list(nodes), WORKLOAD_TYPING) if compiled else None
        if body is None:  # a value of another kind somewhere: the reference encoder (and its errors)
            body = b"".join(delimit(encode_workload_node(nd, rank)) for nd in nodes)
        contents.append((rank_path(prefix, rank), [meta, body]))
    return write_files_atomically(contents, stale=stale_rank_files(prefix, len(wl.ranks)))
