"""hub.chakra.check_algorithm: plausible values, shared by the reader and the consumers.

Every algorithm the built-in producers and transforms make passes (no false alarms, sizes
bound exactly or after re-chunking); an unverified in-memory algorithm with an implausible
value is refused by every consumer that relies on it (hub.simulate, mscclang.export,
astrasim.bundle) with a TraceFormatError (exit 3) naming the rank, node and attribute.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from hub.algorithms import CATALOG, make
from hub.chakra import Algorithm, NodeType, check_algorithm
from hub.errors import AlgorithmError, ExitCode, TraceFormatError
from hub.transforms import chunk_algorithm, instances_algorithm, remap_algorithm


def _all_builtin() -> list[Algorithm]:
    algs = []
    for name, colls in CATALOG.items():
        for coll in sorted(colls):
            for n in (4, 8):
                try:
                    algs.append(
                        make(name, coll, n, root=1)
                        if coll in ("broadcast", "reduce", "gather", "scatter")
                        else make(name, coll, n)
                    )
                except (AlgorithmError, ValueError):
                    continue
    return algs


def test_builtin_algorithms_and_transforms_pass() -> None:
    algs = _all_builtin()
    assert len(algs) > 20
    for alg in algs:
        for size in (1, 1000, 1 << 20):
            bound = alg.bind(size)
            check_algorithm(bound)
            check_algorithm(chunk_algorithm(bound, 3))
            check_algorithm(instances_algorithm(bound, 2))
            check_algorithm(remap_algorithm(bound, list(reversed(range(bound.ranks)))))
        check_algorithm(alg)
        check_algorithm(alg.bind(0))


def _damaged(change: Callable[[Algorithm], Algorithm]) -> Algorithm:
    return change(make("ring", "allreduce", 4).bind(1 << 20))


def _col(rank: int, column: str, pos: int, value: int) -> Callable[[Algorithm], Algorithm]:
    def change(alg: Algorithm) -> Algorithm:
        g = alg.graphs[rank].copy()
        getattr(g, column)[pos] = value
        return Algorithm(alg.meta, tuple(g if r == rank else h for r, h in enumerate(alg.graphs)))

    return change


BAD = {
    "zero-byte message": (_col(1, "size", 0, 0), ("rank 1", "node 0", "comm_size = 0")),
    "negative size": (_col(2, "size", 1, -9), ("rank 2", "node 1", "comm_size = -9")),
    "message beyond the declared size": (_col(3, "size", 0, 1 << 40), ("rank 3", "comm_size", "declared size")),
    "peer out of range": (_col(0, "peer", 0, 7), ("rank 0", "node 0", "comm_dst = 7")),
    "op out of range": (_col(0, "op", 1, 5), ("rank 0", "node 1", "op = 5")),
    "tb out of range": (_col(0, "tb", 1, -3), ("rank 0", "node 1", "tb = -3")),
    "negative count": (_col(2, "count", 0, -1), ("rank 2", "node 0", "cnt = -1")),
    "huge scratch": (lambda a: a.with_meta(scratch_chunks=(1 << 31) - 1), ("scratch_chunks", "limit")),
    "negative in_chunks": (lambda a: a.with_meta(in_chunks=-2), ("in_chunks = -2",)),
    "root out of range": (lambda a: a.with_meta(root=4), ("root = 4",)),
    "negative size meta": (lambda a: Algorithm(replace(a.meta, size=-1), a.graphs), ("size = -1",)),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_check_names_rank_node_attribute(case: str) -> None:
    change, needles = BAD[case]
    with pytest.raises(TraceFormatError) as info:
        check_algorithm(_damaged(change), what="algorithm 'ring'")
    text = str(info.value)
    assert info.value.exit_code == ExitCode.VALIDATION and info.value.hint and "\n" not in text
    assert text.startswith("algorithm 'ring'")
    for needle in needles:
        assert needle in text, (needle, text)


@pytest.mark.parametrize("case", ["zero-byte message", "peer out of range", "huge scratch", "op out of range"])
def test_consumers_check_unverified_input(case: str, tmp_path: Path) -> None:
    from hub.sim import simulate

    alg = _damaged(BAD[case][0])
    with pytest.raises(TraceFormatError):
        simulate(alg, "ring:4")
    pytest.importorskip("collhub_mscclang")
    with pytest.raises(TraceFormatError):
        _export(alg, tmp_path)
    astrasim = pytest.importorskip("collhub_astrasim")
    with pytest.raises(TraceFormatError):
        astrasim.build_bundle(alg, out=tmp_path / "b", dims=[astrasim.Dim("Ring", 4, 50, 500)], predict=False)
    assert list(tmp_path.iterdir()) == []


def _export(alg: Algorithm, tmp_path: Path) -> None:
    from collhub_mscclang import ExportParams
    from collhub_mscclang._components import consume_export

    consume_export(alg, ExportParams(out=tmp_path / "a.xml"), None)


def test_large_values_that_fit_are_fine() -> None:
    alg = make("direct", "alltoall", 4).bind(1 << 40)  # 1 TiB: big, but plausible
    check_algorithm(alg)
    assert int(np.max(alg.graphs[0].size)) > 1 << 32  # beyond int32: kept exactly


def _per_rank_reference(alg: Algorithm) -> str | None:
    """What the rank-by-rank checks find without sharing anything between ranks (the reference of
    check_algorithm's memo of shared arrays): the first problem's message, or None."""
    from hub.chakra._validate import check_meta, check_rank

    try:
        check_meta(alg.meta, what="algorithm 'ring'")
        total = 0.0
        for rank, g in enumerate(alg.graphs):
            total = check_rank(alg.meta, g, rank, total, what="algorithm 'ring'")
    except TraceFormatError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("case", sorted(BAD))
def test_shared_arrays_are_checked_once_with_the_same_answer(case: str) -> None:
    alg = _damaged(BAD[case][0])
    # the undamaged ranks share their arrays (what the memo saves work on)
    shared = [g for g in alg.graphs if g.kind is alg.graphs[-1].kind or g.kind is alg.graphs[0].kind]
    assert len(shared) >= 2
    with pytest.raises(TraceFormatError) as info:
        check_algorithm(alg, what="algorithm 'ring'")
    assert str(info.value) == _per_rank_reference(alg)


def test_a_damaged_shared_array_is_reported_at_its_first_rank(tmp_path: Path) -> None:
    from hub.chakra import read_algorithm, write_algorithm

    write_algorithm(make("ring", "allreduce", 8).bind(1 << 20), tmp_path / "r")
    alg = read_algorithm(tmp_path / "r")  # the reader hands out one array for equal columns
    assert alg.graphs[1].size is alg.graphs[5].size
    check_algorithm(alg)  # passes, and again with the memo's state gone
    size = alg.graphs[1].size.copy()
    size[int(np.argmax(alg.graphs[1].kind == NodeType.SEND))] = 1 << 40  # beyond the declared size
    graphs = list(alg.graphs)
    for r in range(3, 8):  # ranks 3.. share the bad array; ranks 0..2 keep the good one
        graphs[r] = graphs[r].copy()
        graphs[r].size = size
    bad = Algorithm(alg.meta, tuple(graphs))
    with pytest.raises(TraceFormatError, match="rank 3") as info:
        check_algorithm(bad, what="algorithm 'ring'")
    assert str(info.value) == _per_rank_reference(bad)


@pytest.mark.parametrize("batch", [1, 7, 1 << 20])
@pytest.mark.parametrize("case", sorted(BAD))
def test_ranks_checked_in_batches_give_the_per_rank_answer(
    case: str, batch: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hub.chakra import _validate

    monkeypatch.setattr(_validate, "_BATCH_NODES", batch)  # batches of one rank, a few, all
    alg = _damaged(BAD[case][0])
    with pytest.raises(TraceFormatError) as info:
        check_algorithm(alg, what="algorithm 'ring'")
    assert str(info.value) == _per_rank_reference(alg)
    check_algorithm(make("ring", "allreduce", 8).bind(1 << 20))  # and a good one passes


def test_a_passing_algorithm_is_checked_without_a_pass_per_rank(monkeypatch: pytest.MonkeyPatch) -> None:
    from hub.chakra import _validate

    def per_rank(*args: object, **kwargs: object) -> float:
        raise AssertionError("check_rank ran for a passing algorithm")

    monkeypatch.setattr(_validate, "check_rank", per_rank)
    check_algorithm(make("ring", "allreduce", 64).bind(1 << 20))
    with pytest.raises(AssertionError, match="check_rank ran"):  # a failing one: the loop says why
        check_algorithm(_damaged(BAD["peer out of range"][0]))


def test_a_column_shorter_than_its_graph_is_left_to_the_per_rank_loop() -> None:
    alg = make("ring", "allreduce", 4).bind(1 << 20)
    g = alg.graphs[2].copy()
    g.count = g.count[:-1]  # (only a hand-made graph can disagree with itself)
    bad = Algorithm(alg.meta, tuple(g if r == 2 else h for r, h in enumerate(alg.graphs)))
    with pytest.raises(ValueError):  # what the rank-by-rank checks raise on it
        check_algorithm(bad, ranges=False)


def test_thousands_of_ranks_declare_chunks_per_rank_without_a_total_wall(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 16,384-rank halving-doubling all-reduce declares 16,384 x 32,768 chunk slots (over the
    old 2^26 total); nothing keeps an entry per declared slot of every rank, so the default
    limit is per rank, and a total cap applies only where COLLHUB_MAX_CHUNK_SLOTS is set."""
    from hub.chakra import AlgorithmMeta, Collective
    from hub.chakra._validate import meta_problem

    monkeypatch.delenv("COLLHUB_MAX_CHUNK_SLOTS", raising=False)
    monkeypatch.delenv("COLLHUB_MAX_RANK_CHUNK_SLOTS", raising=False)
    n = 16384
    meta = AlgorithmMeta(collective=Collective.ALLREDUCE, ranks=n, in_chunks=n, out_chunks=n, inplace=True)
    assert n * 2 * n > 1 << 26 and meta_problem(meta) is None
    monkeypatch.setenv("COLLHUB_MAX_CHUNK_SLOTS", str(1 << 26))  # a deployment's own total cap
    found = meta_problem(meta)
    assert found is not None and "536870912 chunk slots exceed the limit of 67108864" in found[0]
    monkeypatch.delenv("COLLHUB_MAX_CHUNK_SLOTS")
    one = replace(meta, ranks=1, in_chunks=1 << 25, out_chunks=1 << 25, scratch_chunks=1)  # 2^26 + 1 on one rank
    found = meta_problem(one)
    assert found is not None
    assert found[0] == (
        "buffers of in_chunks 33554432 + out_chunks 33554432 + scratch_chunks 1 = 67108865 chunk slots "
        "per rank exceed the limit of 67108864"
    )
    assert "COLLHUB_MAX_RANK_CHUNK_SLOTS" in found[1]
    monkeypatch.setenv("COLLHUB_MAX_RANK_CHUNK_SLOTS", str((1 << 26) + 1))
    assert meta_problem(one) is None


def test_a_rank_over_its_chunk_limit_is_refused_by_the_reader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hub.algorithms import make as build
    from hub.chakra import read_algorithm, write_algorithm

    write_algorithm(build("halving_doubling", "allreduce", 8), tmp_path / "hd")  # 8 + 8 slots a rank
    monkeypatch.setenv("COLLHUB_MAX_RANK_CHUNK_SLOTS", "15")
    with pytest.raises(TraceFormatError, match="16 chunk slots per rank exceed the limit of 15") as info:
        read_algorithm(tmp_path / "hd")
    assert info.value.exit_code == ExitCode.VALIDATION
    monkeypatch.setenv("COLLHUB_MAX_RANK_CHUNK_SLOTS", "16")
    assert read_algorithm(tmp_path / "hd").meta.ranks == 8
