"""Verifier: correct hand-made algorithms pass, each kind of mistake is caught and explained."""

from __future__ import annotations

import numpy as np
import pytest

from hub.chakra import Algorithm, AlgorithmMeta, Buffer, Collective, NodeType, Op, RankGraph, RankGraphBuilder
from hub.errors import DeadlockError, SemanticsError, StructureError, UsageError, VerificationError
from hub.verify import LEVELS, check, verify

from . import verify_handmade as h

IN, OUT, SCR = Buffer.INPUT, Buffer.OUTPUT, Buffer.SCRATCH

CORRECT = [
    pytest.param(lambda: h.ring_allreduce(2), id="ring-allreduce-2"),
    pytest.param(lambda: h.ring_allreduce(4), id="ring-allreduce-4"),
    pytest.param(lambda: h.ring_allreduce(4, inplace=True), id="ring-allreduce-4-inplace"),
    pytest.param(lambda: h.direct_allgather(4), id="allgather-4"),
    pytest.param(lambda: h.direct_allgather(5, inplace=True), id="allgather-5-inplace"),
    pytest.param(lambda: h.direct_alltoall(4), id="alltoall-4"),
    pytest.param(lambda: h.direct_alltoall(3, 2), id="alltoall-3x2"),
    pytest.param(lambda: h.chain_broadcast(4), id="broadcast-chain"),
    pytest.param(lambda: h.chain_broadcast(3, inplace=True), id="broadcast-chain-inplace"),
    pytest.param(lambda: h.chain_reduce(4), id="reduce-chain"),
    pytest.param(lambda: h.direct_reducescatter(4), id="reducescatter"),
    pytest.param(lambda: h.direct_reducescatter(3, inplace=True), id="reducescatter-inplace"),
    pytest.param(lambda: h.direct_gather(4, root=2), id="gather-root2"),
    pytest.param(lambda: h.direct_scatter(4, root=1), id="scatter-root1"),
]


def _alg(coll: Collective, builders: list[RankGraphBuilder], **meta: object) -> Algorithm:
    return Algorithm(AlgorithmMeta(collective=coll, ranks=len(builders), **meta), tuple(b.build() for b in builders))  # type: ignore[arg-type]


def _one(report_or_exc: object) -> str:
    probs = report_or_exc.problems  # type: ignore[attr-defined]
    return "\n".join(str(p) for p in probs)


@pytest.mark.parametrize("make", CORRECT)
def test_correct_algorithms_pass_every_level(make) -> None:
    alg = make()
    rep = verify(alg)
    assert rep.ok, rep.summary()
    assert rep.levels_checked == list(LEVELS)
    assert rep.problems == [] and rep.problem_count == 0
    check(alg)  # does not raise
    d = rep.to_dict()
    assert d["ok"] is True and d["levels_checked"] == ["structure", "progress", "semantics"]


def test_levels_are_cumulative_and_validated() -> None:
    alg = h.ring_allreduce(3)
    assert verify(alg, level="structure").levels_checked == ["structure"]
    assert verify(alg, level="progress").levels_checked == ["structure", "progress"]
    with pytest.raises(UsageError, match="unknown verification level"):
        verify(alg, level="everything")


def test_wrong_chunk_offset_is_a_semantics_error() -> None:
    # rank 1 sends chunk 1 instead of chunk 0 at reduce-scatter step 1: rank 2 then reduces
    # in[1][1] into its chunk 0, which holds in[2][0]
    alg = h.ring_allreduce(4, wrong_send_offset=(1, 1))
    with pytest.raises(SemanticsError) as ei:
        check(alg)
    probs = ei.value.problems
    # the wrong chunk is also one that rank 1 overwrites at all-gather step 0 (node 8) with no
    # path ordering the two: a race, listed before the data errors of the walk
    assert probs[0].rank == 1 and probs[0].node == 3 and probs[0].level == "semantics"
    assert probs[0].message.startswith(
        "race on output chunk 1: SEND to rank 2 (node 3) reads it and RECV from rank 0 (node 8) writes it"
    )
    data = [p for p in probs if not p.message.startswith("race")]
    assert data[0].rank == 2 and data[0].node == 4 and data[0].level == "semantics"
    assert "combines different chunks: in[2][0] with in[1][1]" in data[0].message
    # the damage shows in every rank's output chunk 0
    assert {p.rank for p in data[1:]} == {0, 1, 2, 3}
    assert all("output chunk 0" in p.message and "expected sum of in[0..3][0]" in p.message for p in data[1:])


