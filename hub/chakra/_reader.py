"""Read Chakra ET files (``<prefix>.<rank>.et``) into the model: algorithms, and either kind.

Accepts files written by collhub and foreign ones (ASTRA-sim's examples, the MSCCL-IR
converter, any protobuf writer): any integer typing of the ``comm_*`` attributes, ``ctrl_deps``
as dependencies, id gaps, unknown fields and attributes, and gzip (``1f 8b`` magic).
Every problem is a :class:`hub.errors.TraceFormatError` naming the file, rank and node.
The nodes are decoded by :mod:`._ranks`; workloads are read by :mod:`._workload_io`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import TraceFormatError
from . import _profile as P
from ._decode import decode_node
from ._fileset import rank_files, rank_path
from ._load import load, load_batches
from ._meta import frame_file, is_int_value, metadata, read_global_metadata, typed_metadata
from ._model import Algorithm, AlgorithmMeta, Collective, NodeType, RankGraph
from ._ranks import NodeError, decode_ranks, frame_files
from ._validate import check_algorithm
from ._wire import TypedValue, WireError
from ._workload import Workload
from ._workload_io import read_workload

__all__ = ["read_algorithm", "read_global_metadata", "read_trace", "read_workload"]


#: Metadata attributes of foreign writers that are a copy of the source input: not kept.
_DROPPED_META = frozenset({"input_file"})


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
_META_INTS = (
    P.META.RANKS,
    P.META.IN_CHUNKS,
    P.META.OUT_CHUNKS,
    P.META.SCRATCH_CHUNKS,
    P.META.ROOT,
    P.META.SIZE,
    P.META.RANK,
)
_META_STRS = (P.META.COLLECTIVE, P.META.ALGORITHM, P.META.PRODUCER, P.META.PROFILE, P.META.SCHEMA)
#: attributes every rank file of one profile set states identically
_META_SHARED = (
    P.META.PROFILE,
    P.META.COLLECTIVE,
    P.META.RANKS,
    P.META.IN_CHUNKS,
    P.META.OUT_CHUNKS,
    P.META.SCRATCH_CHUNKS,
    P.META.INPLACE,
    P.META.ROOT,
    P.META.SIZE,
)


def _check_meta_types(typed: dict[str, TypedValue], path: Path, rank: int) -> None:
    """Profile attributes hold the type the profile prescribes (a double size of 1.5 is not 1 B)."""
    for name in _META_INTS:
        tv = typed.get(name)
        if tv is not None and not is_int_value(tv):
            raise TraceFormatError(
                f"GlobalMetadata attribute {name} holds {tv.field} {tv.value!r}, not an integer",
                path=str(path),
                rank=rank,
                hint="docs/spec/collective-profile.md types it int32/int64",
            )
    for name in _META_STRS:
        tv = typed.get(name)
        if tv is not None and not isinstance(tv.value, str):
            raise TraceFormatError(
                f"GlobalMetadata attribute {name} holds {tv.field} {tv.value!r}, not a string",
                path=str(path),
                rank=rank,
                hint="docs/spec/collective-profile.md types it string",
            )
    tv = typed.get(P.META.INPLACE)
    if tv is not None and not (isinstance(tv.value, bool) or (is_int_value(tv) and tv.value in (0, 1))):
        raise TraceFormatError(
            f"GlobalMetadata attribute inplace holds {tv.field} {tv.value!r}, not a bool",
            path=str(path),
            rank=rank,
            hint="inplace is a bool_val",
        )


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
                f"{rank if bad_rank == 0 else 0}'s file",
                path=str(paths[bad_rank]),
                rank=bad_rank,
                hint="the rank files come from different outputs, or one GlobalMetadata is damaged",
            )


def _meta_from_attrs(attrs: dict[str, Any], ranks: int, path: Path) -> AlgorithmMeta:
    M = P.META
    extra = tuple(
        (k, v)
        for k, v in attrs.items()
        if k not in P.META_NAMES and k not in _DROPPED_META and isinstance(v, (str, int, float, bool))
    )
    if M.PROFILE in attrs:
        try:
            coll = Collective.parse(attrs.get(M.COLLECTIVE, "custom"))
            size = attrs.get(M.SIZE)
            return AlgorithmMeta(
                collective=coll,
                ranks=ranks,
                in_chunks=int(attrs.get(M.IN_CHUNKS, 0)),
                out_chunks=int(attrs.get(M.OUT_CHUNKS, 0)),
                scratch_chunks=int(attrs.get(M.SCRATCH_CHUNKS, 0)),
                inplace=bool(attrs.get(M.INPLACE, False)),
                root=int(attrs.get(M.ROOT, 0)),
                name=str(attrs.get(M.ALGORITHM, "")),
                producer=str(attrs.get(M.PRODUCER, "")),
                size=int(size) if size is not None else None,
                extra=extra,
            )
        except (TypeError, ValueError) as exc:
            raise TraceFormatError(
                f"bad collhub profile metadata: {exc}",
                path=str(path),
                rank=0,
                hint="see docs/spec/collective-profile.md",
            ) from None
    coll, name = (Collective.CUSTOM, "")
    if M.COLLECTIVE in attrs:
        coll, name = _collective_of(attrs[M.COLLECTIVE])
    return AlgorithmMeta(collective=coll, ranks=ranks, in_chunks=0, out_chunks=0, name=name, extra=extra)


def _frames(
    data: bytearray, bases: np.ndarray, sizes: np.ndarray, paths: list[Path], r0: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Message spans of the files of ranks r0.. laid end to end in ``data``: (starts, ends, counts)."""
    starts, ends, counts, bad = frame_files(data, bases, sizes)
    if bad >= 0:  # the general framer says precisely what is wrong
        frame_file(bytes(data[int(bases[bad]) : int(bases[bad] + sizes[bad])]), paths[r0 + bad], r0 + bad)
        raise AssertionError("the compiled and the general framer disagree")  # pragma: no cover
    return starts, ends, counts


