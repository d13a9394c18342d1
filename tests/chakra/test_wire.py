"""The hand-written wire codec against hand-derived bytes and protobuf's own serializer."""

from __future__ import annotations

import pytest

from hub.chakra import TypedValue
from hub.chakra._decode import decode_attr, decode_node
from hub.chakra._protobuf import messages
from hub.chakra._wire import WireError, decode_varint, encode_attr, encode_node, encode_varint, frame


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (0, b"\x00"),
        (1, b"\x01"),
        (127, b"\x7f"),
        (128, b"\x80\x01"),
        (300, b"\xac\x02"),  # the protobuf documentation's example
        (131072, b"\x80\x80\x08"),
        (26714, b"\xda\xd0\x01"),  # ASTRA-sim example's GlobalMetadata length (chakra-et.md §2.1)
        (-1, b"\xff" * 9 + b"\x01"),  # negative int32/int64: 64-bit two's complement, 10 bytes
    ],
)
def test_varint_bytes(value: int, encoded: bytes) -> None:
    assert encode_varint(value) == encoded
    decoded, end = decode_varint(encoded, 0, len(encoded))
    assert end == len(encoded)
    assert decoded == value % (1 << 64)


def test_varint_errors() -> None:
    with pytest.raises(WireError, match="longer than 10 bytes"):
        decode_varint(b"\xff" * 11, 0, 11)
    with pytest.raises(WireError, match="cut off"):
        decode_varint(b"\x80\x80", 0, 2)


def test_frame_detects_overrun() -> None:
    assert frame(b"\x02ab\x00") == ([1, 4], [3, 4])
    with pytest.raises(WireError, match="runs past the end"):
        frame(b"\x05abc")


def _pb_node() -> tuple[object, bytes]:
    M = messages()
    node = M["Node"](
        id=300, name="n", type=6, ctrl_deps=[7], data_deps=[1, 200], start_time_micros=5, duration_micros=9
    )
    node.inputs.values = "[1]"
    a = node.attr.add(name="comm_src")
    a.int32_val = -2
    a = node.attr.add(name="comm_size")
    a.int64_val = 1 << 33
    a = node.attr.add(name="dims")
    a.bool_list.values.extend([True, False, True])
    a = node.attr.add(name="u")
    a.uint64_val = (1 << 64) - 1
    a = node.attr.add(name="sf")
    a.sfixed64_val = -7
    a = node.attr.add(name="d")
    a.double_val = 2.5
    a = node.attr.add(name="ss")
    a.string_list.values.extend(["a", "bc"])
    return node, node.SerializeToString()


def test_encode_node_is_byte_identical_to_protobuf() -> None:
    _node, expected = _pb_node()
    ours = encode_node(
        id=300,
        name="n",
        type=6,
        ctrl_deps=[7],
        data_deps=[1, 200],
        start_time_micros=5,
        duration_micros=9,
        inputs={"values": "[1]"},
        attrs=[
            ("comm_src", TypedValue("int32_val", -2)),
            ("comm_size", TypedValue("int64_val", 1 << 33)),
            ("dims", TypedValue("bool_list", [True, False, True])),
            ("u", TypedValue("uint64_val", (1 << 64) - 1)),
            ("sf", TypedValue("sfixed64_val", -7)),
            ("d", TypedValue("double_val", 2.5)),
            ("ss", TypedValue("string_list", ["a", "bc"])),
        ],
    )
    assert ours == expected


def test_decode_node_reads_every_field() -> None:
    _node, data = _pb_node()
    nd = decode_node(data, 0, len(data))
    assert (nd["id"], nd["name"], nd["type"]) == (300, "n", 6)
    assert nd["ctrl_deps"] == [7] and nd["data_deps"] == [1, 200]
    assert (nd["start_time_micros"], nd["duration_micros"]) == (5, 9)
    assert nd["inputs"] == {"values": "[1]", "shapes": "", "types": ""}
    assert dict(nd["attrs"]) == {
        "comm_src": TypedValue("int32_val", -2),
        "comm_size": TypedValue("int64_val", 1 << 33),
        "dims": TypedValue("bool_list", [True, False, True]),
        "u": TypedValue("uint64_val", (1 << 64) - 1),
        "sf": TypedValue("sfixed64_val", -7),
        "d": TypedValue("double_val", 2.5),
        "ss": TypedValue("string_list", ["a", "bc"]),
    }


def test_every_attribute_type_round_trips_through_protobuf() -> None:
    M = messages()
    samples = {
        "double_val": 1.5,
        "float_val": 0.25,
        "int32_val": -5,
        "int64_val": -(1 << 40),
        "uint32_val": 1 << 31,
        "uint64_val": 1 << 63,
        "sint32_val": -9,
        "sint64_val": -(1 << 50),
        "fixed32_val": 7,
        "fixed64_val": 1 << 60,
        "sfixed32_val": -8,
        "sfixed64_val": -(1 << 45),
        "bool_val": True,
        "string_val": "é",
        "bytes_val": b"\x00\xff",
        "double_list": [1.0, -2.0],
        "float_list": [0.5],
        "int32_list": [-1, 2],
        "int64_list": [1 << 40, -1],
        "uint32_list": [3],
        "uint64_list": [1 << 63],
        "sint32_list": [-1, 1],
        "sint64_list": [-(1 << 60)],
        "fixed32_list": [1, 2],
        "fixed64_list": [5],
        "sfixed32_list": [-3],
        "sfixed64_list": [-4],
        "bool_list": [False, True],
        "string_list": ["x", ""],
        "bytes_list": [b"a", b""],
    }
    for field, value in samples.items():
        body = encode_attr("a", TypedValue(field, value))
        msg = M["AttributeProto"]()
        msg.ParseFromString(body)
        assert msg.WhichOneof("value") == field
        got = getattr(msg, field)
        got = list(got.values) if field.endswith("_list") else got
        assert got == value, field
        assert msg.SerializeToString() == body, field
        name, tv, _doc = decode_attr(body, 0, len(body))
        assert name == "a" and tv == TypedValue(field, value), field
