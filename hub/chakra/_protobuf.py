"""Protobuf message classes for ``et_def.proto``, built at run time (no protoc, no gencode).

This is collhub's slow, reference path: :func:`messages` returns classes from a *private*
descriptor pool, so they never clash with another ``ChakraProtoMsg`` package (e.g. mlc-chakra's
generated module) loaded in the same process. The field table mirrors ``et_def.proto`` beside
this file. protobuf is imported only when this is called.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from ._wire import ATTR_FIELDS

__all__ = ["messages"]

_SCALAR_TYPES = {
    "f64": "TYPE_DOUBLE",
    "f32": "TYPE_FLOAT",
    "int32": "TYPE_INT32",
    "int64": "TYPE_INT64",
    "uint32": "TYPE_UINT32",
    "uint64": "TYPE_UINT64",
    "sint32": "TYPE_SINT32",
    "sint64": "TYPE_SINT64",
    "fixed32": "TYPE_FIXED32",
    "fixed64": "TYPE_FIXED64",
    "sfixed32": "TYPE_SFIXED32",
    "sfixed64": "TYPE_SFIXED64",
    "bool": "TYPE_BOOL",
    "str": "TYPE_STRING",
    "bytes": "TYPE_BYTES",
}
_LIST_NAMES = {
    "f64": "DoubleList",
    "f32": "FloatList",
    "int32": "Int32List",
    "int64": "Int64List",
    "uint32": "Uint32List",
    "uint64": "Uint64List",
    "sint32": "Sint32List",
    "sint64": "Sint64List",
    "fixed32": "Fixed32List",
    "fixed64": "Fixed64List",
    "sfixed32": "Sfixed32List",
    "sfixed64": "Sfixed64List",
    "bool": "BoolList",
    "str": "StringList",
    "bytes": "BytesList",
}


@lru_cache(maxsize=1)
def messages() -> dict[str, Any]:
    """Message classes by name: ``Node``, ``GlobalMetadata``, ``AttributeProto``, ``IOInfo``, lists."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    F = descriptor_pb2.FieldDescriptorProto
    fd = descriptor_pb2.FileDescriptorProto(name="collhub_et_def.proto", package="ChakraProtoMsg", syntax="proto3")

    def add_field(
        msg: Any,
        name: str,
        number: int,
        ftype: str,
        *,
        repeated: bool = False,
        type_name: str | None = None,
        oneof: int | None = None,
    ) -> None:
        f = msg.field.add(
            name=name, number=number, type=getattr(F, ftype), label=F.LABEL_REPEATED if repeated else F.LABEL_OPTIONAL
        )
        if type_name:
            f.type_name = f".ChakraProtoMsg.{type_name}"
        if oneof is not None:
            f.oneof_index = oneof

    for kind, list_name in _LIST_NAMES.items():
        add_field(fd.message_type.add(name=list_name), "values", 1, _SCALAR_TYPES[kind], repeated=True)
    attr = fd.message_type.add(name="AttributeProto")
    add_field(attr, "name", 1, "TYPE_STRING")
    add_field(attr, "doc_string", 2, "TYPE_STRING")
    attr.oneof_decl.add(name="value")
    for number, (fname, kind, is_list) in sorted(ATTR_FIELDS.items()):
        if is_list:
            add_field(attr, fname, number, "TYPE_MESSAGE", type_name=_LIST_NAMES[kind], oneof=0)
        else:
            add_field(attr, fname, number, _SCALAR_TYPES[kind], oneof=0)
    gm = fd.message_type.add(name="GlobalMetadata")
    add_field(gm, "version", 1, "TYPE_STRING")
    add_field(gm, "attr", 2, "TYPE_MESSAGE", repeated=True, type_name="AttributeProto")
    io = fd.message_type.add(name="IOInfo")
    for i, name in enumerate(("values", "shapes", "types")):
        add_field(io, name, i + 1, "TYPE_STRING")
    nt = fd.enum_type.add(name="NodeType")
    for i, name in enumerate(
        (
            "INVALID_NODE",
            "METADATA_NODE",
            "MEM_LOAD_NODE",
            "MEM_STORE_NODE",
            "COMP_NODE",
            "COMM_SEND_NODE",
            "COMM_RECV_NODE",
            "COMM_COLL_NODE",
        )
    ):
        nt.value.add(name=name, number=i)
    node = fd.message_type.add(name="Node")
    add_field(node, "id", 1, "TYPE_UINT64")
    add_field(node, "name", 2, "TYPE_STRING")
    add_field(node, "type", 3, "TYPE_ENUM", type_name="NodeType")
    add_field(node, "ctrl_deps", 4, "TYPE_UINT64", repeated=True)
    add_field(node, "data_deps", 5, "TYPE_UINT64", repeated=True)
    add_field(node, "start_time_micros", 6, "TYPE_UINT64")
    add_field(node, "duration_micros", 7, "TYPE_UINT64")
    add_field(node, "inputs", 8, "TYPE_MESSAGE", type_name="IOInfo")
    add_field(node, "outputs", 9, "TYPE_MESSAGE", type_name="IOInfo")
    add_field(node, "attr", 10, "TYPE_MESSAGE", repeated=True, type_name="AttributeProto")

    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    names = [*_LIST_NAMES.values(), "AttributeProto", "GlobalMetadata", "IOInfo", "Node"]
    return {n: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"ChakraProtoMsg.{n}")) for n in names}
