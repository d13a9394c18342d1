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
