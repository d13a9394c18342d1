"""Races (hub/verify/_races.py): conflicting chunk accesses that no happens-before path orders.

Every algorithm here is built node by node; each racy one names the two nodes, the rank, the
buffer and the chunk that the test expects from reading the algorithm, not from the code.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hub.algorithms import make
from hub.chakra import Algorithm, AlgorithmMeta, Buffer, Collective, NodeType, Op, RankGraphBuilder, write_algorithm
from hub.errors import SemanticsError
from hub.transforms import chunk_algorithm, instances_algorithm
from hub.verify import check, verify

IN, OUT, SCR = Buffer.INPUT, Buffer.OUTPUT, Buffer.SCRATCH


def _alg(coll: Collective, builders: list[RankGraphBuilder], **meta: object) -> Algorithm:
    return Algorithm(
        AlgorithmMeta(collective=coll, ranks=len(builders), **meta),  # type: ignore[arg-type]
        tuple(b.build() for b in builders),
    )


def _races(alg: Algorithm) -> list[str]:
    return [str(p) for p in verify(alg).problems if p.message.startswith("race")]


def issue_allreduce(comp_first: bool, *, fixed: bool = False) -> Algorithm:
    """The 2-rank in-place all-reduce of issue 10: rank 0's SEND waits for a 7 us COMP while its
    RECV REDUCE into the same chunk does not wait for that SEND. ``comp_first`` puts the COMP
    and the SEND before the RECV in the file (node ids follow the file order); ``fixed`` makes
    the RECV wait for the SEND. Rank 1 orders its own pair."""
    b0, b1 = RankGraphBuilder(0), RankGraphBuilder(1)
    if comp_first:
        c = b0.comp(Op.NONE, duration_micros=7)
        s = b0.send(1, src=(IN, 0), deps=[c])
        b0.recv(1, dst=(IN, 0), op=Op.REDUCE, deps=[s] if fixed else [])
    else:
        rv = b0.recv(1, dst=(IN, 0), op=Op.REDUCE)
        c = b0.comp(Op.NONE, duration_micros=7)
        b0.send(1, src=(IN, 0), deps=[c])
        assert rv == 0
    s1 = b1.send(0, src=(IN, 0))
    b1.recv(0, dst=(IN, 0), op=Op.REDUCE, deps=[s1])
    return _alg(Collective.ALLREDUCE, [b0, b1], in_chunks=1, out_chunks=1, inplace=True, name="ar2")


@pytest.mark.parametrize(
    ("comp_first", "send_id", "recv_id"), [(True, 1, 2), (False, 2, 0)], ids=["comp-send-recv", "recv-comp-send"]
)
def test_issue_allreduce_race_is_caught_in_both_node_orders(comp_first: bool, send_id: int, recv_id: int) -> None:
    alg = issue_allreduce(comp_first)
    assert verify(alg, level="progress").ok  # it runs; only the data is schedule dependent
    with pytest.raises(SemanticsError) as ei:
        check(alg)
    first = ei.value.problems[0]
    assert first.rank == 0 and first.node == min(send_id, recv_id)
    a, b = sorted([(send_id, "SEND to rank 1", "reads"), (recv_id, "RECV REDUCE from rank 1", "writes")])
    assert first.message == (
        f"race on input chunk 0: {a[1]} (node {a[0]}) {a[2]} it and {b[1]} (node {b[0]}) "
        f"{b[2]} it, and no chain of dependencies and messages orders them"
    )
    assert len(_races(alg)) == 1  # rank 1 orders its pair


def test_issue_allreduce_with_the_dependency_is_accepted() -> None:
    rep = verify(issue_allreduce(True, fixed=True))
    assert rep.ok and rep.complete, rep.summary()


def test_race_is_exit_3_on_the_command_line(tmp_path: Path) -> None:
    write_algorithm(issue_allreduce(False), tmp_path / "ar2")
    proc = subprocess.run(
        [sys.executable, "-m", "hub.cli", "trace", "verify", str(tmp_path / "ar2")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert proc.stdout.startswith(
        "[semantics] rank 0, node 0: race on input chunk 0: RECV REDUCE from rank 1 "
        "(node 0) writes it and SEND to rank 1 (node 2) reads it"
    )
    assert "Traceback" not in proc.stderr
    proc = subprocess.run(
        [sys.executable, "-m", "hub.cli", "trace", "verify", str(tmp_path / "ar2"), "-f", "json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    doc = json.loads(proc.stdout)
    assert proc.returncode == 3 and doc["ok"] is False and doc["problems"][0]["level"] == "semantics"


def test_two_unordered_writes_race_even_when_the_sum_is_right() -> None:
    # 3-rank reduce-scatter whose rank 0 does not chain its two RECV REDUCEs: a reduction is a
    # read-modify-write, so two of them on one chunk conflict although the walk's sum is right
    bs = [RankGraphBuilder(r) for r in range(3)]
    for r, b in enumerate(bs):
        c = b.comp(Op.COPY, src=(IN, r), dst=(OUT, 0), count=1)
        peers = [q for q in range(3) if q != r]
        if r == 0:
            for q in peers:
                b.recv(q, dst=(OUT, 0), op=Op.REDUCE, deps=[c])
            for q in peers:
                b.send(q, src=(IN, q))
        else:
            for q in peers:
                b.send(q, src=(IN, q))
            prev = c
            for q in peers:
                prev = b.recv(q, dst=(OUT, 0), op=Op.REDUCE, deps=[prev])
    alg = _alg(Collective.REDUCESCATTER, bs, in_chunks=3, out_chunks=1)
    assert _races(alg) == [
        "[semantics] rank 0, node 1: race on output chunk 0: RECV REDUCE from rank 1 (node 1) "
        "writes it and RECV REDUCE from rank 2 (node 2) writes it, and no chain of dependencies "
        "and messages orders them"
    ]
    assert verify(alg).problem_count == 1  # the one schedule the walk ran sums correctly


def test_every_pair_of_three_unordered_writers_is_named() -> None:
    b0, b1 = RankGraphBuilder(0), RankGraphBuilder(1)
    for t in range(3):
        b0.send(1, src=(IN, 0), tag=t)
        b1.recv(0, dst=(OUT, 0), tag=t)
    alg = _alg(Collective.BROADCAST, [b0, b1], in_chunks=1, out_chunks=1)
    races = _races(alg)
    pairs = sorted(tuple(int(x) for x in re.findall(r"\(node (\d+)\)", r)) for r in races)
    assert pairs == [(0, 1), (0, 2), (1, 2)]
    assert all(
        r.startswith("[semantics] rank 1, node ") and "race on output chunk 0: RECV from rank 0" in r for r in races
    )


def test_comp_copy_reads_while_a_recv_writes_its_source() -> None:
    # out-of-place broadcast, rank 1: a COMP copies output chunk 0 to scratch while the RECV
    # that fills output chunk 0 is not ordered with it
    b0, b1 = RankGraphBuilder(0), RankGraphBuilder(1)
    c = b0.comp(Op.COPY, src=(IN, 0), dst=(OUT, 0), count=1)
    b0.send(1, src=(OUT, 0), deps=[c])
    b1.recv(0, dst=(OUT, 0))
    b1.comp(Op.COPY, src=(OUT, 0), dst=(SCR, 0), count=1)
    alg = _alg(Collective.BROADCAST, [b0, b1], in_chunks=1, out_chunks=1, scratch_chunks=1)
    assert _races(alg) == [
        "[semantics] rank 1, node 0: race on output chunk 0: RECV from rank 0 (node 0) writes "
        "it and COMP COPY (node 1) reads it, and no chain of dependencies and messages orders them"
    ]


def test_scratch_reuse_and_multi_chunk_races_are_reported_once_per_pair() -> None:
    # rank 1 receives 2 chunks into scratch and forwards them, then a second RECV lands in the
    # same scratch slots without waiting for the forwarding SEND to read them
    b0, b1, b2 = RankGraphBuilder(0), RankGraphBuilder(1), RankGraphBuilder(2)
    c = b0.comp(Op.COPY, src=(IN, 0), dst=(OUT, 0), count=2)
    b0.send(1, src=(IN, 0), count=2, tag=1)
    b0.send(1, src=(IN, 0), count=2, tag=2)
    b0.send(2, src=(IN, 0), count=2, tag=3, deps=[c])
    x = b1.recv(0, dst=(SCR, 0), count=2, tag=1)
    b1.send(2, src=(SCR, 0), count=2, tag=4, deps=[x])
    y = b1.recv(0, dst=(SCR, 0), count=2, tag=2, deps=[x])
    b1.comp(Op.COPY, src=(SCR, 0), dst=(OUT, 0), count=2, deps=[y])
    b2.recv(1, dst=(SCR, 0), count=2, tag=4)
    b2.recv(0, dst=(OUT, 0), count=2, tag=3)
    alg = _alg(Collective.BROADCAST, [b0, b1, b2], in_chunks=2, out_chunks=2, scratch_chunks=2)
    assert _races(alg) == [
        "[semantics] rank 1, node 1: race on scratch chunk 0 (and 1 more chunk): SEND to rank 2 "
        "(node 1) reads it and RECV from rank 0 (node 2) writes it, and no chain of "
        "dependencies and messages orders them"
    ]


def test_in_place_aliasing_names_both_buffers() -> None:
    # in-place all-gather: rank 1's input IS its output block 1. It sends its input to rank 0
    # and, unordered, receives rank 0's block into output block 1 (wrong slot, and a race)
    b0, b1 = RankGraphBuilder(0), RankGraphBuilder(1)
    b0.send(1, src=(OUT, 0))
    s = b0.recv(1, dst=(OUT, 1))
    assert s == 1
    b1.send(0, src=(IN, 0))
    b1.recv(0, dst=(OUT, 1))
    alg = _alg(Collective.ALLGATHER, [b0, b1], in_chunks=1, out_chunks=2, inplace=True)
    assert _races(alg)[0].startswith(
        "[semantics] rank 1, node 0: race on input chunk 0 (= output chunk 1): "
        "SEND to rank 0 (node 0) reads it and RECV from rank 0 (node 1) writes it"
    )


def test_order_through_other_ranks_counts() -> None:
    # rank 0 sends chunk 0 and later overwrites it with no local dependency: only the round
    # trip 0 -> 1 -> 0 orders the overwrite after the read. With the round trip it is correct;
    # when rank 1 replies without waiting, it is a race.
    def build(wait: bool) -> Algorithm:
        b0, b1 = RankGraphBuilder(0), RankGraphBuilder(1)
        b0.send(1, src=(IN, 0))
        b0.recv(1, dst=(IN, 0))
        x = b1.recv(0, dst=(IN, 0))
        b1.send(0, src=(IN, 0), deps=[x] if wait else [])
        return _alg(Collective.BROADCAST, [b0, b1], in_chunks=1, out_chunks=1, inplace=True, root=0)

    assert verify(build(True)).ok
    races = _races(build(False))
    assert races and races[0].startswith(
        "[semantics] rank 0, node 0: race on input chunk 0: SEND to rank 1 (node 0) "
        "reads it and RECV from rank 1 (node 1) writes it"
    )


def test_unordered_messages_on_one_connection_are_an_assumption_not_a_race() -> None:
    # a pipelined chain broadcast: rank 1 forwards each piece as it arrives; its two SENDs to
    # rank 2 are unordered (each waits only for its own RECV), so their pairing with rank 2's
    # RECVs is the issue order: noted, not an error
    b0, b1, b2 = RankGraphBuilder(0), RankGraphBuilder(1), RankGraphBuilder(2)
    for k in range(2):
        b0.send(1, src=(IN, k))
    xs = [b1.recv(0, dst=(IN, k)) for k in range(2)]
    for k in range(2):
        b1.send(2, src=(IN, k), deps=[xs[k]])
    for k in range(2):
        b2.recv(1, dst=(IN, k))
    alg = _alg(Collective.BROADCAST, [b0, b1, b2], in_chunks=2, out_chunks=2, inplace=True, root=0)
    rep = verify(alg)
    assert rep.ok and rep.complete, rep.summary()
    assert any(n.startswith("assumed: ") and "rank 0 SENDs to rank 1 tag 0, nodes 0 and 1" in n for n in rep.notes)


def _builtin_cases() -> list[tuple[str, str, int]]:
    from hub.algorithms import CATALOG
    from hub.errors import AlgorithmError

    cases = []
    for name, colls in sorted(CATALOG.items()):
        for coll in sorted(colls):
            for n in (3, 4, 8):
                try:
                    make(name, coll, n)
                except AlgorithmError:  # a documented refusal (e.g. a power of two needed): no case
                    continue
                cases.append((name, coll, n))
    return cases


@pytest.mark.parametrize(("name", "coll", "n"), _builtin_cases(), ids=lambda v: str(v))
def test_builtins_chunked_and_with_instances_have_no_races(name: str, coll: str, n: int) -> None:
    base = make(name, coll, n)
    for alg in (
        base,
        chunk_algorithm(base, 3),
        instances_algorithm(base, 2),
        instances_algorithm(chunk_algorithm(base, 2), 2),
    ):
        rep = verify(alg)
        assert rep.ok and rep.complete, rep.summary()


def test_an_analysis_too_large_is_reported_as_not_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    from hub.verify import _races

    monkeypatch.setattr(_races, "_MAX_WORK_CELLS", 10)  # stands in for a hostile, huge input
    alg = make("ring", "allreduce", 4)
    rep = verify(alg)
    assert rep.ok and not rep.complete
    why = rep.not_checked["races"]
    assert why.startswith("the happens-before analysis would propagate ") and why.endswith(" nodes")
    assert rep.summary().startswith(f"{alg.meta.name}: ok (structure, progress, semantics; races not checked: ")
    with pytest.raises(SemanticsError, match="races not checked"):
        check(alg, strict=True)


def _random_algorithm(rng: random.Random) -> Algorithm:
    """A random deadlock-free algorithm: nodes are created in one global order, each depending
    on earlier nodes of its rank and each RECV created after its SEND, so that order is an
    execution; every message has its own tag, so the pairing is fixed. Accesses are random
    single chunks of the input, output and scratch (4 chunks each, out of place)."""
    R = rng.randint(2, 4)
    bs = [RankGraphBuilder(r) for r in range(R)]
    made: list[list[int]] = [[] for _ in range(R)]
    pending: list[tuple[int, int, int]] = []  # (dst, src, tag) of sent messages not yet received
    bufs = (IN, OUT, SCR)

    def deps(r: int) -> list[int]:
        return rng.sample(made[r], rng.randint(0, min(2, len(made[r]))))

    def where() -> tuple[Buffer, int]:
        b = rng.choice(bufs)
        return b, rng.randrange(4)

    for tag in range(rng.randint(4, 40)):
        what = rng.random()
        if pending and what < 0.4:
            dst, src, t = pending.pop(rng.randrange(len(pending)))
            p = bs[dst].recv(src, dst=where(), op=rng.choice([Op.COPY, Op.REDUCE]), tag=t, deps=deps(dst))
            made[dst].append(p)
        elif what < 0.8:
            src = rng.randrange(R)
            dst = rng.choice([q for q in range(R) if q != src])
            p = bs[src].send(dst, src=where(), tag=tag, deps=deps(src))
            made[src].append(p)
            pending.append((dst, src, tag))
        else:
            r = rng.randrange(R)
            made[r].append(
                bs[r].comp(rng.choice([Op.COPY, Op.REDUCE]), src=where(), dst=where(), count=1, deps=deps(r))
            )
    for dst, src, t in pending:
        bs[dst].recv(src, dst=where(), count=1, tag=t)
    return _alg(Collective.BROADCAST, bs, in_chunks=4, out_chunks=4, scratch_chunks=4)


def _brute_force_races(alg: Algorithm) -> set[tuple[int, int, int]]:
    """(rank, id, id) of every conflicting pair no path of dependencies and messages orders,
    by a plain search per node: written from the semantics in docs/verify.md, not the code."""
    nodes = [(r, i) for r, g in enumerate(alg.graphs) for i in range(len(g))]
    succ: dict[tuple[int, int], list[tuple[int, int]]] = {v: [] for v in nodes}
    sends: dict[tuple[int, int, int], list[tuple[int, int]]] = {}
    recvs: dict[tuple[int, int, int], list[tuple[int, int]]] = {}
    for r, g in enumerate(alg.graphs):
        for i in range(len(g)):
            for d in g.deps_of(i).tolist():
                succ[(r, int(d))].append((r, i))
            k, peer, tag = int(g.kind[i]), int(g.peer[i]), int(g.tag[i])
            if k == NodeType.SEND:
                sends.setdefault((r, peer, tag), []).append((r, i))
            elif k == NodeType.RECV:
                recvs.setdefault((peer, r, tag), []).append((r, i))
    for key, ss in sends.items():  # one message per tag: pairing is unambiguous
        succ[ss[0]].append(recvs[key][0])
    reach: dict[tuple[int, int], set[tuple[int, int]]] = {}
    for v in nodes:
        seen, todo = set(), list(succ[v])
        while todo:
            x = todo.pop()
            if x not in seen:
                seen.add(x)
                todo.extend(succ[x])
        reach[v] = seen
    base = {int(IN): 0, int(OUT): 4, int(SCR): 8}
    acc: dict[tuple[int, int], dict[tuple[int, int], bool]] = {}
    for r, g in enumerate(alg.graphs):
        for i in range(len(g)):
            k, op, c = int(g.kind[i]), int(g.op[i]), int(g.count[i])
            reads = k == NodeType.SEND or (k == NodeType.COMP and op in (Op.COPY, Op.REDUCE))
            writes = k == NodeType.RECV or (k == NodeType.COMP and op in (Op.COPY, Op.REDUCE))
            for flag, b, o in ((False, g.src_buf[i], g.src_off[i]), (True, g.dst_buf[i], g.dst_off[i])):
                if writes if flag else reads:
                    for e in range(c):
                        slot = acc.setdefault((r, base[int(b)] + int(o) + e), {})
                        slot[(r, i)] = slot.get((r, i), False) or flag
    out = set()
    for slot in acc.values():
        items = sorted(slot.items())
        for x in range(len(items)):
            for y in range(x + 1, len(items)):
                (u, wu), (v, wv) = items[x], items[y]
                if (wu or wv) and v not in reach[u] and u not in reach[v]:
                    g = alg.graphs[u[0]]
                    out.add((u[0], int(g.ids[u[1]]), int(g.ids[v[1]])))
    return out


@pytest.mark.parametrize("seed", range(300))
def test_random_algorithms_report_exactly_the_brute_force_races(seed: int) -> None:
    alg = _random_algorithm(random.Random(seed))
    rep = verify(alg, max_problems=10_000)
    if rep.failed_level in ("structure", "progress"):
        pytest.fail(rep.summary())  # the generator only makes runnable algorithms
    got = set()
    for p in rep.problems:
        if p.message.startswith("race on"):
            a, b = (int(x) for x in re.findall(r"\(node (\d+)\)", p.message))
            got.add((p.rank, min(a, b), max(a, b)))
    assert got == _brute_force_races(alg)


@pytest.mark.parametrize("budget", [0, 1])
@pytest.mark.parametrize("seed", range(100))
def test_the_clocks_decide_as_the_bounded_search_does(seed: int, budget: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Queries go to a bounded search first and to the vector clocks when it gives up; with no
    search (budget 0) the clocks decide every query, with budget 1 both share them, and the
    report must not change."""
    from hub.verify import _races

    alg = _random_algorithm(random.Random(seed))
    searched = verify(alg, max_problems=10_000)
    monkeypatch.setattr(_races, "_REACH_BUDGET", budget)
    assert verify(alg, max_problems=10_000) == searched