def test_out_of_bounds_offset_is_a_structure_error() -> None:
    b0, b1 = RankGraphBuilder(0), RankGraphBuilder(1)
    b0.send(1, src=(IN, 1))  # input has 1 chunk
    b1.recv(0, dst=(OUT, 0))
    alg = _alg(Collective.BROADCAST, [b0, b1], in_chunks=1, out_chunks=1)
    rep = verify(alg)
    assert not rep.ok and rep.levels_checked == ["structure"]
    p = rep.problems[0]
    assert (p.rank, p.node) == (0, 0)
    assert "source chunks [1, 2) of the input buffer are out of bounds (it has 1 chunks)" in p.message


def test_missing_receive_leaves_an_unmatched_send() -> None:
    b = [RankGraphBuilder(r) for r in range(3)]
    b[0].send(1, src=(IN, 0))
    b[0].send(2, src=(IN, 0))
    b[1].recv(0, dst=(OUT, 0))  # rank 2 never receives
    alg = _alg(Collective.BROADCAST, b, in_chunks=1, out_chunks=1)
    with pytest.raises(StructureError) as ei:
        check(alg)
    [p] = ei.value.problems
    assert (p.rank, p.node) == (0, 1)
    assert "unmatched SEND to rank 2 tag 0" in p.message and "rank 2 posts 0 RECV(s)" in p.message


def test_receive_without_send() -> None:
    b = [RankGraphBuilder(r) for r in range(2)]
    b[1].recv(0, dst=(OUT, 0), tag=7)
    alg = _alg(Collective.BROADCAST, b, in_chunks=1, out_chunks=1)
    [p] = verify(alg).problems
    assert (p.rank, p.node) == (1, 0)
    assert p.message.startswith("unmatched RECV from rank 0 tag 7: no message ever sent")


def test_size_and_count_mismatch() -> None:
    b = [RankGraphBuilder(r) for r in range(2)]
    b[0].send(1, src=(IN, 0), count=2, size=2048)
    b[1].recv(0, dst=(OUT, 0), count=2, size=1024)
    b[0].send(1, src=(IN, 0), count=1, tag=1)
    b[1].recv(0, dst=(OUT, 0), count=2, tag=1)
    alg = _alg(Collective.BROADCAST, b, in_chunks=2, out_chunks=2)
    rep = verify(alg, level="structure")
    msgs = sorted(p.message for p in rep.problems)
    assert len(msgs) == 2
    assert (
        "RECV from rank 0 tag 0 expects 2 chunk(s) / 1024 bytes but its matching SEND (rank 0 node 0) carries 2 "
        "chunk(s) / 2048 bytes"
    ) in msgs[0]
    assert "RECV from rank 0 tag 1 expects 2 chunk(s)" in msgs[1] and "carries 1 chunk(s)" in msgs[1]


def test_bad_peer_and_self_send() -> None:
    b = [RankGraphBuilder(r) for r in range(2)]
    b[0].send(0, src=(IN, 0))
    b[1].send(5, src=(IN, 0))
    alg = _alg(Collective.BROADCAST, b, in_chunks=1, out_chunks=1)
    msgs = [str(p) for p in verify(alg).problems]
    assert "[structure] rank 0, node 0: SEND destination rank 0 is the node's own rank" in msgs
    assert "[structure] rank 1, node 0: SEND destination rank 5 is not a rank of a 2-rank algorithm" in msgs


def test_deadlock_two_ranks_receive_first() -> None:
    b = [RankGraphBuilder(r) for r in range(2)]
    for r in range(2):
        x = b[r].recv(1 - r, dst=(OUT, 1 - r))
        b[r].send(1 - r, src=(IN, 0), deps=[x])
    alg = _alg(Collective.ALLGATHER, b, in_chunks=1, out_chunks=2, inplace=True)
    assert verify(alg, level="structure").ok  # matched, but ...
    with pytest.raises(DeadlockError) as ei:
        check(alg)
    probs = ei.value.problems
    assert [(p.rank, p.node) for p in probs[:2]] == [(0, 0), (1, 0)]
    assert probs[0].message == (
        "RECV from rank 1 tag 0 waits forever: the matching SEND (rank 1 node 1) "
        "never runs, it depends on unfinished node 0 (RECV from rank 0 tag 0)"
    )
    assert "2 node(s) on 2 rank(s) never run" in probs[2].message
    assert verify(alg, level="progress").levels_checked == ["structure", "progress"]


