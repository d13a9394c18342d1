"""Chakra ET encoding with exactly the attribute wire types ASTRA-sim reads.

ASTRA-sim's legacy feeder reads each attribute from one fixed protobuf ``oneof`` field and reads
a value stored anywhere else as 0; feeder_v3 (master) converts between integer fields. The
typing that works on both (``chakra-et.md`` §4.3) is fixed here, field by field, instead of being
left to a general writer: ``comm_size`` int64, ``comm_src``/``comm_dst``/``comm_tag`` int32,
``comm_type`` int64, ``is_cpu_op`` bool, ``involved_dim`` bool list, ``pg_name`` string.

The encoder writes protobuf's wire format directly (proto3 rules: scalar fields equal to their
default are omitted, repeated scalars are packed), which is byte-identical to what
``SerializeToString`` of MLCommons' ``et_def_pb2`` produces for the same message. A file is a
sequence of varint-length-delimited messages: one ``GlobalMetadata`` and then the ``Node``s.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Any, Iterable, Sequence

__all__ = ["Attr", "encode_attr", "encode_global_metadata", "encode_node", "read_global_metadata", "write_et"]

# AttributeProto oneof field numbers and their protobuf wire encodings (et_def.proto).
_SCALAR_FIELDS: dict[str, tuple[int, str]] = {
    "double_val": (3, "double"),
    "float_val": (5, "float"),
    "int32_val": (7, "varint_signed"),
    "int64_val": (9, "varint_signed"),
    "uint32_val": (11, "varint"),
    "uint64_val": (13, "varint"),
    "bool_val": (27, "varint"),
    "string_val": (29, "bytes"),
    "bytes_val": (31, "bytes"),
}
_LIST_FIELDS: dict[str, tuple[int, str]] = {
    "int32_list": (8, "varint_signed"),
    "int64_list": (10, "varint_signed"),
    "uint64_list": (14, "varint"),
    "bool_list": (28, "varint"),
    "string_list": (30, "bytes"),
}

#: One attribute: (name, oneof field, value).
Attr = tuple[str, str, Any]


def _varint(value: int) -> bytes:
    if value < 0:  # proto int32/int64: two's complement as a 10-byte varint
        value += 1 << 64
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def _key(field: int, wire_type: int) -> bytes:
    return _varint((field << 3) | wire_type)


def _len_delimited(field: int, payload: bytes) -> bytes:
    return _key(field, 2) + _varint(len(payload)) + payload


def _scalar(field: int, kind: str, value: Any) -> bytes:
    if kind in ("varint", "varint_signed"):
        return _key(field, 0) + _varint(int(value))
    if kind == "double":
        return _key(field, 1) + struct.pack("<d", float(value))
    if kind == "float":
        return _key(field, 5) + struct.pack("<f", float(value))
    data = value.encode() if isinstance(value, str) else bytes(value)
    return _len_delimited(field, data)


def encode_attr(name: str, field: str, value: Any) -> bytes:
    """One ``AttributeProto`` (without its enclosing key): ``name`` plus one oneof value.

    A oneof member is always written, even when it holds its default (``bool_val`` false), because
    oneof fields have presence: the reader must see *which* field carries the value.
    """
    body = _len_delimited(1, name.encode())
    if field in _SCALAR_FIELDS:
        number, kind = _SCALAR_FIELDS[field]
        body += _scalar(number, kind, value)
    elif field in _LIST_FIELDS:
        number, kind = _LIST_FIELDS[field]
        if kind == "bytes":  # StringList { repeated string values = 1; }
            inner = b"".join(_scalar(1, "bytes", v) for v in value)
        else:  # XxxList { repeated <scalar> values = 1 [packed]; }
            packed = b"".join(_varint(int(v)) for v in value)
            inner = _len_delimited(1, packed) if packed else b""
        body += _len_delimited(number, inner)
    else:
        raise ValueError(f"unsupported attribute field {field!r} for {name!r}")
    return body


def encode_node(
    node_id: int,
    name: str,
    node_type: int,
    *,
    data_deps: Sequence[int] = (),
    duration_micros: int = 0,
    attrs: Iterable[Attr] = (),
) -> bytes:
    """One ``Node`` message (fields id=1, name=2, type=3, data_deps=5, duration_micros=7, attr=10).

    Every dependency goes into ``data_deps``: the legacy feeder ignores ``ctrl_deps`` and
    feeder_v3 reads both.
    """
    out = bytearray()
    if node_id:
        out += _key(1, 0) + _varint(node_id)
    if name:
        out += _len_delimited(2, name.encode())
    if node_type:
        out += _key(3, 0) + _varint(node_type)
    if len(data_deps):
        out += _len_delimited(5, b"".join(_varint(int(d)) for d in data_deps))
    if duration_micros:
        out += _key(7, 0) + _varint(duration_micros)
    for attr_name, field, value in attrs:
        out += _len_delimited(10, encode_attr(attr_name, field, value))
    return bytes(out)


def encode_global_metadata(version: str = "", attrs: Iterable[Attr] = ()) -> bytes:
    """A ``GlobalMetadata`` message (version=1, attr=2)."""
    out = bytearray()
    if version:
        out += _len_delimited(1, version.encode())
    for attr_name, field, value in attrs:
        out += _len_delimited(2, encode_attr(attr_name, field, value))
    return bytes(out)


def write_et(path: Path, metadata: bytes, nodes: Iterable[bytes], *, body: bytes = b"") -> None:
    """Write one ``.et`` file: the delimited metadata, then the delimited nodes (temp file + rename).

    ``body`` is appended as is: nodes already encoded with their length prefixes.
    """
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    with open(tmp, "wb") as fh:
        fh.write(_varint(len(metadata)) + metadata)
        fh.write(body)
        buf = bytearray()
        for node in nodes:
            buf += _varint(len(node))
            buf += node
            if len(buf) > 1 << 20:
                fh.write(buf)
                buf.clear()
        fh.write(buf)
    os.replace(tmp, path)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise ValueError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint longer than 10 bytes")


def _fields(data: bytes) -> Iterable[tuple[int, int, Any]]:
    """(field number, wire type, value) of one message; length-delimited values as bytes."""
    pos = 0
    while pos < len(data):
        key, pos = _read_varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _read_varint(data, pos)
        elif wire == 1:
            value, pos = data[pos : pos + 8], pos + 8
        elif wire == 2:
            length, pos = _read_varint(data, pos)
            value, pos = data[pos : pos + length], pos + length
        elif wire == 5:
            value, pos = data[pos : pos + 4], pos + 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        yield number, wire, value


def read_global_metadata(path: Path) -> tuple[str, dict[str, Any]]:
    """The ``version`` and the string/integer attributes of an ``.et`` file's GlobalMetadata.

    Only the first message is decoded, so this is cheap even for large files.
    """
    with open(path, "rb") as fh:
        head = fh.read(10)
        length, start = _read_varint(head, 0)
        data = head[start:] + fh.read(max(length - (len(head) - start), 0))
    data = data[:length]
    if len(data) != length:
        raise ValueError("truncated GlobalMetadata")
    version = ""
    attrs: dict[str, Any] = {}
    for number, _wire, value in _fields(data):
        if number == 1:
            version = bytes(value).decode(errors="replace")
        elif number == 2:
            name, val = "", None
            for n2, w2, v2 in _fields(bytes(value)):
                if n2 == 1:
                    name = bytes(v2).decode(errors="replace")
                elif n2 == 29:
                    val = bytes(v2).decode(errors="replace")
                elif w2 == 0 and n2 in (7, 9, 11, 13):
                    val = v2 - (1 << 64) if n2 in (7, 9) and v2 >= 1 << 63 else v2
            if name:
                attrs[name] = val
    return version, attrs
