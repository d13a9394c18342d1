"""The Chakra ET wire format, hand-written: varints, delimited framing, and a general codec.

This module knows protobuf's encoding of ``et_def.proto`` (field numbers in
``docs/spec/collective-profile.md`` and ``hub/chakra/et_def.proto``) without the protobuf
runtime. The general codec here works on one message at a time and handles every field of the
schema; the vectorized fast paths in :mod:`._writer` and :mod:`._reader` are checked against it.

Errors are raised as :class:`WireError` (an internal exception with a byte offset); the reader
turns them into :class:`hub.errors.TraceFormatError` with the file, rank and node.
"""

from __future__ import annotations

import struct
from typing import Any, NamedTuple

import numpy as np

__all__ = [
    "ATTR_FIELDS",
    "TypedValue",
    "WireError",
    "decode_attr",
    "decode_global_metadata",
    "decode_node",
    "decode_varint",
    "delimit",
    "encode_attr",
    "encode_global_metadata",
    "encode_node",
    "encode_varint",
    "frame",
    "infer_typed",
    "read_varints",
    "varint_matrix",
    "varint_matrix_t",
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
    3: ("double_val", "f64", False), 4: ("double_list", "f64", True),
    5: ("float_val", "f32", False), 6: ("float_list", "f32", True),
    7: ("int32_val", "int32", False), 8: ("int32_list", "int32", True),
    9: ("int64_val", "int64", False), 10: ("int64_list", "int64", True),
    11: ("uint32_val", "uint32", False), 12: ("uint32_list", "uint32", True),
    13: ("uint64_val", "uint64", False), 14: ("uint64_list", "uint64", True),
    15: ("sint32_val", "sint32", False), 16: ("sint32_list", "sint32", True),
    17: ("sint64_val", "sint64", False), 18: ("sint64_list", "sint64", True),
    19: ("fixed32_val", "fixed32", False), 20: ("fixed32_list", "fixed32", True),
    21: ("fixed64_val", "fixed64", False), 22: ("fixed64_list", "fixed64", True),
    23: ("sfixed32_val", "sfixed32", False), 24: ("sfixed32_list", "sfixed32", True),
    25: ("sfixed64_val", "sfixed64", False), 26: ("sfixed64_list", "sfixed64", True),
    27: ("bool_val", "bool", False), 28: ("bool_list", "bool", True),
    29: ("string_val", "str", False), 30: ("string_list", "str", True),
    31: ("bytes_val", "bytes", False), 32: ("bytes_list", "bytes", True),
}
ATTR_FIELD_NUMBER: dict[str, int] = {name: num for num, (name, _k, _l) in ATTR_FIELDS.items()}

_VARINT_KINDS = {"int32", "int64", "uint32", "uint64", "sint32", "sint64", "bool"}
_FIXED = {"fixed32": "<I", "fixed64": "<Q", "sfixed32": "<i", "sfixed64": "<q", "f32": "<f", "f64": "<d"}
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


def decode_varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
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