def test_receive_order_crossing_deadlocks() -> None:
    # rank 0 sends tag 0 then (after it) tag 1; rank 1 waits for tag 1 before posting tag 0:
    # fine under eager sends. Reverse it on the sender to get a real deadlock.
    b = [RankGraphBuilder(r) for r in range(2)]
    r1 = b[0].recv(1, dst=(SCR, 0), tag=2)
    b[0].send(1, src=(IN, 0), tag=0, deps=[r1])
    x = b[1].recv(0, dst=(OUT, 0), tag=0)
    b[1].send(0, src=(IN, 0), tag=2, deps=[x])
    alg = _alg(Collective.BROADCAST, b, in_chunks=1, out_chunks=1, scratch_chunks=1)
    rep = verify(alg)
    assert rep.failed_level == "progress"
    assert rep.not_checked == {"semantics": "the algorithm does not run to completion"}


def test_eager_sends_do_not_deadlock() -> None:
    # both ranks SEND first then RECV: ASTRA-sim's sends are eager, so this completes
    b = [RankGraphBuilder(r) for r in range(2)]
    for r in range(2):
        s = b[r].send(1 - r, src=(IN, 0))
        b[r].recv(1 - r, dst=(OUT, 1 - r), deps=[s])
    alg = _alg(Collective.ALLGATHER, b, in_chunks=1, out_chunks=2, inplace=True)
    assert verify(alg).ok


def test_dependency_cycle_names_the_cycle() -> None:
    # 3 COMP nodes on rank 0: 0 -> 1 -> 2 -> 0 (node i depends on node i+1 mod 3)
    g0 = RankGraph.from_columns(
        3,
        kind=np.full(3, NodeType.COMP),
        ids=np.array([10, 11, 12]),
        dep_ptr=np.array([0, 1, 2, 3]),
        dep_pos=np.array([1, 2, 0]),
    )
    g1 = RankGraph.from_columns(0)
    alg = Algorithm(AlgorithmMeta(Collective.CUSTOM, 2, 0, 0), (g0, g1))
    with pytest.raises(StructureError) as ei:
        check(alg, level="structure")
    [p] = ei.value.problems
    assert p.rank == 0 and "dependency cycle: node" in p.message
    cyc = p.message.split("node ", 1)[1].split(" (")[0].split(" -> ")
    assert sorted(cyc[:-1]) == ["10", "11", "12"] and cyc[0] == cyc[-1]


def test_invalid_dependency_position_and_duplicate_ids() -> None:
    g0 = RankGraph.from_columns(
        2, kind=np.full(2, NodeType.COMP), ids=np.array([4, 4]), dep_ptr=np.array([0, 0, 1]), dep_pos=np.array([9])
    )
    alg = Algorithm(AlgorithmMeta(Collective.CUSTOM, 1, 0, 0), (g0,))
    msgs = [p.message for p in verify(alg).problems]
    assert "node id 4 is used by 2 nodes (positions 0, 1)" in msgs
    assert "depends on position 9, which does not exist (rank has 2 nodes)" in msgs


def test_double_counted_reduction() -> None:
    # 2-rank allreduce where rank 1 sends back the partial sum and rank 0 reduces it again
    b = [RankGraphBuilder(r) for r in range(2)]
    c0 = b[0].comp(Op.COPY, src=(IN, 0), dst=(OUT, 0), count=1)
    s0 = b[0].send(1, src=(IN, 0), deps=[c0])
    b[0].recv(1, dst=(OUT, 0), op=Op.REDUCE, deps=[s0])
    c1 = b[1].comp(Op.COPY, src=(IN, 0), dst=(OUT, 0), count=1)
    x = b[1].recv(0, dst=(OUT, 0), op=Op.REDUCE, deps=[c1])
    b[1].send(0, src=(OUT, 0), deps=[x])  # sends in[0]+in[1] back
    alg = _alg(Collective.ALLREDUCE, b, in_chunks=1, out_chunks=1)
    with pytest.raises(SemanticsError) as ei:
        check(alg)
    p = ei.value.problems[0]
    assert (p.rank, p.node) == (0, 2)
    assert (
        "double-counts in[0][0]: the destination holds in[0][0] and the incoming value holds in[0][0]+in[1][0]"
    ) in p.message


