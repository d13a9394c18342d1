"""The ETs the plugin writes (hub.chakra's ``attributes="astrasim"`` set) against MLCommons'
reference protobuf classes: every message must be exactly what ``SerializeToString`` of
``et_def_pb2`` gives for the expected content, derived here from the columns by hand."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hub.chakra import Algorithm, AlgorithmMeta, Collective, NodeType, RankGraph, write_algorithm

from .astrasim_helpers import attrs_of, decode_et

pb = pytest.importorskip("chakra.schema.protobuf.et_def_pb2")


def _messages(path: Path) -> list[bytes]:
    """The raw bodies of a delimited stream, split with protobuf's own varint decoder."""
    from google.protobuf.internal.decoder import _DecodeVarint32

    data = path.read_bytes()
    pos, out = 0, []
    while pos < len(data):
        length, pos = _DecodeVarint32(data, pos)
        out.append(data[pos : pos + length])
        pos += length
    return out


def _random_rank(n: int, ranks: int, seed: int) -> RankGraph:
    rng = np.random.default_rng(seed)
    kind = rng.choice([int(NodeType.SEND), int(NodeType.RECV), int(NodeType.COMP)], size=n)
    ids = np.arange(n, dtype=np.int64) * 3 + rng.integers(0, 3, size=n)  # gaps, like converter ids
    ids[0] = 0  # id 0 is omitted on the wire, as protobuf does
    ndeps = rng.integers(0, 4, size=n)
    ndeps[0] = 0
    dep_ptr = np.concatenate([[0], np.cumsum(ndeps)])
    dep_pos = np.concatenate([rng.integers(0, max(i, 1), size=k) for i, k in enumerate(ndeps)]).astype(np.int32)
    comm = kind != int(NodeType.COMP)
    return RankGraph.from_columns(
        n,
        ids=ids,
        kind=kind,
        dep_ptr=dep_ptr,
        dep_pos=dep_pos,
        peer=np.where(comm, rng.integers(1, ranks, size=n), -1),  # written for rank 0: never itself
        tag=np.where(comm, rng.choice([0, 1, 127, 128, 499_999_999], size=n), 0),
        size=np.where(comm, rng.choice([1, 127, 128, 131072, 2**40 + 3], size=n), -1),
        # durations on messages too: ASTRA-sim reads them on COMP nodes only
        duration=rng.choice([-1, 0, 7, 10**6], size=n),
        count=np.where(comm, 3, 0),
        src_buf=np.where(kind == int(NodeType.SEND), 0, -1),
        src_off=np.where(kind == int(NodeType.SEND), 5, -1),
        tb=1,
        chan=2,
        names=[f"n{i}" if i % 3 else "" for i in range(n)],
    )


def test_every_node_is_protobufs_serialization_of_what_astrasim_reads(tmp_path: Path) -> None:
    ranks = 4
    g = _random_rank(400, ranks, 7)
    meta = AlgorithmMeta(Collective.ALLTOALL, ranks, 1, 1, name="rnd", size=2**40)
    empty = [RankGraph.from_columns(1, kind=int(NodeType.COMP)) for _ in range(ranks - 1)]
    alg = Algorithm(meta, (g, *empty))
    paths = write_algorithm(alg, tmp_path / "x", attributes="astrasim")
    msgs = _messages(paths[0])
    assert len(msgs) == 1 + len(g)
    for i, body in enumerate(msgs[1:]):
        k = int(g.kind[i])
        node = pb.Node(id=int(g.ids[i]), name=g.names[i], type=k)
        node.data_deps.extend(int(g.ids[d]) for d in g.dep_pos[g.dep_ptr[i] : g.dep_ptr[i + 1]])
        if k == int(NodeType.COMP):
            node.duration_micros = max(int(g.duration[i]), 0)
        else:
            # the reference converter's order; no semantic attributes (cnt, sbuf, soff, tb, chan)
            peer_name = "comm_dst" if k == int(NodeType.SEND) else "comm_src"
            for name, field, value in (
                ("comm_size", "int64_val", int(g.size[i])),
                (peer_name, "int32_val", int(g.peer[i])),
                ("comm_tag", "int32_val", int(g.tag[i])),
            ):
                a = node.attr.add(name=name)
                setattr(a, field, value)
        assert body == node.SerializeToString(), f"node {i}"


def test_global_metadata_is_small_and_typed(tmp_path: Path) -> None:
    g = RankGraph.from_columns(1, kind=int(NodeType.COMP), duration=3)
    alg = Algorithm(
        AlgorithmMeta(
            Collective.ALLREDUCE, 2, 2, 2, name="mine", producer="p", size=64, extra=(("note", "not for ASTRA-sim"),)
        ),
        (g, g),
    )
    paths = write_algorithm(alg, tmp_path / "m", attributes="astrasim")
    for rank, path in enumerate(paths):
        gm, nodes = decode_et(path)
        assert gm.version == "0.0.4"
        assert attrs_of(gm) == [
            ("schema", "string_val", "1.0.2-chakra.0.0.4"),
            ("collective", "string_val", "allreduce"),
            ("ranks", "int32_val", 2),
            ("algorithm", "string_val", "mine"),
            ("size", "int64_val", 64),
            ("rank", "int32_val", rank),
        ]
        assert [(n.type, n.duration_micros, len(n.attr)) for n in nodes] == [(4, 3, 0)]
