"""Reading ASTRA-sim's shipped example ETs (converted by astra-sim/collectiveapi, Apr 2025)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hub.chakra import (
    Algorithm,
    Collective,
    NodeType,
    TypedValue,
    Workload,
    read_algorithm,
    read_trace,
    read_workload,
    summarize,
    write_algorithm,
)


def test_astrasim_algorithm_example(astrasim_example: Path) -> None:
    alg = read_algorithm(astrasim_example / "algorithm" / "custom_allreduce")
    assert alg.ranks == 8
    # the converter writes collective = "<algo>@<coll>" and no profile metadata
    assert alg.collective == Collective.ALLREDUCE
    assert (alg.meta.in_chunks, alg.meta.out_chunks, alg.meta.size) == (0, 0, None)
    assert all(key != "input_file" for key, _v in alg.meta.extra)  # the embedded XML is not kept
    for rank, g in enumerate(alg.graphs):
        assert len(g) == 35
        kinds = g.kind.tolist()
        # 14 SEND + 7 (RECV + COMP) + 7 RECV (chakra-et.md §6.9)
        assert kinds.count(NodeType.SEND) == 14 and kinds.count(NodeType.RECV) == 14
        assert kinds.count(NodeType.COMP) == 7
        n0, n1, n2 = g.node(0), g.node(1), g.node(2)
        assert (n0.kind, n0.size, n0.peer, n0.tag, n0.deps) == (NodeType.SEND, 131072, (rank + 1) % 8, 0, ())
        assert (n1.kind, n1.peer, n1.deps) == (NodeType.RECV, (rank - 1) % 8, (0,))
        assert (n2.kind, n2.duration, n2.deps) == (NodeType.COMP, 7, (1,))
        assert n0.name == "COMM_SEND_NODE_tb0_step0"
        # the converter's comm_type attribute is foreign to the profile: kept for round trips
        assert g.extra[0] == (("comm_type", TypedValue("int64_val", 5)),)
        comm = (g.kind == NodeType.SEND) | (g.kind == NodeType.RECV)
        assert set(g.size[comm].tolist()) == {131072}
    assert alg.graphs[1].node(1).peer == 0


def test_astrasim_example_rewrites(tmp_path: Path, astrasim_example: Path) -> None:
    alg = read_algorithm(astrasim_example / "algorithm" / "custom_allreduce")
    paths = write_algorithm(alg, tmp_path / "c")
    again = read_algorithm(tmp_path / "c")
    assert again.content_hash() == alg.content_hash()
    assert again.graphs[3].extra == alg.graphs[3].extra
    # without the 26 KB embedded XML the files shrink (chakra-et.md §6.8)
    original = (astrasim_example / "algorithm" / "custom_allreduce.0.et").stat().st_size
    assert paths[0].stat().st_size < original // 3


def test_astrasim_workload_example(astrasim_example: Path) -> None:
    wl = read_workload(astrasim_example / "workload" / "all_reduce")
    assert wl.rank_count == 8 and wl.version == "0.0.4"
    for nodes in wl.ranks:
        assert len(nodes) == 1
        n = nodes[0]
        assert (n.type, n.comm_type, n.comm_size, n.name) == (NodeType.COLL, 0, 1048576, "all_reduce_8npus_1MB")
        assert n.collective == Collective.ALLREDUCE and n.is_cpu_op is False
    assert isinstance(read_trace(astrasim_example / "workload" / "all_reduce"), Workload)
    assert isinstance(read_trace(astrasim_example / "algorithm" / "custom_allreduce"), Algorithm)


def test_summary_of_example(astrasim_example: Path) -> None:
    text = summarize(read_algorithm(astrasim_example / "algorithm" / "custom_allreduce"))
    assert "allreduce, 8 ranks" in text
    assert "nodes       280: COMP 56, RECV 112, SEND 112" in text
    # 112 messages of 131072 B = 14 MiB
    assert "messages    112, 14.0 MiB sent" in text
    assert "per rank    nodes 35 .. 35" in text
    assert len(text.splitlines()) <= 24
    wl_text = summarize(read_workload(astrasim_example / "workload" / "all_reduce"))
    assert "allreduce 1.0 MiB x8" in wl_text
    assert np.all([len(line) < 120 for line in text.splitlines()])
