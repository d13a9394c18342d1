"""The race check batch by batch of ranks (hub/verify/_accesses.py): the same findings as one batch.

The expected races come from reading the planted node (a COMP that overwrites a chunk the ring
also reads and writes, with no dependency), not from the code; the batched reports must equal
the single-batch ones exactly, counts, wording and order included.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from hub.chakra import Algorithm, AlgorithmMeta, Buffer, Collective, Op, RankGraphBuilder
from hub.verify import _accesses, verify
from hub.verify._report import ProblemSink
from hub.verify._structure import check_structure

from .test_races import _random_algorithm

IN = Buffer.INPUT


def _ring(n: int, plant: int | None = None, steps_tagged: bool = True) -> Algorithm:
    """An in-place ring all-reduce on ``n`` ranks (one chunk per rank, a tag per step), built
    node by node (with ``steps_tagged`` false: one tag, and each RECV waits for the previous step
    only, so consecutive messages of a rank are unordered); with ``plant``, rank ``plant`` also
    copies its input chunk 1 over chunk 0 with no dependency: that COMP races with every access
    of chunk 0 on that rank (and with the writes of chunk 1)."""
    bs = [RankGraphBuilder(r) for r in range(n)]
    for r, b in enumerate(bs):
        prev: list[int] = []
        for s in range(2 * (n - 1)):
            red = s < n - 1
            send_at = (r - s) % n if red else (r + 1 - (s - n + 1)) % n
            recv_at = (r - s - 1) % n if red else (r - (s - n + 1)) % n
            tag = s if steps_tagged else 0
            x = b.send((r + 1) % n, src=(IN, send_at), tag=tag, deps=prev)
            y = b.recv(
                (r - 1) % n,
                dst=(IN, recv_at),
                op=Op.REDUCE if red else Op.COPY,
                tag=tag,
                deps=[x] if steps_tagged else prev,
            )
            prev = [y]
        if r == plant:
            b.comp(Op.COPY, src=(IN, 1), dst=(IN, 0), count=1)
    meta = AlgorithmMeta(collective=Collective.ALLREDUCE, ranks=n, in_chunks=n, out_chunks=n, inplace=True)
    return Algorithm(meta, tuple(b.build() for b in bs))


def _batches_of(alg: Algorithm) -> list[tuple[int, int]]:
    f, _ = check_structure(alg, ProblemSink("structure"))
    assert f is not None
    return _accesses.batches(f)


def test_a_race_planted_in_the_last_rank_is_found_batch_by_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    n = 24
    racy = _ring(n, plant=n - 1)
    whole = verify(racy, max_problems=1000)
    monkeypatch.setattr(_accesses, "BATCH_ACCESSES", 3 * n)  # a few ranks a batch
    assert len(_batches_of(racy)) >= n // 3  # many batches, the planted rank in the last
    assert _batches_of(racy)[-1][1] == n
    streamed = verify(racy, max_problems=1000)
    assert streamed == whole
    races = [p for p in streamed.problems if p.message.startswith("race on ")]
    # the COMP writes chunk 0 (racing with every access of it) and reads chunk 1 (racing with its
    # writes), all on the planted rank; the output is wrong too
    assert {p.message.split(":")[0] for p in races} == {"race on input chunk 0", "race on input chunk 1"}
    assert all(p.rank == n - 1 and "COMP COPY" in p.message for p in races)
    assert streamed.problem_count == len(streamed.problems) > len(races)
    assert verify(_ring(n), max_problems=1000).ok  # the same ring without the COMP: no race


def test_a_race_in_the_first_of_many_batches_is_found_too(monkeypatch: pytest.MonkeyPatch) -> None:
    n = 16
    racy = _ring(n, plant=0)
    whole = verify(racy, max_problems=3)
    monkeypatch.setattr(_accesses, "BATCH_ACCESSES", 1)  # every rank a batch of its own
    assert _batches_of(racy) == [(r, r + 1) for r in range(n)]
    streamed = verify(racy, max_problems=3)
    assert streamed == whole and not streamed.ok and {p.rank for p in streamed.problems} == {0}


def test_the_assumed_pairings_do_not_depend_on_the_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    alg = _ring(6, steps_tagged=False)  # consecutive messages of a rank share a key: a note
    whole = verify(alg)
    monkeypatch.setattr(_accesses, "BATCH_ACCESSES", 1)
    assert verify(alg) == whole and whole.ok and whole.notes


@pytest.mark.parametrize("seed", range(60))
def test_random_algorithms_report_alike_in_one_batch_and_per_rank(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    alg = _random_algorithm(random.Random(seed))
    whole = verify(alg, max_problems=10_000)
    monkeypatch.setattr(_accesses, "BATCH_ACCESSES", 1)
    assert verify(alg, max_problems=10_000) == whole


def test_batches_cover_every_rank_and_respect_the_limit() -> None:
    alg = _ring(10)
    f, _ = check_structure(alg, ProblemSink("structure"))
    assert f is not None
    # each rank reads 18 chunks (SENDs) and writes 18 (RECVs): 36 accesses a rank
    assert _accesses.batches(f, 36 * 3) == [(0, 3), (3, 6), (6, 9), (9, 10)]
    assert _accesses.batches(f, 1) == [(r, r + 1) for r in range(10)]
    assert _accesses.batches(f, 10**9) == [(0, 10)]
    acc = _accesses.accesses(f, np.zeros((10, 3), np.int64), np.zeros(f.n, np.int64), 10, 9, 10)
    assert int(acc.node.min()) >= int(f.offsets[9]) and int(acc.addr.min()) >= 90  # global indices


def test_an_analysis_too_large_is_declined_alike_batch_by_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    from hub.verify import _races

    ring = _ring(12, steps_tagged=False)  # the unordered consecutive messages need the clocks
    n = ring.node_count()
    monkeypatch.setattr(_races, "_REACH_BUDGET", 0)  # every query off a chain goes to the clocks
    monkeypatch.setattr(_races, "_MAX_WORK_CELLS", n)  # one clock column at most
    whole = verify(ring)
    assert whole.ok and whole.not_checked["races"].endswith(f" clocks over {n} nodes")
    monkeypatch.setattr(_accesses, "BATCH_ACCESSES", 1)
    assert verify(ring) == whole


def _per_chunk(f: object, base: np.ndarray, M: int) -> set[tuple[int, int, bool]]:
    """The reference: (node, global address, writes) for every chunk each node touches, read off
    the node columns one chunk at a time (a node that reads and writes a chunk writes it)."""
    from hub.chakra import NodeType

    touched: dict[tuple[int, int], bool] = {}
    for v in range(f.n):  # type: ignore[attr-defined]
        kind, op, cnt, r = int(f.kind[v]), int(f.op[v]), int(f.count[v]), int(f.rank[v])  # type: ignore[attr-defined]
        data_comp = kind == int(NodeType.COMP) and op in (int(Op.COPY), int(Op.REDUCE))
        sides = []
        if kind == int(NodeType.SEND) or data_comp:
            sides.append((int(f.src_buf[v]), int(f.src_off[v]), False))  # type: ignore[attr-defined]
        if kind == int(NodeType.RECV) or data_comp:
            sides.append((int(f.dst_buf[v]), int(f.dst_off[v]), True))  # type: ignore[attr-defined]
        for buf, off, w in sides:
            for x in range(cnt):
                key = (v, r * M + int(base[r, buf]) + off + x)
                touched[key] = touched.get(key, False) or w
    return {(v, a, w) for (v, a), w in touched.items()}


@pytest.mark.parametrize(
    "name, n", [("halving_doubling", 16), ("halving_doubling", 12), ("hierarchical", 16), ("ring", 6)]
)
def test_segments_touch_exactly_the_chunks_of_the_ranges(name: str, n: int) -> None:
    """Accesses are one per node and elementary segment of its range: expanded by their spans
    they are exactly the per-chunk accesses, and every chunk of a segment has the same accessors."""
    from hub.algorithms import make
    from hub.transforms import chunk_algorithm
    from hub.verify._semantics import buffer_bases

    for alg in (make(name, "allreduce", n), chunk_algorithm(make(name, "allreduce", n), 3)):
        f, _ = check_structure(alg, ProblemSink("structure"))
        assert f is not None
        base = buffer_bases(alg.meta)
        M = alg.meta.in_chunks + alg.meta.out_chunks + alg.meta.scratch_chunks + 1
        acc = _accesses.accesses(f, base, np.zeros(f.n, np.int64), M, 0, n)
        got = {
            (int(v), int(a) + x, bool(w))
            for v, a, w, s in zip(acc.node, acc.addr, acc.write, acc.span, strict=True)
            for x in range(int(s))
        }
        assert got == _per_chunk(f, base, M)
        assert acc.node.shape[0] < len(got) or name != "halving_doubling"  # its ranges stay ranges
        # addresses sorted, each segment's accesses contiguous and starting at its group
        assert np.all(np.diff(acc.addr) >= 0)
        assert np.array_equal(
            acc.group,
            np.maximum.accumulate(np.where(np.r_[True, np.diff(acc.addr) > 0], np.arange(acc.addr.shape[0]), 0)),
        )


def test_a_race_over_a_range_names_its_first_chunk_and_counts_the_rest() -> None:
    """Rank 1 receives input chunks 0..3 while a COMP with no dependency copies chunks 4..7 over
    2..5: the two writes overlap on chunks 2 and 3 (chunks 4..7 are touched by the COMP alone)."""
    b0, b1 = RankGraphBuilder(0), RankGraphBuilder(1)
    b0.send(1, src=(IN, 0), count=4, tag=0)
    b1.recv(0, dst=(IN, 0), count=4, tag=0)
    b1.comp(Op.COPY, src=(IN, 4), dst=(IN, 2), count=4)
    meta = AlgorithmMeta(collective=Collective.ALLREDUCE, ranks=2, in_chunks=8, out_chunks=8, inplace=True)
    rep = verify(Algorithm(meta, (b0.build(), b1.build())), max_problems=100)
    races = [p.message for p in rep.problems if p.message.startswith("race on ")]
    assert races == [
        "race on input chunk 2 (and 1 more chunk): RECV from rank 0 (node 0) writes it and COMP COPY (node 1) "
        "writes it, and no chain of dependencies and messages orders them"
    ]
