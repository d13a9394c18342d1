"""The Chakra ET wire format, hand-written: varints, delimited framing, and message encoding.

This module knows protobuf's encoding of ``et_def.proto`` (field numbers in
``docs/spec/collective-profile.md`` and ``hub/chakra/et_def.proto``) without the protobuf
runtime: the primitives (varints, keys, length-delimited framing), the oneof typing of
attribute values, and the general encoder of one message at a time, which handles every field
of the schema (workloads, GlobalMetadata, names and foreign attributes of algorithm nodes).
Decoding one message is :mod:`._decode`; whole rank graphs are :mod:`._encode` / :mod:`._ranks`.

Errors are raised as :class:`WireError` (an internal exception with a byte offset); the reader
turns them into :class:`hub.errors.TraceFormatError` with the file, rank and node.
"""

from __future__ import annotations

import struct
from typing import Any, NamedTuple

import numpy as np

__all__ = [
    "ATTR_FIELDS",
    "FIXED_FORMATS",
    "VARINT_KINDS",
    "TypedValue",
    "WireError",
    "decode_varint",
    "delimit",
    "encode_attr",
    "encode_global_metadata",
    "encode_node",
    "encode_varint",
    "frame",
    "infer_typed",
]


class WireError(Exception):
    """A malformed byte sequence; ``pos`` is the byte offset in the buffer being decoded."""

    def __init__(self, message: str, pos: int) -> None:
        super().__init__(message)
        self.pos = pos


class TypedValue(NamedTuple):
    """An attribute value together with the ``AttributeProto`` oneof field that holds it.

    ``field`` is a oneof name such as ``"int32_val"`` or ``"bool_list"``; list values are
    Python lists. Keeping the field lets foreign attributes round-trip with their exact typing.
    """

    field: str
    value: Any


# AttributeProto oneof: field number -> (name, scalar kind, is_list).
# Scalar kinds: varint (int32/int64/uint32/uint64 with their own ranges), zigzag, bool,
# f32/f64 (float/double), fixed32/fixed64/sfixed32/sfixed64, str, bytes.
ATTR_FIELDS: dict[int, tuple[str, str, bool]] = {
    3: ("double_val", "f64", False),
    4: ("double_list", "f64", True),
    5: ("float_val", "f32", False),
    6: ("float_list", "f32", True),
    7: ("int32_val", "int32", False),
    8: ("int32_list", "int32", True),
    9: ("int64_val", "int64", False),
    10: ("int64_list", "int64", True),
    11: ("uint32_val", "uint32", False),
    12: ("uint32_list", "uint32", True),
    13: ("uint64_val", "uint64", False),
    14: ("uint64_list", "uint64", True),
    15: ("sint32_val", "sint32", False),
    16: ("sint32_list", "sint32", True),
    17: ("sint64_val", "sint64", False),
    18: ("sint64_list", "sint64", True),
    19: ("fixed32_val", "fixed32", False),
    20: ("fixed32_list", "fixed32", True),
    21: ("fixed64_val", "fixed64", False),
    22: ("fixed64_list", "fixed64", True),
    23: ("sfixed32_val", "sfixed32", False),
    24: ("sfixed32_list", "sfixed32", True),
    25: ("sfixed64_val", "sfixed64", False),
    26: ("sfixed64_list", "sfixed64", True),
    27: ("bool_val", "bool", False),
    28: ("bool_list", "bool", True),
    29: ("string_val", "str", False),
    30: ("string_list", "str", True),
    31: ("bytes_val", "bytes", False),
    32: ("bytes_list", "bytes", True),
}
ATTR_FIELD_NUMBER: dict[str, int] = {name: num for num, (name, _k, _l) in ATTR_FIELDS.items()}

VARINT_KINDS = {"int32", "int64", "uint32", "uint64", "sint32", "sint64", "bool"}
FIXED_FORMATS = {"fixed32": "<I", "fixed64": "<Q", "sfixed32": "<i", "sfixed64": "<q", "f32": "<f", "f64": "<d"}
_MASK64 = (1 << 64) - 1


