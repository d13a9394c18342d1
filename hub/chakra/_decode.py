"""Decoding of one Chakra ET message at a time: ``Node``, ``AttributeProto``, ``GlobalMetadata``.

The general decoder: every field of the schema, packed or unpacked repeated fields, unknown
fields skipped as protobuf does. Workloads are read with it, and it takes the algorithm nodes
the compiled fast path leaves (see :mod:`._ranks`). Malformed bytes raise :class:`WireError`.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

from ._wire import ATTR_FIELDS, FIXED_FORMATS, VARINT_KINDS, TypedValue, WireError, decode_varint

__all__ = ["decode_attr", "decode_global_metadata", "decode_node"]


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


# -- field walking -----------------------------------------------------------------------------
def _fields(buf: bytes | bytearray, pos: int, end: int) -> Iterator[tuple[int, int, Any]]:
    """Yield (field number, wire type, value or (start, end)) for every field in buf[pos:end].

    Keys, small values and lengths are one-byte varints almost always: those are read inline
    (the same bounds as :func:`decode_varint`'s), the rest by it."""
    while pos < end:
        b = buf[pos]
        if b < 0x80:
            key = b
            pos += 1
        else:
            key, pos = decode_varint(buf, pos, end)
        field, wt = key >> 3, key & 7
        if field == 0:
            raise WireError("field number 0", pos)
        if wt == 0:
            if pos < end and buf[pos] < 0x80:
                yield field, 0, buf[pos]
                pos += 1
            else:
                v, pos = decode_varint(buf, pos, end)
                yield field, 0, v
        elif wt == 2:
            if pos < end and buf[pos] < 0x80:
                ln = buf[pos]
                pos += 1
            else:
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


def _text(buf: bytes | bytearray, span: tuple[int, int], pos: int) -> str:
    try:
        return bytes(buf[span[0] : span[1]]).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise WireError("string is not valid UTF-8", pos) from exc


def _packed_varints(buf: bytes | bytearray, span: tuple[int, int]) -> list[int]:
    pos, end = span
    if max(buf[pos:end], default=0) < 0x80:
        return list(buf[pos:end])  # every value one byte (small ids): the bytes are the values
    out = []
    while pos < end:
        b = buf[pos]
        if b < 0x80:
            out.append(b)
            pos += 1
        else:
            v, pos = decode_varint(buf, pos, end)
            out.append(v)
    return out


def _list_values(buf: bytes | bytearray, kind: str, span: tuple[int, int]) -> list[Any]:
    """Decode an XxxList message (``repeated T values = 1``), packed or not."""
    values: list[Any] = []
    for field, wt, val in _fields(buf, span[0], span[1]):
        if field != 1:
            continue  # unknown field: skip like protobuf
        if kind in VARINT_KINDS:
            if wt == 0:
                values.append(_scalar_from_varint(kind, val))
            elif wt == 2:
                values.extend(_scalar_from_varint(kind, v) for v in _packed_varints(buf, val))
        elif kind in FIXED_FORMATS:
            fmt = FIXED_FORMATS[kind]
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


def decode_attr(buf: bytes | bytearray, start: int, end: int) -> tuple[str, TypedValue | None, str]:
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
            elif kind in VARINT_KINDS:
                if wt != 0:
                    raise WireError(f"attribute {fname} has wire type {wt}", start)
                value = TypedValue(fname, _scalar_from_varint(kind, val))
            elif kind in FIXED_FORMATS:
                fmt = FIXED_FORMATS[kind]
                if wt not in (1, 5) or val[1] - val[0] != struct.calcsize(fmt):
                    raise WireError(f"attribute {fname} has wire type {wt}", start)
                value = TypedValue(fname, struct.unpack(fmt, bytes(buf[val[0] : val[1]]))[0])
            elif kind == "str":
                value = TypedValue(fname, _text(buf, val, start))
            else:
                value = TypedValue(fname, bytes(buf[val[0] : val[1]]))
    return name, value, doc


#: the Node fields that are plain varints: field number -> key of decode_node's dict
_NODE_VARINTS = {1: "id", 3: "type", 6: "start_time_micros", 7: "duration_micros"}


def decode_node(buf: bytes | bytearray, start: int, end: int) -> dict[str, Any]:
    """Decode one ``Node`` into a dict with every schema field (absent ones at proto3 defaults).

    Keys: id, name, type, ctrl_deps, data_deps, start_time_micros, duration_micros, inputs,
    outputs (dicts of IOInfo strings or None), attrs (list of (name, TypedValue|None)).
    Unknown fields are skipped, as protobuf does.
    """
    node: dict[str, Any] = {
        "id": 0,
        "name": "",
        "type": 0,
        "ctrl_deps": [],
        "data_deps": [],
        "start_time_micros": 0,
        "duration_micros": 0,
        "inputs": None,
        "outputs": None,
        "attrs": [],
    }
    for field, wt, val in _fields(buf, start, end):
        if field in _NODE_VARINTS and wt == 0:
            node[_NODE_VARINTS[field]] = val if field != 3 else _signed64(val)
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
        elif field in _NODE_VARINTS:
            raise WireError(f"node field {field} has wire type {wt}", start)
    return node


def decode_global_metadata(
    buf: bytes | bytearray, start: int, end: int
) -> tuple[str, list[tuple[str, TypedValue | None]]]:
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
