"""write_algorithm/write_workload with ``attributes="astrasim"``, and the written files' modes."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import numpy as np
import pytest

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
    build_algorithm,
    read_algorithm,
    read_workload,
    write_algorithm,
    write_workload,
)
from hub.chakra._decode import decode_global_metadata, decode_node
from hub.chakra._wire import frame
from hub.errors import ExportError, UsageError

from .conftest import ring_allreduce


def _decoded(path: Path) -> tuple[str, list[tuple[str, TypedValue]], list[dict]]:
    data = path.read_bytes()
    starts, ends = frame(data)
    version, gm = decode_global_metadata(data, starts[0], ends[0])
    return version, gm, [decode_node(data, s, e) for s, e in zip(starts[1:], ends[1:], strict=False)]


def test_ring_nodes_carry_only_what_astrasim_reads(tmp_path: Path) -> None:
    alg = ring_allreduce(4, names=True).bind(4000)  # 4 chunks of 1000 B; COMPs of 7 us
    paths = write_algorithm(alg, tmp_path / "a", attributes="astrasim")
    for rank, path in enumerate(paths):
        version, gm, nodes = _decoded(path)
        assert version == "0.0.4"
        assert [name for name, _ in gm] == ["schema", "collective", "ranks", "algorithm", "size", "rank"]
        assert dict(gm)["rank"] == TypedValue("int32_val", rank)
        assert len(nodes) == len(alg.graphs[rank]) == 3 * 3 + 2 * 3
        for nd in nodes:
            attrs = nd["attrs"]
            if nd["type"] == NodeType.SEND:  # rank r sends to r+1, tag 0, 1000 B
                assert attrs == [
                    ("comm_size", TypedValue("int64_val", 1000)),
                    ("comm_dst", TypedValue("int32_val", (rank + 1) % 4)),
                    ("comm_tag", TypedValue("int32_val", 0)),
                ]
            elif nd["type"] == NodeType.RECV:
                assert attrs == [
                    ("comm_size", TypedValue("int64_val", 1000)),
                    ("comm_src", TypedValue("int32_val", (rank - 1) % 4)),
                    ("comm_tag", TypedValue("int32_val", 0)),
                ]
            else:
                assert nd["type"] == NodeType.COMP and attrs == [] and nd["duration_micros"] == 7
            assert nd["name"].startswith(("send", "recv", "comp"))


def test_astrasim_files_read_back_as_a_timing_only_algorithm(tmp_path: Path) -> None:
    alg = ring_allreduce(4).bind(4000)
    write_algorithm(alg, tmp_path / "a", attributes="astrasim")
    back = read_algorithm(tmp_path / "a")
    assert back.ranks == 4 and back.collective is Collective.ALLREDUCE
    for g, h in zip(alg.graphs, back.graphs, strict=False):
        for col in ("ids", "kind", "peer", "tag", "size", "duration", "dep_ptr", "dep_pos"):
            assert np.array_equal(getattr(g, col), getattr(h, col)), col
        assert (h.src_buf == -1).all() and (h.dst_buf == -1).all()  # no buffer semantics on the wire


def test_astrasim_set_is_smaller_than_the_profile(tmp_path: Path) -> None:
    alg = ring_allreduce(8).bind(1 << 20)
    full = sum(p.stat().st_size for p in write_algorithm(alg, tmp_path / "p"))
    small = sum(p.stat().st_size for p in write_algorithm(alg, tmp_path / "s", attributes="astrasim"))
    assert small < full * 0.75


def _pair(**kw: object) -> Algorithm:
    b0, b1 = RankGraphBuilder(0), RankGraphBuilder(1)
    b0.send(int(kw.get("peer", 1)), src=(Buffer.INPUT, 0), tag=int(kw.get("tag", 0)))
    b1.recv(0, dst=(Buffer.INPUT, 0), op=Op.COPY, tag=int(kw.get("tag", 0)))
    alg = build_algorithm(AlgorithmMeta(Collective.ALLREDUCE, 2, 1, 1, name="p"), [b0, b1])
    return alg.bind(64) if kw.get("bind", True) else alg


@pytest.mark.parametrize(
    ("alg", "message"),
    [
        (_pair(peer=0), "rank 0, node 0: peer 0 is not another rank of 0..1"),
        (_pair(peer=5), "rank 0, node 0: peer 5 is not another rank"),
        (_pair(bind=False), "rank 0, node 0: message has no byte size"),
        (_pair(tag=500_000_000), "rank 0, node 0: tag 500000000 is outside 0..499999999"),
        (
            Algorithm(
                AlgorithmMeta(Collective.CUSTOM, 1, 0, 0), (RankGraph.from_columns(1, kind=int(NodeType.MEM_LOAD)),)
            ),
            "rank 0, node 0: node type MEM_LOAD cannot appear",
        ),
        (
            Algorithm(
                AlgorithmMeta(Collective.CUSTOM, 1, 0, 0),
                (RankGraph.from_columns(2, kind=int(NodeType.COMP), ids=[4, 4]),),
            ),
            "rank 0, node 4: node id used twice",
        ),
        (Algorithm(AlgorithmMeta(Collective.CUSTOM, 1, 0, 0), (RankGraph.from_columns(0),)), "rank 0 has no nodes"),
    ],
)
def test_refuses_what_astrasim_cannot_run(tmp_path: Path, alg: Algorithm, message: str) -> None:
    with pytest.raises(ExportError, match=message) as info:
        write_algorithm(alg, tmp_path / "x", attributes="astrasim")
    assert "\n" not in str(info.value) and info.value.hint
    assert list(tmp_path.iterdir()) == []
    write_algorithm(alg, tmp_path / "x")  # the profile keeps what ASTRA-sim cannot run


def test_unknown_attribute_set(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="unknown attribute set 'astra'"):
        write_algorithm(_pair(), tmp_path / "x", attributes="astra")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="unknown attribute set"):
        write_workload(Workload.single_collective(Collective.ALLREDUCE, 2, 64), tmp_path / "w", attributes="")  # type: ignore[arg-type]


def test_workload_metadata_per_set(tmp_path: Path) -> None:
    wl = Workload.single_collective(Collective.ALLREDUCE, 2, 1 << 20, name="all_reduce_2npus_1MB")
    astra = write_workload(wl, tmp_path / "a", attributes="astrasim")[0].read_bytes()
    # chakra-et.md §2.1: a minimal workload ET starts 07 0a 05 "0.0.4"; then one node:
    # name, type 7, is_cpu_op false (bool), comm_type 0 (int64), comm_size 2^20 (int64)
    node = (
        b"\x12\x14all_reduce_2npus_1MB"
        + b"\x18\x07"
        + b"\x52\x0e\x0a\x09is_cpu_op\xd8\x01\x00"
        + b"\x52\x0d\x0a\x09comm_type\x48\x00"
        + b"\x52\x0f\x0a\x09comm_size\x48\x80\x80\x40"
    )
    assert astra == b"\x07\x0a\x050.0.4" + bytes([len(node)]) + node
    version, gm, _ = _decoded(write_workload(wl, tmp_path / "p")[0])
    assert version == "0.0.4" and gm == [("workload", TypedValue("string_val", "all_reduce_2npus_1MB"))]
    assert read_workload(tmp_path / "p").name == read_workload(tmp_path / "a").name == "all_reduce_2npus_1MB"


def test_workload_attribute_order_and_errors(tmp_path: Path) -> None:
    send = WorkloadNode(
        id=3,
        name="s",
        type=NodeType.SEND,
        comm_src=0,
        comm_dst=1,
        comm_size=8,
        comm_tag=2,
        attrs={"mine": 1.5, "skip": None},
    )
    wl = Workload(ranks=[[send]])
    _, _, nodes = _decoded(write_workload(wl, tmp_path / "w", attributes="astrasim")[0])
    assert nodes[0]["attrs"] == [
        ("is_cpu_op", TypedValue("bool_val", False)),
        ("comm_src", TypedValue("int32_val", 0)),
        ("comm_dst", TypedValue("int32_val", 1)),
        ("comm_size", TypedValue("int64_val", 8)),
        ("comm_tag", TypedValue("int32_val", 2)),
        ("mine", TypedValue("double_val", 1.5)),
    ]
    send.attrs = {"bad": object()}
    with pytest.raises(UsageError, match="workload rank 0, node 3: cannot store object"):
        write_workload(wl, tmp_path / "w2")
    coll = WorkloadNode(id=0, name="c", type=NodeType.COLL, comm_type=99, comm_size=8)
    with pytest.raises(ExportError, match="workload rank 1, node 0: comm_type 99 is not a Chakra CollectiveCommType"):
        write_workload(Workload(ranks=[[], [coll]]), tmp_path / "w3", attributes="astrasim")
    assert not list(tmp_path.glob("w2*")) and not list(tmp_path.glob("w3*"))


@pytest.mark.parametrize("umask", [0o022, 0o027, 0o077])
def test_files_get_the_mode_of_a_new_file(tmp_path: Path, umask: int) -> None:
    old = os.umask(umask)
    try:
        paths = write_algorithm(ring_allreduce(2).bind(64), tmp_path / "a")
        paths += write_workload(
            Workload.single_collective(Collective.ALLREDUCE, 2, 64), tmp_path / "w", attributes="astrasim"
        )
        (tmp_path / "ref").write_bytes(b"")  # what open() gives a new file under this umask
    finally:
        os.umask(old)
    expected = 0o666 & ~umask
    assert stat.S_IMODE((tmp_path / "ref").stat().st_mode) == expected
    assert [stat.S_IMODE(p.stat().st_mode) for p in paths] == [expected] * 4
