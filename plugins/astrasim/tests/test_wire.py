"""The ET encoders against MLCommons' reference protobuf classes (independent of our code)."""

from __future__ import annotations

import numpy as np
import pytest

from collhub_astrasim._fastet import encode_rank_nodes, varints
from collhub_astrasim._wire import _varint, encode_global_metadata, encode_node, read_global_metadata, write_et
from hub.chakra import NodeType, RankGraph

pb = pytest.importorskip("chakra.schema.protobuf.et_def_pb2")


def _reference_node(**kw: object) -> bytes:
    node = pb.Node()
    node.id = kw.get("id", 0)  # type: ignore[assignment]
    node.name = kw.get("name", "")  # type: ignore[assignment]
    node.type = kw.get("type", 0)  # type: ignore[assignment]
    node.data_deps.extend(kw.get("deps", []))  # type: ignore[arg-type]
    node.duration_micros = kw.get("dur", 0)  # type: ignore[assignment]
    for name, field, value in kw.get("attrs", []):  # type: ignore[attr-defined]
        a = node.attr.add()
        a.name = name
        if field == "bool_list":
            a.bool_list.values.extend(value)
        else:
            setattr(a, field, value)
    return node.SerializeToString()


@pytest.mark.parametrize(
    "kw",
    [
        {"id": 0, "name": "COMM_SEND_NODE_tb0_step0", "type": 5,
         "attrs": [("comm_size", "int64_val", 131072), ("comm_dst", "int32_val", 1), ("comm_tag", "int32_val", 0)]},
        {"id": 300, "name": "x", "type": 6, "deps": [0, 299, 2**40],
         "attrs": [("comm_size", "int64_val", 2**40 + 3), ("comm_src", "int32_val", -1), ("comm_tag", "int32_val", 2**31 - 1)]},
        {"id": 7, "name": "c", "type": 4, "dur": 7},
        {"id": 1, "name": "coll", "type": 7, "attrs": [("is_cpu_op", "bool_val", False), ("comm_type", "int64_val", 0),
                                                        ("involved_dim", "bool_list", [True, False]), ("pg_name", "string_val", "")]},
        {"id": 2, "name": "t", "type": 4, "attrs": [("tensor_size", "uint64_val", 2**63), ("x", "double_val", 0.5)]},
    ],
)
def test_encode_node_is_protobufs_serialization(kw: dict) -> None:
    ours = encode_node(kw.get("id", 0), kw.get("name", ""), kw.get("type", 0), data_deps=kw.get("deps", []),
                       duration_micros=kw.get("dur", 0), attrs=kw.get("attrs", []))
    assert ours == _reference_node(**kw)


def test_varints_vectorized() -> None:
    values = np.array([0, 1, 127, 128, 300, 2**31 - 1, 2**35, -1, -(2**31)], dtype=np.int64)
    flat, lens = varints(values)
    assert flat.tobytes() == b"".join(_varint(int(v)) for v in values)
    assert lens.tolist() == [len(_varint(int(v))) for v in values]


def test_fast_rank_encoder_equals_the_per_node_encoder() -> None:
    rng = np.random.default_rng(7)
    n = 500
    kind = rng.choice([int(NodeType.SEND), int(NodeType.RECV), int(NodeType.COMP)], size=n)
    ids = np.arange(n, dtype=np.int64) * 3 + rng.integers(0, 3, size=n)  # gaps, like converter ids
    ndeps = rng.integers(0, 4, size=n)
    ndeps[0] = 0
    dep_ptr = np.concatenate([[0], np.cumsum(ndeps)])
    dep_pos = np.concatenate([rng.integers(0, max(i, 1), size=k) for i, k in enumerate(ndeps)]).astype(np.int32)
    comm = kind != int(NodeType.COMP)
    g = RankGraph.from_columns(
        n, ids=ids, kind=kind, dep_ptr=dep_ptr, dep_pos=dep_pos,
        peer=np.where(comm, rng.integers(0, 300, size=n), -1), tag=np.where(comm, rng.integers(0, 10**8, size=n), 0),
        size=np.where(comm, rng.integers(1, 2**40, size=n), -1),
        duration=np.where(comm, -1, rng.choice([-1, 0, 7, 10**6], size=n)),
        names=[f"n{i}" if i % 3 else "" for i in range(n)],
    )
    expected = bytearray()
    for i in range(n):
        k = int(kind[i])
        if k == int(NodeType.COMP):
            attrs, dur = [], max(int(g.duration[i]), 0)
        else:
            peer_name = "comm_dst" if k == int(NodeType.SEND) else "comm_src"
            attrs = [("comm_size", "int64_val", int(g.size[i])), (peer_name, "int32_val", int(g.peer[i])),
                     ("comm_tag", "int32_val", int(g.tag[i]))]
            dur = 0
        name = g.names[i] or {5: "COMM_SEND_NODE", 6: "COMM_RECV_NODE", 4: "COMP_NODE"}[k] + f"_{int(ids[i])}"
        deps = [int(ids[d]) for d in g.dep_pos[dep_ptr[i]:dep_ptr[i + 1]]]
        node = encode_node(int(ids[i]), name, k, data_deps=deps, duration_micros=dur, attrs=attrs)
        expected += _varint(len(node)) + node
    assert encode_rank_nodes(g) == bytes(expected)


def test_global_metadata_round_trip(tmp_path) -> None:
    meta = encode_global_metadata("0.0.4", [("schema", "string_val", "1.0.2-chakra.0.0.4"), ("size", "int64_val", -5)])
    gm = pb.GlobalMetadata()
    gm.ParseFromString(meta)
    assert gm.version == "0.0.4" and gm.attr[1].int64_val == -5
    write_et(tmp_path / "a.0.et", meta, [encode_node(1, "n", 4)])
    assert read_global_metadata(tmp_path / "a.0.et") == ("0.0.4", {"schema": "1.0.2-chakra.0.0.4", "size": -5})