def test_uninitialised_read() -> None:
    b = [RankGraphBuilder(r) for r in range(2)]
    b[0].comp(Op.COPY, src=(IN, 0), dst=(OUT, 0), count=1)
    b[0].send(1, src=(SCR, 0))  # scratch never written
    b[1].recv(0, dst=(OUT, 0))
    alg = _alg(Collective.BROADCAST, b, in_chunks=1, out_chunks=1, scratch_chunks=1)
    rep = verify(alg)
    assert [str(p) for p in rep.problems] == [
        "[semantics] rank 0, node 1: SEND reads scratch chunk 0, which is uninitialised",
        "[semantics] rank 1: output chunk 0 holds an invalid value (see the earlier problem), expected in[0][0]",
    ]


def test_missing_output_names_expected_value() -> None:
    # allgather that forgets the local copy on rank 2
    alg = h.direct_allgather(3)
    g = alg.graphs[2]
    keep = np.arange(1, len(g))
    g2 = RankGraph.from_columns(
        len(keep),
        **{
            c: getattr(g, c)[keep]
            for c in ("kind", "peer", "tag", "count", "src_buf", "src_off", "dst_buf", "dst_off", "op")
        },
    )
    bad = Algorithm(alg.meta, (alg.graphs[0], alg.graphs[1], g2))
    [p] = verify(bad).problems
    assert str(p) == "[semantics] rank 2: output chunk 2 holds nothing (uninitialised), expected in[2][0]"


def test_reduce_postcondition_message_lists_contributors() -> None:
    # all-reduce on 4 ranks that only does the reduce-scatter half: outputs are partial sums
    full = h.ring_allreduce(4, inplace=True)
    graphs = []
    for g in full.graphs:
        n = 6  # 3 RS steps x (send, recv)
        graphs.append(
            RankGraph.from_columns(
                n,
                dep_ptr=g.dep_ptr[: n + 1],
                dep_pos=g.dep_pos[: g.dep_ptr[n]],
                **{
                    c: getattr(g, c)[:n]
                    for c in ("kind", "peer", "tag", "count", "src_buf", "src_off", "dst_buf", "dst_off", "op")
                },
            )
        )
    rep = verify(Algorithm(full.meta, tuple(graphs)))
    msgs = {(p.rank, p.message) for p in rep.problems}
    # rank 0 reduced into chunks 3, 2, 1 in turn; chunk 1 is complete, chunk 0 untouched
    assert (0, "output chunk 0 holds in[0][0], expected sum of in[0..3][0]") in msgs
    assert (0, "output chunk 3 holds in[0][3]+in[3][3], expected sum of in[0..3][3]") in msgs
    assert (0, "output chunk 2 holds in[0][2]+in[2][2]+in[3][2], expected sum of in[0..3][2]") in msgs
    assert not any(r == 0 and "chunk 1 " in m for r, m in msgs)
    assert rep.problem_count == 4 * 3


def test_problem_listing_is_capped_but_counted() -> None:
    # 40 ranks, every RECV missing: 40*39 unmatched sends
    b = [RankGraphBuilder(r) for r in range(40)]
    for r in range(40):
        for q in range(40):
            if q != r:
                b[r].send(q, src=(IN, 0))
    alg = _alg(Collective.ALLGATHER, b, in_chunks=1, out_chunks=40, inplace=True)
    rep = verify(alg)
    assert rep.problem_count == 40 * 39 and len(rep.problems) == 50
    assert rep.to_dict()["truncated"] == 40 * 39 - 50
    with pytest.raises(VerificationError) as ei:
        check(alg)
    assert f"(and {40 * 39 - 1} more problems)" in str(ei.value)
    assert ei.value.hint


