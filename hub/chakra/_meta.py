"""The GlobalMetadata of a rank file: framed, decoded and typed (the first message of a file).

Every problem is a :class:`hub.errors.TraceFormatError` naming the file and rank.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..errors import TraceFormatError
from ._decode import decode_global_metadata
from ._load import load
from ._wire import TypedValue, WireError, frame

__all__ = ["first_metadata", "frame_file", "is_int_value", "metadata", "read_global_metadata", "typed_metadata"]


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


def first_metadata(path: Path) -> tuple[str, dict[str, TypedValue], bytes, list[int], list[int]]:
    data = load(path, 0)
    starts, ends = frame_file(data, path, 0)
    version, typed = typed_metadata(data, starts[0], ends[0], path, 0)
    return version, typed, data, starts, ends


def is_int_value(tv: TypedValue) -> bool:
    return isinstance(tv.value, int) and not isinstance(tv.value, bool) and not tv.field.endswith("_list")
