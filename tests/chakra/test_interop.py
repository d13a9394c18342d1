"""Interoperability with MLCommons' own reader and writer (mlc-chakra), in both directions."""

from __future__ import annotations

from pathlib import Path

import pytest

from hub.chakra import Algorithm, Collective, NodeType, Op, read_algorithm, write_algorithm

from .conftest import ring_allreduce

pb = pytest.importorskip("chakra.schema.protobuf.et_def_pb2", reason="mlc-chakra is not installed")
protolib = pytest.importorskip("chakra.src.third_party.utils.protolib")


def _read_with_mlc(path: Path) -> tuple[object, list[object]]:
    fh = protolib.openFileRd(str(path))
    try:
        gm = pb.GlobalMetadata()
        assert protolib.decodeMessage(fh, gm)
        nodes = []
        while True:
            node = pb.Node()
            if not protolib.decodeMessage(fh, node):
                break
            nodes.append(node)
    finally:
        fh.close()
    return gm, nodes


def test_mlc_decodes_our_files_field_by_field(tmp_path: Path) -> None:
    alg = ring_allreduce(4, names=True).bind(4000)  # 1000 B per chunk
    paths = write_algorithm(alg, tmp_path / "ring")
    for rank, path in enumerate(paths):
        gm, nodes = _read_with_mlc(path)
        meta = {a.name: a for a in gm.attr}
        assert gm.version == "0.0.4"
        assert meta["schema"].WhichOneof("value") == "string_val"
        assert meta["schema"].string_val == "1.0.2-chakra.0.0.4"
        assert meta["ranks"].WhichOneof("value") == "int32_val" and meta["ranks"].int32_val == 4
        assert meta["rank"].int32_val == rank
        g = alg.graphs[rank]
        assert len(nodes) == len(g)
        for pos, node in enumerate(nodes):
            v = g.node(pos)
            assert node.id == v.id and node.type == int(v.kind) and node.name == v.name
            assert list(node.data_deps) == [int(g.ids[d]) for d in v.deps] and list(node.ctrl_deps) == []
            attrs = {a.name: a for a in node.attr}
            if v.kind == NodeType.COMP:
                assert node.duration_micros == 7
                assert "comm_size" not in attrs and "comm_src" not in attrs
                continue
            # ASTRA-sim's attributes, with the oneof typing every reader accepts (chakra-et.md §4.3)
            assert attrs["comm_size"].WhichOneof("value") == "int64_val" and attrs["comm_size"].int64_val == 1000
            for name in ("comm_src", "comm_dst", "comm_tag"):
                assert attrs[name].WhichOneof("value") == "int32_val", name
            if v.kind == NodeType.SEND:
                assert (attrs["comm_src"].int32_val, attrs["comm_dst"].int32_val) == (rank, (rank + 1) % 4)
                assert attrs["sbuf"].int32_val == 0 and attrs["soff"].WhichOneof("value") == "int32_val"
                assert "op" not in attrs  # Op.NONE is the default
            else:
                assert (attrs["comm_src"].int32_val, attrs["comm_dst"].int32_val) == ((rank - 1) % 4, rank)
                assert attrs["dbuf"].int32_val == 0 and attrs["doff"].int32_val == v.dst_off
                assert attrs["op"].int32_val == int(v.op)
            assert attrs["comm_tag"].int32_val == 0
            assert "cnt" not in attrs  # one chunk is the SEND/RECV default
            assert attrs["tb"].int32_val == 0


def _write_with_mlc(path: Path, rank: int, n: int, *, int_field: str) -> None:
    """A 2-node rank file written with MLCommons' classes and encodeMessage."""
    with open(path, "wb") as fh:
        gm = pb.GlobalMetadata(version="0.0.4")
        a = gm.attr.add(name="collective")
        a.string_val = "mine@allgather"
        protolib.encodeMessage(fh, gm)
        send = pb.Node(id=4, name="s", type=pb.COMM_SEND_NODE)
        for name, value in (("comm_size", 2048), ("comm_dst", (rank + 1) % n), ("comm_tag", 3)):
            attr = send.attr.add(name=name)
            setattr(attr, int_field, value)
        protolib.encodeMessage(fh, send)
        recv = pb.Node(id=9, name="r", type=pb.COMM_RECV_NODE, ctrl_deps=[4])
        for name, value in (("comm_size", 2048), ("comm_src", (rank - 1) % n), ("comm_tag", 3)):
            attr = recv.attr.add(name=name)
            setattr(attr, int_field, value)
        other = recv.attr.add(name="vendor_hint")
        other.float_list.values.extend([0.5, 2.0])
        protolib.encodeMessage(fh, recv)
        comp = pb.Node(id=12, type=pb.COMP_NODE, data_deps=[9], duration_micros=3)
        protolib.encodeMessage(fh, comp)


@pytest.mark.parametrize("int_field", ["int32_val", "int64_val", "uint64_val", "uint32_val", "sint64_val"])
def test_we_read_mlc_written_files(tmp_path: Path, int_field: str) -> None:
    for r in range(3):
        _write_with_mlc(tmp_path / f"m.{r}.et", r, 3, int_field=int_field)
    alg = read_algorithm(tmp_path / "m")
    assert alg.ranks == 3 and alg.collective == Collective.ALLGATHER and alg.name == "mine"
    assert (alg.meta.in_chunks, alg.meta.out_chunks) == (0, 0)
    g = alg.graphs[1]
    assert g.ids.tolist() == [4, 9, 12]
    assert g.kind.tolist() == [NodeType.SEND, NodeType.RECV, NodeType.COMP]
    assert g.peer.tolist() == [2, 0, -1]
    assert g.size.tolist() == [2048, 2048, -1]
    assert g.tag.tolist() == [3, 3, 0]
    assert g.duration.tolist() == [-1, -1, 3]
    assert g.names == ["s", "r", ""]
    assert g.op.tolist() == [Op.NONE, Op.NONE, Op.NONE]
    # ctrl_deps count as dependencies (feeder_v3); stored as positions
    assert [g.deps_of(i).tolist() for i in range(3)] == [[], [0], [1]]
    assert [name for name, _v in g.extra[1]] == ["vendor_hint"]
    assert g.extra[1][0][1].field == "float_list" and g.extra[1][0][1].value == [0.5, 2.0]


def test_round_trip_through_mlc_objects(tmp_path: Path) -> None:
    """Our file -> MLCommons' objects -> encodeMessage -> our reader gives the same algorithm."""
    alg: Algorithm = ring_allreduce(3).bind(999)
    paths = write_algorithm(alg, tmp_path / "a")
    for rank, path in enumerate(paths):
        gm, nodes = _read_with_mlc(path)
        with open(tmp_path / f"b.{rank}.et", "wb") as fh:
            protolib.encodeMessage(fh, gm)
            for node in nodes:
                protolib.encodeMessage(fh, node)
        assert (tmp_path / f"b.{rank}.et").read_bytes() == path.read_bytes()
    back = read_algorithm(tmp_path / "b")
    assert back.content_hash() == alg.content_hash()