# -- varints -----------------------------------------------------------------------------------
def encode_varint(value: int) -> bytes:
    """Base-128 varint; negative values are written as 64-bit two's complement (10 bytes),
    exactly as protobuf writes a negative int32/int64."""
    value &= _MASK64
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def decode_varint(buf: bytes | bytearray, pos: int, end: int) -> tuple[int, int]:
    """Decode an unsigned varint at ``pos``; return (value, position after it).

    At most 10 bytes are read; a longer or cut varint raises :class:`WireError`.
    """
    result = 0
    shift = 0
    start = pos
    while True:
        if pos >= end:
            raise WireError("varint cut off by the end of the data", start)
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result & _MASK64, pos
        shift += 7
        if shift >= 70:
            raise WireError("varint longer than 10 bytes", start)


def _varint_of_scalar(kind: str, v: Any) -> bytes:
    if kind in ("sint32", "sint64"):
        v = int(v)
        bits = 32 if kind == "sint32" else 64
        return encode_varint(((v << 1) ^ (v >> (bits - 1))) & _MASK64)
    if kind == "bool":
        return b"\x01" if v else b"\x00"
    return encode_varint(int(v))


# -- framing -----------------------------------------------------------------------------------
def delimit(body: bytes) -> bytes:
    """A varint length prefix followed by ``body`` (protobuf's delimited stream format)."""
    return encode_varint(len(body)) + body


def frame(buf: bytes | bytearray, start: int = 0, *, empty_nodes: bool = True) -> tuple[list[int], list[int]]:
    """Split a delimited stream into message spans; return (starts, ends) of the bodies.

    Raises :class:`WireError` when a length varint is bad or a message runs past the end, and
    without ``empty_nodes`` when a message after the first (the GlobalMetadata, which may be
    empty) is empty: an empty Node has type 0, which no reader accepts, and a run of zero bytes
    (a sparse or zeroed file) would otherwise be framed one byte at a time.
    """
    starts: list[int] = []
    ends: list[int] = []
    add_s = starts.append
    add_e = ends.append
    pos = start
    n = len(buf)
    while pos < n:
        b = buf[pos]
        if b < 0x80:  # the common case: a body shorter than 128 bytes
            body = pos + 1
            length = b
        elif pos + 1 < n and buf[pos + 1] < 0x80:
            body = pos + 2
            length = (b & 0x7F) | (buf[pos + 1] << 7)
        else:
            length, body = decode_varint(buf, pos, n)
        end = body + length
        if end > n:
            raise WireError(f"message of {length} bytes runs past the end of the data ({n - body} left)", pos)
        if length == 0 and starts and not empty_nodes:
            raise WireError("empty message after the GlobalMetadata (a Node has at least a type)", pos)
        add_s(body)
        add_e(end)
        pos = end
    return starts, ends


# -- encoding ----------------------------------------------------------------------------------
def _key(field: int, wt: int) -> bytes:
    return encode_varint((field << 3) | wt)


def _len_field(field: int, payload: bytes) -> bytes:
    return _key(field, 2) + encode_varint(len(payload)) + payload


def infer_typed(value: Any) -> TypedValue:
    """The oneof field for a plain Python value: bool, int (int64), float (double), str, bytes,
    or a homogeneous list of those."""
    if isinstance(value, TypedValue):
        return value
    if isinstance(value, bool):
        return TypedValue("bool_val", value)
    if isinstance(value, (int, np.integer)):
        return TypedValue("int64_val", int(value))
    if isinstance(value, (float, np.floating)):
        return TypedValue("double_val", float(value))
    if isinstance(value, str):
        return TypedValue("string_val", value)
    if isinstance(value, (bytes, bytearray)):
        return TypedValue("bytes_val", bytes(value))
    if isinstance(value, (list, tuple)):
        items = list(value)
        if all(isinstance(x, bool) for x in items):
            return TypedValue("bool_list", items)
        if all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in items):
            return TypedValue("int64_list", [int(x) for x in items])
        if all(isinstance(x, (int, float)) for x in items):
            return TypedValue("double_list", [float(x) for x in items])
        if all(isinstance(x, str) for x in items):
            return TypedValue("string_list", items)
        if all(isinstance(x, (bytes, bytearray)) for x in items):
            return TypedValue("bytes_list", [bytes(x) for x in items])
    raise TypeError(f"cannot store {type(value).__name__} value {value!r} in a Chakra attribute")