def test_unordered_consecutive_messages_are_counted_alike_by_search_and_clocks(monkeypatch: pytest.MonkeyPatch) -> None:
    # a ring all-reduce whose steps share one tag: step s + 1's SEND waits for step s's RECV, not
    # for step s's SEND, so every two consecutive SENDs (and RECVs) of a rank are unordered
    from hub.verify import _races

    n = 5
    bs = [RankGraphBuilder(r) for r in range(n)]
    for r, b in enumerate(bs):
        prev: list[int] = []
        for s in range(2 * (n - 1)):
            red = s < n - 1
            send_at = (r - s) % n if red else (r + 1 - (s - n + 1)) % n
            recv_at = (r - s - 1) % n if red else (r - (s - n + 1)) % n
            b.send((r + 1) % n, src=(IN, send_at), deps=prev)
            x = b.recv((r - 1) % n, dst=(IN, recv_at), op=Op.REDUCE if red else Op.COPY, deps=prev)
            prev = [x]
    alg = _alg(Collective.ALLREDUCE, bs, in_chunks=n, out_chunks=n, inplace=True)
    searched = verify(alg)
    assert searched.ok and searched.notes and "pair(s) of messages on one connection" in searched.notes[0]
    monkeypatch.setattr(_races, "_REACH_BUDGET", 0)
    assert verify(alg) == searched