#: bytes of rank files read and decoded per pass: bounds the temporary per-node state (about
#: 200 bytes a node, files hold about 100) while amortizing the per-pass cost
_BATCH_BYTES = 16 << 20


def read_algorithm(prefix: str | os.PathLike[str]) -> Algorithm:
    """Read ``<prefix>.<rank>.et`` for every rank into an :class:`Algorithm`.

    The files are read and decoded a batch of ranks at a time (:func:`._load.load_batches`), so
    the bytes of the whole set are never held at once.
    """
    paths = rank_files(prefix)
    meta_typed: dict[str, TypedValue] = {}
    graphs: list[RankGraph] = []
    for data, bases, sizes, r0 in load_batches(paths, _BATCH_BYTES):
        starts, ends, counts = _frames(data, bases, sizes, paths, r0)
        first = np.concatenate(([0], np.cumsum(counts)))[:-1]
        for k in range(sizes.size):
            rank = r0 + k
            _v, typed = typed_metadata(data, int(starts[first[k]]), int(ends[first[k]]), paths[rank], rank)
            meta_typed = _check_file_meta(typed, meta_typed, paths, rank)
        # drop each file's GlobalMetadata span and decode the nodes
        is_node = np.ones(starts.size, bool)
        is_node[first] = False
        try:
            graphs.extend(decode_ranks(data, starts[is_node], ends[is_node], counts - 1))
        except NodeError as exc:
            rank = r0 + exc.rank
            raise TraceFormatError(str(exc), path=str(paths[rank]), rank=rank, node=exc.node, hint=exc.hint) from None
    meta = _meta_from_attrs({k: tv.value for k, tv in meta_typed.items()}, len(paths), paths[0])
    if P.META.PROFILE not in meta_typed:
        _check_no_profile_nodes(graphs, paths)
    alg = Algorithm(meta, tuple(graphs))
    check_algorithm(alg, paths=paths, ranges=False)  # the decoder checked the ranges of the wire values
    return alg


def _check_file_meta(
    typed: dict[str, TypedValue], first: dict[str, TypedValue], paths: list[Path], rank: int
) -> dict[str, TypedValue]:
    """Check one file's GlobalMetadata (types, agreement with rank 0's, its rank); return rank 0's."""
    path = paths[rank]
    _check_meta_types(typed, path, rank)
    if rank == 0:
        first = typed
    else:
        _check_same_meta(first, typed, paths, rank)
    file_rank = typed[P.META.RANK].value if P.META.RANK in typed else None
    if isinstance(file_rank, int) and file_rank != rank:
        raise TraceFormatError(
            f"GlobalMetadata says this is rank {file_rank}",
            path=str(path),
            rank=rank,
            hint="rank files were renamed or mixed from different outputs",
        )
    return first


def _check_no_profile_nodes(graphs: list[RankGraph], paths: list[Path]) -> None:
    """Nodes with the profile's buffer semantics need the profile's GlobalMetadata: without it
    (a zero-length or damaged first message) the set would silently read as ``custom``."""
    for rank, g in enumerate(graphs):
        has = (g.src_buf >= 0) | (g.dst_buf >= 0)
        if has.any():
            p = int(np.argmax(has))
            raise TraceFormatError(
                "node carries collhub profile attributes (sbuf/dbuf) but the GlobalMetadata has no collhub_profile",
                path=str(paths[rank]),
                rank=rank,
                node=int(g.ids[p]),
                hint="the GlobalMetadata is empty or damaged; rewrite the set",
            )


def read_trace(prefix: str | os.PathLike[str]) -> Algorithm | Workload:
    """Read an algorithm or a workload, whichever the files hold.

    Profile metadata means an algorithm; otherwise rank 0's nodes decide: any COMM_COLL_NODE
    means a workload, else any SEND/RECV means an algorithm, else a workload.
    """
    first = rank_path(prefix, 0)
    data = load(first, 0)
    starts, ends = frame_file(data, first, 0)
    _v, attrs = metadata(data, starts[0], ends[0], first, 0)
    if P.META.PROFILE in attrs:
        return read_algorithm(prefix)
    if P.META.WORKLOAD in attrs:
        return read_workload(prefix)
    kinds = set()
    for s, e in zip(starts[1:], ends[1:], strict=True):
        try:
            kinds.add(decode_node(data, s, e)["type"])
        except WireError as exc:
            raise TraceFormatError(
                f"malformed node message: {exc} (byte {exc.pos})",
                path=str(first),
                rank=0,
                hint="the file is truncated or corrupt",
            ) from None
    if NodeType.COLL in kinds:
        return read_workload(prefix)
    if kinds & {NodeType.SEND, NodeType.RECV}:
        return read_algorithm(prefix)
    return read_workload(prefix)
