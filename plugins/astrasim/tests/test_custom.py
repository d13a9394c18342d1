"""astrasim.custom: importing ASTRA-sim custom-collective ET sets (uses hub.chakra.read_algorithm)."""

from __future__ import annotations

from pathlib import Path

import pytest

from collhub_astrasim import Dim, build_bundle
from collhub_astrasim._custom import NO_SEMANTICS_NOTE, CustomParams, produce_custom
from hub.chakra import Collective, NodeType, read_algorithm
from hub.errors import UsageError

from .astrasim_helpers import attrs_of, decode_et

MIB = 1 << 20


def test_imports_the_shared_example_and_says_what_it_cannot_know(example: Path) -> None:
    alg = produce_custom(CustomParams(path=str(example / "algorithm/custom_allreduce")), None)
    extra = dict(alg.meta.extra)
    assert alg.collective is Collective.ALLREDUCE and extra["astrasim.collective_source"] == "GlobalMetadata"
    assert alg.ranks == 8 and alg.name == "custom_allreduce" and alg.meta.producer == "astrasim.custom"
    assert extra["astrasim.semantics"] == NO_SEMANTICS_NOTE
    assert extra["astrasim.message_bytes"] == "131072"
    # the embedded MSCCL-IR says <gpu i_chunks="8" o_chunks="0">: 8 chunks of 131072 B -> 1 MiB
    assert (alg.meta.in_chunks, alg.meta.size) == (8, MIB)
    assert sum(int((g.kind == NodeType.SEND).sum()) for g in alg.graphs) == 8 * 14
    # re-binding scales messages through the inferred chunk model
    assert set(alg.bind(2 * MIB).graphs[5].size[alg.graphs[5].kind == NodeType.SEND].tolist()) == {2 * 131072}


def test_reimported_example_bundles_to_the_same_ets(example: Path, tmp_path: Path) -> None:
    alg = produce_custom(CustomParams(path=str(example / "algorithm/custom_allreduce")), None)
    b = build_bundle(alg, out=tmp_path / "b", dims=[Dim("Ring", 8, 50.0, 500.0)])
    # ASTRA-sim printed 90174 for these ETs on both backends (astra-sim.md §9); hub.simulate agrees
    assert b.predicted_ns == {"unaware": 90174, "aware": 90174}
    for rank in range(8):
        assert (b.path / f"workload/all_reduce.{rank}.et").read_bytes() == (
            example / f"workload/all_reduce.{rank}.et"
        ).read_bytes()
        _, ours = decode_et(b.path / f"algorithm/custom_allreduce.{rank}.et")
        _, theirs = decode_et(example / f"algorithm/custom_allreduce.{rank}.et")
        assert [(n.id, n.name, n.type, list(n.data_deps), n.duration_micros) for n in ours] == [
            (n.id, n.name, n.type, list(n.data_deps), n.duration_micros) for n in theirs
        ]
        assert [attrs_of(n) for n in ours] == [[a for a in attrs_of(n) if a[0] != "comm_type"] for n in theirs]


def test_bundle_rereads_with_the_core_reader(example: Path, tmp_path: Path) -> None:
    from .astrasim_helpers import msccl_ring_allreduce

    src = msccl_ring_allreduce().bind(MIB)
    b = build_bundle(src, out=tmp_path / "b", dims=[Dim("Ring", 8, 50.0, 500.0)])
    back = read_algorithm(b.path / "algorithm/custom_allreduce")
    assert back.ranks == 8 and back.collective is Collective.ALLREDUCE
    for g0, g1 in zip(src.graphs, back.graphs, strict=False):
        for col in ("ids", "kind", "peer", "tag", "duration"):
            assert getattr(g0, col).tolist() == getattr(g1, col).tolist(), col
        comm = (g0.kind == NodeType.SEND) | (g0.kind == NodeType.RECV)
        assert g0.size[comm].tolist() == g1.size[comm].tolist()
        assert g0.dep_ptr.tolist() == g1.dep_ptr.tolist() and g0.dep_pos.tolist() == g1.dep_pos.tolist()


def test_collective_parameter_and_conflicts(example: Path, tmp_path: Path) -> None:
    path = str(example / "algorithm/custom_allreduce")
    with pytest.raises(UsageError, match="declare collective allreduce, not alltoall"):
        produce_custom(CustomParams(path=path, collective="alltoall"), None)
    alg = produce_custom(CustomParams(path=path, collective="all_reduce", name="ring8"), None)
    assert alg.name == "ring8" and dict(alg.meta.extra)["astrasim.collective_source"] == "parameter"
    with pytest.raises(UsageError, match="does not exist"):
        produce_custom(CustomParams(path=str(tmp_path / "nothing")), None)


def test_without_metadata_the_collective_must_be_given(example: Path, tmp_path: Path) -> None:
    # an ET set as the TACOS writer or a hand-made tool leaves it: no collective in GlobalMetadata;
    # written with MLCommons' own classes and framing (mlc-chakra), not with collhub's writer
    pb = pytest.importorskip("chakra.schema.protobuf.et_def_pb2")
    protolib = pytest.importorskip("chakra.src.third_party.utils.protolib")

    for rank in range(2):
        peer = 1 - rank
        with open(tmp_path / f"x.{rank}.et", "wb") as fh:
            protolib.encodeMessage(fh, pb.GlobalMetadata(version="0.0.4"))
            for node_id, name, kind, peer_attr in ((0, "s", 5, "comm_dst"), (1, "r", 6, "comm_src")):
                node = pb.Node(id=node_id, name=name, type=kind)
                node.attr.add(name="comm_size").int64_val = 4096
                node.attr.add(name=peer_attr).int32_val = peer
                node.attr.add(name="comm_tag").int32_val = 0
                protolib.encodeMessage(fh, node)
    with pytest.raises(UsageError, match="do not say which collective"):
        produce_custom(CustomParams(path=str(tmp_path / "x")), None)
    alg = produce_custom(CustomParams(path=str(tmp_path / "x"), collective="alltoall"), None)
    assert alg.collective is Collective.ALLTOALL and dict(alg.meta.extra)["astrasim.chunks_from"] == "none"
    # fixed sizes: bundling keeps them, and refuses to re-bind
    b = build_bundle(alg, out=tmp_path / "b", dims=[Dim("FullyConnected", 2, 50.0, 500.0)])
    assert (b.path / "algorithm/custom_alltoall.1.et").is_file()
    with pytest.raises(UsageError, match="fixed message sizes"):
        build_bundle(alg, out=tmp_path / "c", dims=[Dim("FullyConnected", 2, 50.0, 500.0)], size=MIB)