def _encode_scalar(kind: str, v: Any) -> tuple[int, bytes]:
    """(wire type, payload) of one scalar."""
    if kind in VARINT_KINDS:
        return 0, _varint_of_scalar(kind, v)
    if kind in FIXED_FORMATS:
        fmt = FIXED_FORMATS[kind]
        return (5 if struct.calcsize(fmt) == 4 else 1), struct.pack(fmt, v)
    if kind == "str":
        return 2, encode_varint(len(v.encode())) + v.encode()
    return 2, encode_varint(len(v)) + bytes(v)


def encode_attr(name: str, value: Any, doc_string: str = "") -> bytes:
    """The bytes of one ``AttributeProto`` body (without its own key/length)."""
    tv = infer_typed(value)
    num = ATTR_FIELD_NUMBER[tv.field]
    _fname, kind, is_list = ATTR_FIELDS[num]
    out = _len_field(1, name.encode()) if name else b""
    if doc_string:
        out += _len_field(2, doc_string.encode())
    if is_list:
        if kind in VARINT_KINDS:
            packed = b"".join(_varint_of_scalar(kind, x) for x in tv.value)
            inner = _len_field(1, packed) if packed else b""
        elif kind in FIXED_FORMATS:
            packed = b"".join(struct.pack(FIXED_FORMATS[kind], x) for x in tv.value)
            inner = _len_field(1, packed) if packed else b""
        else:
            inner = b"".join(_len_field(1, x.encode() if kind == "str" else bytes(x)) for x in tv.value)
        out += _len_field(num, inner)
    else:
        wt, payload = _encode_scalar(kind, tv.value)
        out += _key(num, wt) + payload
    return out


def encode_node(
    *,
    id: int = 0,
    name: str = "",
    type: int = 0,
    ctrl_deps: list[int] | tuple[int, ...] = (),
    data_deps: list[int] | tuple[int, ...] = (),
    start_time_micros: int = 0,
    duration_micros: int = 0,
    inputs: dict[str, str] | None = None,
    outputs: dict[str, str] | None = None,
    attrs: list[tuple[str, Any]] | tuple[tuple[str, Any], ...] = (),
) -> bytes:
    """The body of one ``Node``, fields in field-number order with proto3 defaults omitted
    (byte-identical to protobuf's own serializer for the same content)."""
    out = bytearray()
    if id:
        out += b"\x08" + encode_varint(id)
    if name:
        out += _len_field(2, name.encode())
    if type:
        out += b"\x18" + encode_varint(type)
    if ctrl_deps:
        out += _len_field(4, b"".join(encode_varint(d) for d in ctrl_deps))
    if data_deps:
        out += _len_field(5, b"".join(encode_varint(d) for d in data_deps))
    if start_time_micros:
        out += b"\x30" + encode_varint(start_time_micros)
    if duration_micros:
        out += b"\x38" + encode_varint(duration_micros)
    for num, io in ((8, inputs), (9, outputs)):
        if io is not None:
            keys = ("values", "shapes", "types")
            inner = b"".join(_len_field(i + 1, io[k].encode()) for i, k in enumerate(keys) if io.get(k))
            out += _len_field(num, inner)
    for aname, value in attrs:
        out += _len_field(10, encode_attr(aname, value))
    return bytes(out)


def encode_global_metadata(version: str, attrs: list[tuple[str, Any]] | tuple[tuple[str, Any], ...] = ()) -> bytes:
    """The body of a ``GlobalMetadata``."""
    out = _len_field(1, version.encode()) if version else b""
    for aname, value in attrs:
        out += _len_field(2, encode_attr(aname, value))
    return out
