"""write_algorithm -> read_algorithm, JSON view, workloads, gzip and read_trace."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np

from hub.chakra import (
    Algorithm,
    AlgorithmMeta,
    Buffer,
    Collective,
    NodeType,
    Op,
    RankGraph,
    RankGraphBuilder,
    TypedValue,
    Workload,
    WorkloadNode,
    algorithm_from_json,
    algorithm_to_json,
    read_algorithm,
    read_trace,
    read_workload,
    write_algorithm,
    write_workload,
)
from hub.chakra._decode import decode_node
from hub.chakra._encode import encode_rank
from hub.chakra._model import COLUMN_NAMES
from hub.chakra._wire import encode_node, frame

from .conftest import assert_same_graphs, ring_allreduce


def test_round_trip_bound(tmp_path: Path, ring8: Algorithm) -> None:
    paths = write_algorithm(ring8, tmp_path / "ring")
    assert [p.name for p in paths] == [f"ring.{r}.et" for r in range(8)]
    assert_same_graphs(ring8, read_algorithm(tmp_path / "ring"))


def test_round_trip_symbolic_names_and_extras(tmp_path: Path, foreign_extra) -> None:
    alg = ring_allreduce(4, names=True)
    g = alg.graphs[2]
    g.extra = {0: foreign_extra, 5: (("note", TypedValue("string_val", "hi")),)}
    alg = alg.with_meta(extra=(("origin", "unit"), ("seed", 7)), root=0)
    write_algorithm(alg, tmp_path / "a")
    back = read_algorithm(tmp_path / "a")
    assert_same_graphs(alg, back)
    assert back.meta.size is None and not back.is_bound


def test_round_trip_irregular_columns(tmp_path: Path) -> None:
    """Id gaps, non-default every column, several deps, negative-free large values."""
    n = 6
    g = RankGraph.from_columns(
        n,
        ids=[10, 3, 700, 5, 99999, 6],
        kind=[NodeType.SEND, NodeType.RECV, NodeType.COMP, NodeType.SEND, NodeType.RECV, NodeType.COMP],
        peer=[1, 1, -1, 1, 1, -1],
        tag=[0, 0, 3, 70000, 70000, 0],
        count=[2, 1, 3, 0, 5, 0],
        src_buf=[Buffer.INPUT, -1, Buffer.SCRATCH, Buffer.OUTPUT, -1, -1],
        src_off=[4, -1, 2, 0, -1, -1],
        dst_buf=[-1, Buffer.OUTPUT, Buffer.OUTPUT, -1, Buffer.SCRATCH, -1],
        dst_off=[-1, 9, 1, -1, 0, -1],
        op=[Op.NONE, Op.COPY, Op.REDUCE, Op.NONE, Op.REDUCE, Op.NONE],
        size=[1 << 40, 5, 77, 0, -1, -1],
        duration=[-1, -1, 12, 3, -1, 1 << 33],
        tb=[0, 1, 2, -1, 7, 0],
        chan=[0, 0, 1, 2, 3, 0],
        dep_ptr=[0, 0, 1, 3, 3, 5, 6],
        dep_pos=[0, 0, 1, 2, 3, 4],
    )
    other = RankGraph.from_columns(
        2, kind=[NodeType.RECV, NodeType.SEND], peer=[0, 0], tag=[0, 70000], dep_ptr=[0, 0, 1], dep_pos=[0]
    )
    alg = Algorithm(AlgorithmMeta(Collective.CUSTOM, 2, 3, 2, scratch_chunks=4, root=1), (g, other))
    write_algorithm(alg, tmp_path / "x")
    assert_same_graphs(alg, read_algorithm(tmp_path / "x"))


def test_vectorized_encoder_matches_general_encoder(foreign_extra) -> None:
    alg = ring_allreduce(3, names=True).bind(3000)
    g = alg.graphs[1]
    g.extra = {2: foreign_extra}
    data = bytes(encode_rank(g, 1))
    starts, ends = frame(data)
    assert len(starts) == len(g)
    for pos, (s, e) in enumerate(zip(starts, ends, strict=False)):
        nd = decode_node(data, s, e)
        v = g.node(pos)
        attrs = [("comm_size", TypedValue("int64_val", v.size))] if v.size >= 0 else []
        if v.kind in (NodeType.SEND, NodeType.RECV):
            src, dst = (1, v.peer) if v.kind == NodeType.SEND else (v.peer, 1)
            attrs += [
                ("comm_src", TypedValue("int32_val", src)),
                ("comm_dst", TypedValue("int32_val", dst)),
                ("comm_tag", TypedValue("int32_val", v.tag)),
            ]
        cnt_default = 1 if v.kind in (NodeType.SEND, NodeType.RECV) else 0
        for name, value, default in (
            ("cnt", v.count, cnt_default),
            ("sbuf", v.src_buf, -1),
            ("soff", v.src_off, -1),
            ("dbuf", v.dst_buf, -1),
            ("doff", v.dst_off, -1),
            ("op", v.op, 0),
            ("tb", v.tb, -1),
            ("chan", v.chan, 0),
        ):
            if value != default:
                attrs.append((name, TypedValue("int32_val", int(value))))
        attrs += list(g.extra.get(pos, ()))
        expected = encode_node(
            id=v.id,
            name=v.name or "",
            type=int(v.kind),
            data_deps=[int(g.ids[d]) for d in v.deps],
            duration_micros=max(v.duration, 0),
            attrs=attrs,
        )
        assert data[s:e] == expected, pos
        assert nd["type"] == int(v.kind)


def test_bound_sizes_follow_chunk_bytes(tmp_path: Path) -> None:
    # 1000 bytes over 8 chunks: ceil(1000/8) = 125 bytes per chunk message
    alg = ring_allreduce(8).bind(1000)
    write_algorithm(alg, tmp_path / "r")
    back = read_algorithm(tmp_path / "r")
    g = back.graphs[0]
    comm = (g.kind == NodeType.SEND) | (g.kind == NodeType.RECV)
    assert set(g.size[comm].tolist()) == {125}
    assert back.meta.size == 1000


def test_json_round_trip(foreign_extra) -> None:
    alg = ring_allreduce(4, names=True).bind(4096)
    alg.graphs[0].extra = {1: foreign_extra + (("blob", TypedValue("bytes_val", b"\x01\x02")),)}
    doc = json.loads(json.dumps(algorithm_to_json(alg)))
    assert doc["format"] == "collhub.algorithm" and doc["meta"]["size"] == 4096
    assert_same_graphs(alg, algorithm_from_json(doc))


def test_gzip_is_accepted(tmp_path: Path, ring8: Algorithm) -> None:
    for p in write_algorithm(ring8, tmp_path / "g"):
        p.write_bytes(gzip.compress(p.read_bytes()))
        assert p.read_bytes()[:2] == b"\x1f\x8b"
    assert_same_graphs(ring8, read_algorithm(tmp_path / "g"))


def test_workload_round_trip_and_typing(tmp_path: Path) -> None:
    wl = Workload.single_collective(Collective.ALLGATHER, 4, 4096, name="ag")
    wl.ranks[0].append(
        WorkloadNode(
            id=1,
            name="gemm",
            type=NodeType.COMP,
            deps=[0],
            duration_micros=12,
            attrs={"num_ops": 100, "tensor_size": 64},
        )
    )
    wl.ranks[0][0].attrs["involved_dim"] = [True, False]
    paths = write_workload(wl, tmp_path / "w")
    back = read_workload(tmp_path / "w")
    assert back.rank_count == 4 and back.version == "0.0.4" and back.name == "ag"
    n0 = back.ranks[0][0]
    assert (n0.type, n0.comm_type, n0.comm_size, n0.is_cpu_op) == (NodeType.COLL, 2, 4096, False)
    assert n0.attrs["involved_dim"] == [True, False]
    assert back.ranks[0][1].deps == [0] and back.ranks[0][1].duration_micros == 12
    # exact oneof typing (chakra-et.md §4.3 / §7 rule 10)
    data = paths[0].read_bytes()
    starts, ends = frame(data)
    attrs = dict(decode_node(data, starts[1], ends[1])["attrs"])
    assert attrs["comm_type"] == TypedValue("int64_val", 2)
    assert attrs["comm_size"] == TypedValue("int64_val", 4096)
    assert attrs["is_cpu_op"] == TypedValue("bool_val", False)
    assert attrs["involved_dim"] == TypedValue("bool_list", [True, False])
    comp = dict(decode_node(data, starts[2], ends[2])["attrs"])
    assert comp["tensor_size"] == TypedValue("uint64_val", 64) and comp["num_ops"] == TypedValue("int64_val", 100)


def test_read_trace_detects_kind(tmp_path: Path, ring8: Algorithm) -> None:
    write_algorithm(ring8, tmp_path / "a")
    write_workload(Workload.single_collective(Collective.ALLREDUCE, 2, 64), tmp_path / "w")
    assert isinstance(read_trace(tmp_path / "a"), Algorithm)
    assert isinstance(read_trace(tmp_path / "w"), Workload)


def test_global_metadata_content(tmp_path: Path) -> None:
    from hub.chakra._decode import decode_global_metadata

    alg = ring_allreduce(2).bind(64)
    paths = write_algorithm(alg, tmp_path / "m")
    data = paths[1].read_bytes()
    starts, ends = frame(data)
    version, attrs = decode_global_metadata(data, starts[0], ends[0])
    attrs = dict(attrs)
    assert version == "0.0.4"
    assert attrs["schema"] == TypedValue("string_val", "1.0.2-chakra.0.0.4")
    assert attrs["collhub_profile"] == TypedValue("string_val", "1.0")
    assert attrs["collective"] == TypedValue("string_val", "allreduce")
    assert attrs["ranks"] == TypedValue("int32_val", 2)
    assert attrs["rank"] == TypedValue("int32_val", 1)
    assert attrs["size"] == TypedValue("int64_val", 64)
    assert attrs["inplace"] == TypedValue("bool_val", True)
    assert "input_file" not in attrs


def test_columns_dtypes_preserved_for_empty_rank(tmp_path: Path) -> None:
    alg = Algorithm(
        AlgorithmMeta(Collective.CUSTOM, 2, 0, 0), (RankGraphBuilder(0).build(), RankGraphBuilder(1).build())
    )
    write_algorithm(alg, tmp_path / "e")
    back = read_algorithm(tmp_path / "e")
    assert [len(g) for g in back.graphs] == [0, 0]
    for col in COLUMN_NAMES:
        assert getattr(back.graphs[0], col).dtype == getattr(alg.graphs[0], col).dtype
    assert np.array_equal(back.graphs[0].dep_ptr, [0])