def _signed64(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def _scalar_from_varint(kind: str, v: int) -> Any:
    if kind == "int32":
        v = _signed64(v)
        # protobuf truncates an int32 read from a wider varint to 32 bits
        v &= 0xFFFFFFFF
        return v - (1 << 32) if v >= 1 << 31 else v
    if kind == "int64":
        return _signed64(v)
    if kind == "uint32":
        return v & 0xFFFFFFFF
    if kind == "uint64":
        return v
    if kind in ("sint32", "sint64"):
        return (v >> 1) ^ -(v & 1)
    if kind == "bool":
        return v != 0
    raise AssertionError(kind)


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


def frame(buf: bytes, start: int = 0, *, empty_nodes: bool = True) -> tuple[list[int], list[int]]:
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


# -- field walking -----------------------------------------------------------------------------
def _fields(buf: bytes, pos: int, end: int):
    """Yield (field number, wire type, value or (start, end)) for every field in buf[pos:end]."""
    while pos < end:
        key, pos = decode_varint(buf, pos, end)
        field, wt = key >> 3, key & 7
        if field == 0:
            raise WireError("field number 0", pos)
        if wt == 0:
            v, pos = decode_varint(buf, pos, end)
            yield field, 0, v
        elif wt == 2:
            ln, pos = decode_varint(buf, pos, end)
            if pos + ln > end:
                raise WireError(f"field {field} of {ln} bytes runs past its message", pos)
            yield field, 2, (pos, pos + ln)
            pos += ln
        elif wt == 1:
            if pos + 8 > end:
                raise WireError(f"field {field} (64-bit) runs past its message", pos)
            yield field, 1, (pos, pos + 8)
            pos += 8
        elif wt == 5:
            if pos + 4 > end:
                raise WireError(f"field {field} (32-bit) runs past its message", pos)
            yield field, 5, (pos, pos + 4)
            pos += 4
        else:
            # groups (3/4) are not used by proto3 and 6/7 do not exist
            raise WireError(f"unsupported wire type {wt} for field {field}", pos)


def _text(buf: bytes, span: tuple[int, int], pos: int) -> str:
    try:
        return bytes(buf[span[0] : span[1]]).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise WireError("string is not valid UTF-8", pos) from exc


def _packed_varints(buf: bytes, span: tuple[int, int]) -> list[int]:
    out = []
    pos, end = span
    while pos < end:
        v, pos = decode_varint(buf, pos, end)
        out.append(v)
    return out


def _list_values(buf: bytes, kind: str, span: tuple[int, int]) -> list[Any]:
    """Decode an XxxList message (``repeated T values = 1``), packed or not."""
    values: list[Any] = []
    for field, wt, val in _fields(buf, span[0], span[1]):
        if field != 1:
            continue  # unknown field: skip like protobuf
        if kind in _VARINT_KINDS:
            if wt == 0:
                values.append(_scalar_from_varint(kind, val))
            elif wt == 2:
                values.extend(_scalar_from_varint(kind, v) for v in _packed_varints(buf, val))
        elif kind in _FIXED:
            fmt = _FIXED[kind]
            size = struct.calcsize(fmt)
            s, e = val if wt != 0 else (0, 0)
            if (e - s) % size:
                raise WireError(f"packed {kind} list has {e - s} bytes", s)
            values.extend(x[0] for x in struct.iter_unpack(fmt, bytes(buf[s:e])))
        elif kind == "str" and wt == 2:
            values.append(_text(buf, val, val[0]))
        elif kind == "bytes" and wt == 2:
            values.append(bytes(buf[val[0] : val[1]]))
    return values


def decode_attr(buf: bytes, start: int, end: int) -> tuple[str, TypedValue | None, str]:
    """Decode one ``AttributeProto``: (name, typed value or None if no oneof is set, doc_string)."""
    name = ""
    doc = ""
    value: TypedValue | None = None
    for field, wt, val in _fields(buf, start, end):
        if field == 1 and wt == 2:
            name = _text(buf, val, start)
        elif field == 2 and wt == 2:
            doc = _text(buf, val, start)
        elif field in ATTR_FIELDS:
            fname, kind, is_list = ATTR_FIELDS[field]
            if is_list:
                if wt != 2:
                    raise WireError(f"attribute list {fname} has wire type {wt}", start)
                value = TypedValue(fname, _list_values(buf, kind, val))
            elif kind in _VARINT_KINDS:
                if wt != 0:
                    raise WireError(f"attribute {fname} has wire type {wt}", start)
                value = TypedValue(fname, _scalar_from_varint(kind, val))
            elif kind in _FIXED:
                fmt = _FIXED[kind]
                if wt not in (1, 5) or val[1] - val[0] != struct.calcsize(fmt):
                    raise WireError(f"attribute {fname} has wire type {wt}", start)
                value = TypedValue(fname, struct.unpack(fmt, bytes(buf[val[0] : val[1]]))[0])
            elif kind == "str":
                value = TypedValue(fname, _text(buf, val, start))
            else:
                value = TypedValue(fname, bytes(buf[val[0] : val[1]]))
    return name, value, doc


def decode_node(buf: bytes, start: int, end: int) -> dict[str, Any]:
    """Decode one ``Node`` into a dict with every schema field (absent ones at proto3 defaults).

    Keys: id, name, type, ctrl_deps, data_deps, start_time_micros, duration_micros, inputs,
    outputs (dicts of IOInfo strings or None), attrs (list of (name, TypedValue|None)).
    Unknown fields are skipped, as protobuf does.
    """
    node: dict[str, Any] = {
        "id": 0, "name": "", "type": 0, "ctrl_deps": [], "data_deps": [], "start_time_micros": 0,
        "duration_micros": 0, "inputs": None, "outputs": None, "attrs": [],
    }
    for field, wt, val in _fields(buf, start, end):
        if field in (1, 3, 6, 7) and wt == 0:
            key = {1: "id", 3: "type", 6: "start_time_micros", 7: "duration_micros"}[field]
            node[key] = val if field != 3 else _signed64(val)
        elif field == 2 and wt == 2:
            node["name"] = _text(buf, val, start)
        elif field in (4, 5):
            key = "ctrl_deps" if field == 4 else "data_deps"
            if wt == 0:
                node[key].append(val)
            elif wt == 2:
                node[key].extend(_packed_varints(buf, val))
        elif field in (8, 9) and wt == 2:
            io = {"values": "", "shapes": "", "types": ""}
            for f2, w2, v2 in _fields(buf, val[0], val[1]):
                if f2 in (1, 2, 3) and w2 == 2:
                    io[("values", "shapes", "types")[f2 - 1]] = _text(buf, v2, val[0])
            node["inputs" if field == 8 else "outputs"] = io
        elif field == 10 and wt == 2:
            name, value, _doc = decode_attr(buf, val[0], val[1])
            node["attrs"].append((name, value))
        elif field in (1, 3, 6, 7):
            raise WireError(f"node field {field} has wire type {wt}", start)
    return node


def decode_global_metadata(buf: bytes, start: int, end: int) -> tuple[str, list[tuple[str, TypedValue | None]]]:
    """Decode a ``GlobalMetadata``: (version, attrs)."""
    version = ""
    attrs: list[tuple[str, TypedValue | None]] = []
    for field, wt, val in _fields(buf, start, end):
        if field == 1 and wt == 2:
            version = _text(buf, val, start)
        elif field == 2 and wt == 2:
            name, value, _doc = decode_attr(buf, val[0], val[1])
            attrs.append((name, value))
    return version, attrs


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
    if kind in _VARINT_KINDS:
        return 0, _varint_of_scalar(kind, v)
    if kind in _FIXED:
        fmt = _FIXED[kind]
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
        if kind in _VARINT_KINDS:
            packed = b"".join(_varint_of_scalar(kind, x) for x in tv.value)
            inner = _len_field(1, packed) if packed else b""
        elif kind in _FIXED:
            packed = b"".join(struct.pack(_FIXED[kind], x) for x in tv.value)
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
            inner = b"".join(_len_field(i + 1, io[k].encode())
                             for i, k in enumerate(("values", "shapes", "types")) if io.get(k))
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


# -- vectorized helpers ------------------------------------------------------------------------
_SHIFTS = np.arange(0, 70, 7, dtype=np.uint64)


def _varint_lengths(v: np.ndarray) -> tuple[np.ndarray, int]:
    """Encoded length of each uint64 in ``v`` and the longest one (1..10)."""
    lens = np.ones(v.shape[0], np.int64)
    rest = v >> np.uint64(7)
    width = 1
    while width < 10 and rest.any():
        lens += rest != 0
        rest = rest >> np.uint64(7)
        width += 1
    return lens, width


def varint_matrix(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Varint-encode an integer array at once: a (n, w) uint8 matrix and each row's length.

    ``w`` is the longest encoding present (at most 10). Negative values are encoded as 64-bit
    two's complement (10 bytes), like protobuf's int32/int64.
    """
    v = np.asarray(values).astype(np.int64).view(np.uint64)
    lens, width = _varint_lengths(v)
    groups = ((v[:, None] >> _SHIFTS[None, :width]) & np.uint64(0x7F)).astype(np.uint8)
    if width > 1:
        cont = np.arange(width)[None, :] < (lens[:, None] - 1)
        groups |= cont.astype(np.uint8) << 7
    return groups, lens


def varint_matrix_t(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`varint_matrix`, transposed: a (w, n) matrix (one row per byte position)."""
    v = np.asarray(values).astype(np.int64)
    if v.size > 64:
        lo, hi = int(v.min()), int(v.max())
        if hi - lo < v.size // 2:
            # few distinct values (peers, tags, buffers...): encode the range once and gather
            table, tlens = varint_matrix_t(np.arange(lo, hi + 1, dtype=np.int64))
            idx = v - lo
            return table[:, idx], tlens[idx]
    v = v.view(np.uint64)
    lens, width = _varint_lengths(v)
    groups = ((v[None, :] >> _SHIFTS[:width, None]) & np.uint64(0x7F)).astype(np.uint8)
    if width > 1:
        groups |= (np.arange(width)[:, None] < (lens[None, :] - 1)).astype(np.uint8) << 7
    return groups, lens


def read_varints(buf: np.ndarray, pos: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Decode one varint at each position of ``pos`` in the uint8 array ``buf``.

    ``buf`` must carry at least 10 bytes of padding after the data. Returns (values as uint64,
    lengths, ok) where ok is False for a varint longer than 10 bytes or one crossing ``end``.
    Work is proportional to the bytes actually read: longer varints are followed on a shrinking
    subset.
    """
    b = buf[pos]
    val = (b & 0x7F).astype(np.uint64)
    lens = np.ones(pos.shape[0], np.int64)
    more = np.flatnonzero(b >= 0x80)
    k = 1
    while more.size and k < 10:
        b = buf[pos[more] + k]
        val[more] |= (b & 0x7F).astype(np.uint64) << np.uint64(7 * k)
        lens[more] += 1
        more = more[b >= 0x80]
        k += 1
    ok = pos + lens <= end
    if more.size:
        ok[more] = False
    return val, lens, ok
