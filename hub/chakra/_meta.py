"""The GlobalMetadata of a rank file: framed, decoded, typed and checked (the first message).

The metadata of a batch of files is decoded by the compiled pass
(``hub._native._codec.decode_metadata``) where it holds only a version and attributes of the
usual kinds; any other is decoded by the general decoder (:func:`._decode.decode_global_metadata`),
which also says precisely what is wrong. A set's files must state the profile facts of rank 0's.
Every problem is a :class:`hub.errors.TraceFormatError` naming the file and rank.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from .._native import _codec
from ..errors import TraceFormatError
from . import _profile as P
from ._decode import decode_global_metadata
from ._load import load
from ._model import AlgorithmMeta, Collective
from ._wire import ATTR_FIELDS, TypedValue, WireError, decode_varint, frame

__all__ = [
    "SetMetadata",
    "batch_metadata",
    "check_file_meta",
    "first_metadata",
    "frame_file",
    "is_int_value",
    "meta_from_attrs",
    "metadata",
    "read_global_metadata",
    "typed_metadata",
    "typed_of",
]


def frame_file(data: bytes | bytearray, path: Path, rank: int) -> tuple[list[int], list[int]]:
    try:
        return frame(data, empty_nodes=False)
    except WireError as exc:
        raise TraceFormatError(
            f"{exc} (byte {exc.pos})", path=str(path), rank=rank, hint="the file is truncated or corrupt"
        ) from None


def typed_metadata(data: bytes | bytearray, s: int, e: int, path: Path, rank: int) -> tuple[str, dict[str, TypedValue]]:
    try:
        version, attrs = decode_global_metadata(data, s, e)
    except WireError as exc:
        raise TraceFormatError(
            f"malformed GlobalMetadata: {exc} (byte {exc.pos})",
            path=str(path),
            rank=rank,
            hint="the first message of a Chakra ET file must be a GlobalMetadata",
        ) from None
    return version, {name: tv for name, tv in attrs if tv is not None}


def metadata(data: bytes | bytearray, s: int, e: int, path: Path, rank: int) -> tuple[str, dict[str, Any]]:
    version, typed = typed_metadata(data, s, e, path, rank)
    return version, {name: tv.value for name, tv in typed.items()}


def read_global_metadata(path: str | os.PathLike[str]) -> tuple[str, dict[str, Any]]:
    """``(version, attributes)`` of one ET file's GlobalMetadata, everything included (also what
    :func:`read_algorithm` drops, such as a converter's embedded ``input_file``)."""
    path = Path(path)
    data = load(path, None)
    starts, ends = frame_file(data, path, 0)
    if not starts:
        raise TraceFormatError(
            "empty file: no GlobalMetadata",
            path=str(path),
            hint="a Chakra ET file starts with a length-delimited GlobalMetadata",
        )
    return metadata(data, starts[0], ends[0], path, 0)


def first_metadata(path: Path) -> tuple[str, dict[str, TypedValue]]:
    """The GlobalMetadata of rank 0's file (only the first message is framed: the rest of the
    file is framed, and any problem there reported, when its nodes are read)."""
    data = load(path, 0)
    try:
        length, body = decode_varint(data, 0, len(data))
        if body + length > len(data):
            raise WireError(f"message of {length} bytes runs past the end of the data ({len(data) - body} left)", 0)
    except WireError as exc:
        raise TraceFormatError(
            f"{exc} (byte {exc.pos})", path=str(path), rank=0, hint="the file is truncated or corrupt"
        ) from None
    return typed_metadata(data, body, body + length, path, 0)


#: Metadata attributes of foreign writers that are a copy of the source input: not kept.
_DROPPED_META = frozenset({"input_file"})


# -- the profile's metadata --------------------------------------------------------------------------------
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


def meta_from_attrs(attrs: dict[str, Any], ranks: int, path: Path) -> AlgorithmMeta:
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


def check_file_meta(
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


def is_int_value(tv: TypedValue) -> bool:
    return isinstance(tv.value, int) and not isinstance(tv.value, bool) and not tv.field.endswith("_list")


#: AttributeProto oneof field number -> its name (the compiled pass returns numbers)
_FIELD_NAME = {num: name for num, (name, _kind, _list) in ATTR_FIELDS.items()}


def batch_metadata(
    data: bytes | bytearray, starts: np.ndarray, ends: np.ndarray, paths: list[Path], r0: int
) -> list[tuple[tuple[str, int, Any], ...] | dict[str, TypedValue]]:
    """The GlobalMetadata of files r0.. whose first messages are data[starts[k]:ends[k]]: the
    compiled pass's attribute tuples ((name, oneof field number, value), ...) where it took the
    message, else the general decoder's typed attributes."""
    out: list[tuple[tuple[str, int, Any], ...] | dict[str, TypedValue]] = []
    for k, got in enumerate(_codec.decode_metadata(data, starts, ends)):
        if got is not None:
            out.append(got[1])
        else:
            out.append(typed_metadata(data, int(starts[k]), int(ends[k]), paths[r0 + k], r0 + k)[1])
    return out


def typed_of(attrs: tuple[tuple[str, int, Any], ...] | dict[str, TypedValue]) -> dict[str, TypedValue]:
    """Attribute tuples of the compiled pass as typed attributes (the last of a name wins)."""
    if isinstance(attrs, dict):
        return attrs
    return {name: TypedValue(_FIELD_NAME[field], value) for name, field, value in attrs}


class SetMetadata:
    """Checks every file's GlobalMetadata against rank 0's, a file at a time (in rank order)."""

    def __init__(self, paths: list[Path]) -> None:
        self.paths = paths
        self.first: dict[str, TypedValue] = {}
        #: rank 0's attribute tuples before and after its one ``rank`` attribute: a file stating
        #: exactly these around its own rank is checked (rank 0's were); None: check in full
        self._around: tuple[int, tuple[tuple[str, int, Any], ...], tuple[tuple[str, int, Any], ...]] | None = None

    def check(self, attrs: tuple[tuple[str, int, Any], ...] | dict[str, TypedValue], rank: int) -> None:
        around = self._around
        if around is not None and isinstance(attrs, tuple) and len(attrs) > around[0]:
            j, head, tail = around
            mine = attrs[j]
            # the same attributes as rank 0's, and this file's rank (as an integer) where its was
            if mine[0] == P.META.RANK and mine[1] in _INT_FIELDS and mine[2] == rank:
                if attrs[:j] == head and attrs[j + 1 :] == tail:
                    return
        self.first = check_file_meta(typed_of(attrs), self.first, self.paths, rank)
        if rank == 0 and isinstance(attrs, tuple):
            at = [j for j, a in enumerate(attrs) if a[0] == P.META.RANK]
            if len(at) == 1:
                self._around = (at[0], attrs[: at[0]], attrs[at[0] + 1 :])


#: the integer oneof fields (not bool): a ``rank`` in one of these is the file's rank
_INT_FIELDS = frozenset(
    num
    for num, (name, kind, is_list) in ATTR_FIELDS.items()
    if not is_list and kind in ("int32", "int64", "uint32", "uint64", "sint32", "sint64")
)
