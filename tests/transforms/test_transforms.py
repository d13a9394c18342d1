"""Transforms keep algorithms correct; their structure is checked against hand counts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from hub._result import Result
from hub.chakra import Buffer, Collective, NodeType, write_algorithm
from hub.errors import SemanticsError, StructureError, UsageError
from hub.plugins._spec import RunContext
from hub.transforms import (
    ChunkParams,
    InstancesParams,
    RemapParams,
    StatsParams,
    VerifyParams,
    chunk_transform,
    instances_transform,
    remap_transform,
    split_to_unit_chunks,
    stats_consumer,
    verify_transform,
)
from hub.verify import verify
from tests.verify import verify_handmade as h

CTX = RunContext()

ALGS = [
    pytest.param(lambda: h.ring_allreduce(4), id="ring-ar"),
    pytest.param(lambda: h.ring_allreduce(3, inplace=True), id="ring-ar-inplace"),
    pytest.param(lambda: h.direct_allgather(4), id="ag"),
    pytest.param(lambda: h.direct_allgather(4, inplace=True), id="ag-inplace"),
    pytest.param(lambda: h.recursive_doubling_allgather(4), id="rd-ag"),
    pytest.param(lambda: h.direct_alltoall(4, 2), id="a2a"),
    pytest.param(lambda: h.chain_broadcast(4), id="bcast"),
    pytest.param(lambda: h.chain_reduce(4), id="reduce"),
    pytest.param(lambda: h.direct_reducescatter(4, inplace=True), id="rs-inplace"),
    pytest.param(lambda: h.direct_gather(4, root=1), id="gather"),
    pytest.param(lambda: h.direct_scatter(4, root=3), id="scatter"),
]


def _kinds(g) -> tuple[int, int, int]:
    return (
        int((g.kind == NodeType.SEND).sum()),
        int((g.kind == NodeType.RECV).sum()),
        int((g.kind == NodeType.COMP).sum()),
    )


@pytest.mark.parametrize("make", ALGS)
@pytest.mark.parametrize("k", [1, 2, 3])
def test_chunk_keeps_semantics(make, k: int) -> None:
    alg = make()
    out = chunk_transform(alg, ChunkParams(pieces=k), CTX)
    assert verify(out).ok, verify(out).summary()
    assert out.meta.in_chunks == alg.meta.in_chunks * k and out.meta.out_chunks == alg.meta.out_chunks * k
    assert out.message_count() == alg.message_count() * k


@pytest.mark.parametrize("make", ALGS)
def test_instances_keep_semantics(make) -> None:
    alg = make()
    out = instances_transform(alg, InstancesParams(count=3), CTX)
    rep = verify(out)
    assert rep.ok, rep.summary()
    assert out.meta.out_chunks == 3 * alg.meta.out_chunks


@pytest.mark.parametrize("make", ALGS)
@pytest.mark.parametrize("strategy", ["reverse", "random"])
def test_remap_keeps_semantics(make, strategy: str) -> None:
    alg = make()
    out = remap_transform(alg, RemapParams(strategy=strategy, seed=7), CTX)
    assert verify(out).ok, verify(out).summary()
    assert out.node_count() == alg.node_count()


def test_chunk_structure_by_hand() -> None:
    # 2-rank ring all-reduce, out-of-place: per rank COPY(2 chunks), RS send/recv, AG send/recv
    alg = h.ring_allreduce(2).bind(1000)
    out = chunk_transform(alg, ChunkParams(pieces=2), CTX)
    assert out.meta.in_chunks == 4 and out.meta.size == 1000
    g = out.graphs[0]
    assert len(g) == 10 and _kinds(g) == (4, 4, 2)
    # the COPY of 2 chunks at 0 becomes 2 COPYs of 2 chunks at 0 and 2
    assert g.count[:2].tolist() == [2, 2] and g.src_off[:2].tolist() == [0, 2]
    # rank 0 RS step: send chunk 0 (now chunks 0-1) -> two 1-chunk pieces at 0, 1 with tags 0, 1
    assert g.kind[2] == NodeType.SEND and g.src_off[2:4].tolist() == [0, 1] and g.tag[2:4].tolist() == [0, 1]
    assert g.count[2:4].tolist() == [1, 1]
    # each piece depends on both pieces of the COPY; the next recv pieces depend on both RS recv pieces
    assert g.deps_of(2).tolist() == [0, 1] and g.deps_of(3).tolist() == [0, 1]
    assert g.deps_of(6).tolist() == [4, 5]
    # sizes re-bound: 1000 bytes over 4 chunks -> 250 bytes per chunk, 1 chunk per piece
    assert set(g.size[g.kind == NodeType.SEND].tolist()) == {250}


def test_instances_structure_by_hand() -> None:
    alg = h.direct_allgather(3)  # per rank: COPY, 2 sends, 2 recvs, out = 3 chunks
    out = instances_transform(alg, InstancesParams(count=2), CTX)
    g = out.graphs[1]
    assert len(g) == 10 and out.meta.in_chunks == 2 and out.meta.out_chunks == 6
    # copy 1 uses tags + 1 (largest tag 0), channels + 1, ids shifted by 5
    assert g.tag[5:].tolist() == [0, 1, 1, 1, 1] and g.chan[5:].tolist() == [1] * 5
    assert g.ids.tolist() == list(range(10))
    # rank 1 receives rank 0's block: copy 0 at out[0], copy 1 at out[1] (rank block 0 = [0, 2))
    recv = np.flatnonzero((g.kind == NodeType.RECV) & (g.peer == 0)).tolist()
    assert g.dst_off[recv].tolist() == [0, 1]
    # its local COPY lands in its own block [2, 4)
    assert g.dst_off[[0, 5]].tolist() == [2, 3]


def test_instances_split_messages_crossing_rank_blocks() -> None:
    alg = h.recursive_doubling_allgather(4)  # step 2 sends 2 blocks in one message
    assert int(alg.graphs[0].count.max()) == 2
    out = instances_transform(alg, InstancesParams(count=2), CTX)
    assert int(out.graphs[0].count.max()) == 1
    # 2 steps -> 1 + 2 unit messages per rank, times 2 instances
    assert out.message_count() == 4 * 3 * 2
    assert verify(out).ok
    unit = split_to_unit_chunks(alg)
    assert unit.message_count() == 4 * 3 and verify(unit).ok


def test_remap_structure_and_order() -> None:
    alg = h.direct_allgather(3)
    out = remap_transform(alg, RemapParams(mapping=[2, 0, 1]), CTX)
    # old rank 0's program now runs on rank 2; its peers 1, 2 became 0, 1
    g = out.graphs[2]
    assert sorted(set(g.peer[g.kind == NodeType.SEND].tolist())) == [0, 1]
    assert dict(out.meta.extra)["comm_order"] == "2,0,1"
    # rank file 2 plays communicator rank 0: its output block 0 holds its own input
    assert g.dst_off[0] == 0 and g.dst_buf[0] == Buffer.OUTPUT
    back = remap_transform(out, RemapParams(mapping=[1, 2, 0]), CTX)
    assert "comm_order" not in dict(back.meta.extra) and back.content_hash() == alg.content_hash()
    assert verify(back).ok


def test_remap_order_is_checked_by_the_verifier() -> None:
    # dropping the recorded order makes a remapped all-gather wrong: blocks are in the old order
    out = remap_transform(h.direct_allgather(3), RemapParams(strategy="reverse"), CTX)
    stripped = out.with_meta(extra=())
    rep = verify(stripped)
    assert not rep.ok and rep.failed_level == "semantics"
    assert "rank 0: output chunk 0 holds in[2][0], expected in[0][0]" in [
        str(p).split("] ", 1)[1] for p in rep.problems
    ]


def test_params_validation() -> None:
    with pytest.raises(ValidationError):
        ChunkParams(pieces=0)
    with pytest.raises(ValidationError):
        InstancesParams(count=1, extra=1)  # type: ignore[call-arg]
    with pytest.raises(UsageError, match="permutation of 0..2"):
        remap_transform(h.direct_allgather(3), RemapParams(mapping=[0, 0, 1]), CTX)
    for model in (ChunkParams, InstancesParams, RemapParams, VerifyParams):
        assert all(f.description for f in model.model_fields.values())


def test_chunk_refuses_algorithms_without_buffers() -> None:
    alg = h.ring_allreduce(2).with_meta(in_chunks=0, out_chunks=0)
    with pytest.raises(UsageError, match="no chunk semantics"):
        chunk_transform(alg, ChunkParams(pieces=2), CTX)


def test_verify_transform_passes_or_fails() -> None:
    good = h.ring_allreduce(3)
    assert verify_transform(good, VerifyParams(), CTX) is good
    bad = h.ring_allreduce(4, wrong_send_offset=(0, 1))
    with pytest.raises(SemanticsError):
        verify_transform(bad, VerifyParams(), CTX)
    assert verify_transform(bad, VerifyParams(level="progress"), CTX) is bad
    assert verify_transform(bad, VerifyParams(strict=False), CTX) is bad
    broken = bad.with_meta(ranks=4, out_chunks=3)
    with pytest.raises(StructureError):
        verify_transform(broken, VerifyParams(level="structure"), CTX)


def test_strict_verify_transform_refuses_what_it_cannot_prove(caplog: pytest.LogCaptureFixture) -> None:
    custom = h.ring_allreduce(3).with_meta(collective=Collective.CUSTOM)
    with pytest.raises(SemanticsError, match="ring3: semantics not checked: collective is CUSTOM") as ei:
        verify_transform(custom, VerifyParams(), CTX)  # strict is the default
    assert ei.value.exit_code == 3
    sizes_only = h.ring_allreduce(3).with_meta(in_chunks=0, out_chunks=0)
    with pytest.raises(SemanticsError, match="semantics not checked: no buffer information"):
        verify_transform(sizes_only, VerifyParams(strict=True), CTX)
    # what it can prove it passes, and lenient mode only warns
    assert verify_transform(custom, VerifyParams(level="progress"), CTX) is custom
    with caplog.at_level("WARNING", logger="hub.verify"):
        assert verify_transform(custom, VerifyParams(strict=False), CTX) is custom
    assert "semantics not checked: collective is CUSTOM" in caplog.text


def test_stats_by_hand() -> None:
    n = 4
    alg = h.ring_allreduce(n).bind(4096)  # 4 chunks of 1024 bytes
    res = stats_consumer(alg, StatsParams(), CTX)
    assert isinstance(res, Result) and res.component == "hub.stats"
    m = res.metrics
    assert m["messages"] == n * 2 * (n - 1) == 24
    assert m["bytes"] == 24 * 1024 and m["chunks"] == 24
    assert m["nodes"] == n * (1 + 4 * (n - 1))
    assert m["max_chunks_per_rank_sent"] == 6 and m["links"] == 4
    assert m["steps"] == 2 * (n - 1)
    assert m["critical_path_nodes"] == 1 + 2 * 2 * (n - 1)
    assert m["critical_path_hops"] == 2 * (n - 1)
    assert res.details["per_link"]["0->1"] == {"messages": 6, "chunks": 6, "bytes": 6144}
    assert res.details["per_rank"]["2"]["recvs"] == 6
    unbound = stats_consumer(h.direct_alltoall(3), StatsParams(), CTX).metrics
    assert unbound["bytes"] is None and unbound["steps"] == 1 and unbound["messages"] == 6


def test_stats_of_deadlocked_algorithm_has_no_steps() -> None:
    from hub.chakra import Algorithm, AlgorithmMeta, RankGraphBuilder

    b = [RankGraphBuilder(r) for r in range(2)]
    for r in range(2):
        x = b[r].recv(1 - r, dst=(Buffer.OUTPUT, 0))
        b[r].send(1 - r, src=(Buffer.INPUT, 0), deps=[x])
    alg = Algorithm(AlgorithmMeta(Collective.ALLREDUCE, 2, 1, 1), tuple(x.build() for x in b))
    m = stats_consumer(alg, StatsParams(), CTX).metrics
    assert m["steps"] is None and m["critical_path_hops"] is None and m["messages"] == 2


def test_tags_that_would_overflow_are_refused() -> None:
    from hub.chakra import Algorithm, AlgorithmMeta, RankGraphBuilder

    b = [RankGraphBuilder(r) for r in range(2)]
    b[0].send(1, src=(Buffer.INPUT, 0), tag=2**30)
    b[1].recv(0, dst=(Buffer.OUTPUT, 0), tag=2**30)
    alg = Algorithm(AlgorithmMeta(Collective.BROADCAST, 2, 1, 1, inplace=True), tuple(x.build() for x in b))
    with pytest.raises(UsageError, match="int32 tag range"):
        chunk_transform(alg, ChunkParams(pieces=4), CTX)
    with pytest.raises(UsageError, match="int32 tag range"):
        instances_transform(alg, InstancesParams(count=3), CTX)
    assert verify(chunk_transform(alg, ChunkParams(pieces=1), CTX)).ok


def test_strict_verify_step_on_the_command_line_is_exit_3(tmp_path: Path) -> None:
    import subprocess
    import sys

    write_algorithm(h.ring_allreduce(4).with_meta(collective=Collective.CUSTOM), tmp_path / "cust")
    cmd = [sys.executable, "-m", "hub.cli", "transform", "hub.verify", str(tmp_path / "cust"), str(tmp_path / "out")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3 and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines()[0] == (
        "error: ring4: semantics not checked: collective is CUSTOM, there is no postcondition"
    )
    assert not list(tmp_path.glob("out*"))  # nothing written
    proc = subprocess.run(cmd + ["--set", "strict=false"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "semantics not checked" in proc.stderr