def test_foreign_without_buffers_and_custom_say_semantics_were_not_checked() -> None:
    b = [RankGraphBuilder(r) for r in range(2)]
    b[0].send(1, src=(Buffer.NONE, -1), count=0, size=100)
    b[1].recv(0, dst=(Buffer.NONE, -1), count=0, size=100, op=Op.NONE)
    alg = _alg(Collective.ALLREDUCE, b, in_chunks=0, out_chunks=0, name="sizes-only")
    rep = verify(alg)
    assert rep.ok and not rep.complete and rep.levels_checked == ["structure", "progress"]
    assert rep.summary() == (
        "sizes-only: ok (structure, progress; semantics not checked: no buffer information (in_chunks=0, out_chunks=0))"
    )
    custom = h.ring_allreduce(3).with_meta(collective=Collective.CUSTOM)
    rep = verify(custom)
    assert rep.ok and rep.summary() == (
        "ring3: ok (structure, progress; semantics not checked: collective is CUSTOM, there is no postcondition)"
    )
    assert rep.to_dict()["not_checked"] == {"semantics": "collective is CUSTOM, there is no postcondition"}
    check(custom)  # not strict: an unproven level is not an error
    with pytest.raises(SemanticsError, match="semantics not checked: collective is CUSTOM") as ei:
        check(custom, strict=True)
    assert ei.value.exit_code == 3 and "strict: false" in (ei.value.hint or "")
    check(custom, level="progress", strict=True)  # what was asked was proven
    full = verify(h.ring_allreduce(3))
    assert full.complete and full.to_dict()["not_checked"] == {}


def test_meta_shape_mismatch() -> None:
    alg = h.direct_allgather(3).with_meta(out_chunks=4)
    msgs = [p.message for p in verify(alg, level="structure").problems]
    assert (
        "allgather over 3 ranks needs out_chunks = 3 x in_chunks = 3, but meta has 4 (in_chunks=1, out_chunks=4)"
    ) in msgs


def test_concurrent_messages_pairing_differently_at_run_time() -> None:
    # rank 0's first SEND (2 chunks) waits for a RECV; its second SEND (1 chunk) is free, so at
    # run time it reaches rank 1 first and meets the RECV that expects 2 chunks
    b = [RankGraphBuilder(r) for r in range(2)]
    x = b[0].recv(1, dst=(SCR, 0), tag=5)
    b[0].send(1, src=(IN, 0), count=2, deps=[x])
    b[0].send(1, src=(IN, 0), count=1)
    b[1].recv(0, dst=(OUT, 0), count=2)
    b[1].recv(0, dst=(OUT, 0), count=1)
    b[1].send(0, src=(IN, 0), tag=5)
    alg = _alg(Collective.BROADCAST, b, in_chunks=2, out_chunks=2, scratch_chunks=1)
    assert verify(alg, level="progress").ok  # statically matched, and it runs
    probs = verify(alg).problems
    # both RECVs of rank 1 write output chunk 0 unordered: a race, reported first
    assert probs[0].message.startswith(
        "race on output chunk 0: RECV from rank 0 (node 0) writes it and RECV from rank 0 (node 1) writes it"
    )
    p = probs[1]
    assert (p.rank, p.node) == (1, 0)
    assert "RECV of 2 chunk(s) from rank 0 received a message of 1 chunk(s)" in p.message


def test_verify_rejects_non_algorithms() -> None:
    with pytest.raises(UsageError, match="verify needs an Algorithm"):
        verify("ring.et")  # type: ignore[arg-type]


def test_docs_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "verify.md").read_text()
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(code, "docs/verify.md", "exec"), {})
    assert capsys.readouterr().out.strip() == "algorithm: ok (structure, progress, semantics)"


@pytest.mark.parametrize("make", CORRECT)
def test_a_producers_proven_structure_changes_no_report(make) -> None:
    """``structure_proven`` (a producer's guarantee, used by mscclang.ir) skips only the per-node
    structure checks: the report of a correct algorithm is the same, levels included."""
    alg = make()
    assert repr(verify(alg, structure_proven=True)) == repr(verify(alg))
    check(alg, structure_proven=True)


def test_proven_structure_still_checks_the_metadata_and_is_off_by_default() -> None:
    bad_meta = h.direct_allgather(3).with_meta(out_chunks=4)
    rep = verify(bad_meta, structure_proven=True)
    assert rep.failed_level == "structure" and "needs out_chunks" in rep.problems[0].message
    # without the switch, a per-node problem is still found (the default verifies everything)
    g = h.ring_allreduce(2)
    broken = Algorithm(g.meta, (g.graphs[0], RankGraph.from_columns(1, kind=NodeType.SEND, peer=1, count=1)))
    assert verify(broken).failed_level == "structure"
