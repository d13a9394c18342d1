"""Symbolic memories too large for either walk (hub/verify/_fast.py): the data is reported as not
checked, while structure, progress and races are still checked in full.

The limits are lowered to stand in for an 8192-rank all-reduce, whose memories (a rank set per
chunk slot) would need 128 GiB; what is expected of each algorithm comes from reading it.
"""

from __future__ import annotations

import pytest

from hub.algorithms import make
from hub.chakra import AlgorithmMeta, Collective, RankGraphBuilder
from hub.errors import DeadlockError, SemanticsError
from hub.verify import _api, _fast, check, verify
from hub.verify._report import ProblemSink
from hub.verify._semantics import buffer_bases
from hub.verify._structure import check_structure

from .test_races import IN, OUT, _alg, issue_allreduce


@pytest.fixture
def tiny(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_fast, "MAX_SLOT_BYTES", 16)
    monkeypatch.setattr(_fast, "MAX_PY_MEMORY_BYTES", 16)


def test_the_estimate_counts_ranks_slots_and_rank_sets() -> None:
    meta = AlgorithmMeta(collective=Collective.ALLREDUCE, ranks=8192, in_chunks=8192, out_chunks=8192)
    why = _fast.data_too_large(meta)
    # 8192 ranks x 16384 slots, each value a 128-word set and a 4-byte index: 128.5 GiB
    assert why is not None and why.startswith("the symbolic chunk values would need 128.5 GiB (134217728 chunk slots")
    assert _fast.data_too_large(make("ring", "allreduce", 64).meta) is None


def test_a_good_algorithm_is_ok_with_the_data_not_checked(tiny: None) -> None:
    rep = verify(make("ring", "allreduce", 4))
    assert rep.ok and not rep.complete
    assert rep.levels_checked == ["structure", "progress", "semantics"]
    assert list(rep.not_checked) == ["data"] and "symbolic chunk values" in rep.not_checked["data"]
    with pytest.raises(SemanticsError, match="data not checked"):
        check(make("ring", "allreduce", 4), strict=True)


def test_races_are_still_found_without_the_data(tiny: None) -> None:
    rep = verify(issue_allreduce(True))
    assert not rep.ok and rep.failed_level == "semantics"
    assert [p.message.split(":")[0] for p in rep.problems] == ["race on input chunk 0"]
    assert (rep.problems[0].rank, rep.problems[0].node) == (0, 1)


def test_deadlocks_are_still_found_without_the_data(tiny: None) -> None:
    b = [RankGraphBuilder(r) for r in range(2)]
    for r in range(2):
        x = b[r].recv(1 - r, dst=(OUT, 1 - r))
        b[r].send(1 - r, src=(IN, 0), deps=[x])
    alg = _alg(Collective.ALLGATHER, b, in_chunks=1, out_chunks=2, inplace=True)
    with pytest.raises(DeadlockError, match="waits forever"):
        check(alg)
    assert verify(alg).not_checked == {"semantics": "the algorithm does not run to completion"}


def test_an_all_gather_keeps_one_rank_id_a_slot() -> None:
    meta = AlgorithmMeta(collective=Collective.ALLGATHER, ranks=4096, in_chunks=1, out_chunks=4096)
    # 4096 x 4097 slots: 8.1 GiB as 64-word rank sets, 0.2 GiB as rank ids
    assert (_fast.data_too_large(meta) or "").startswith("the symbolic chunk values would need 8.1 GiB")
    assert _fast.data_too_large(meta, ids=True) is None
    alg = make("ring", "allgather", 4)
    f, _ = check_structure(alg, ProblemSink("structure"))
    assert f is not None and _fast.single_contributors(f, alg.meta)
    mem = _fast.fast_memory(f, alg.meta, buffer_bases(alg.meta), ids=True)
    assert mem is not None and mem.ids and mem.mask.shape == (mem.index.shape[0], 1)
    # rank 2's output chunk 3 holds in[3][0], written by a RECV from rank 1
    s = 2 * mem.M + int(buffer_bases(alg.meta)[2, 1]) + 3
    assert (int(mem.index[s]), int(mem.mask[s, 0])) == (0, 3)
    assert not _fast.single_contributors(f, make("ring", "allreduce", 4).meta)  # a sum is expected


def test_a_wrong_all_gather_output_is_worded_alike_with_rank_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    # rank 1 sends its chunk to rank 0 twice (into output blocks 1 and 2): block 2 must be in[2][0]
    b = [RankGraphBuilder(r) for r in range(3)]
    b[0].send(1, src=(IN, 0))
    b[0].send(2, src=(IN, 0), tag=1)
    b[1].recv(0, dst=(OUT, 0))
    b[2].recv(0, dst=(OUT, 0), tag=1)
    b[1].send(0, src=(IN, 0), tag=2)
    b[1].send(0, src=(IN, 0), tag=3)
    b[0].recv(1, dst=(OUT, 1), tag=2)
    b[0].recv(1, dst=(OUT, 2), tag=3)
    alg = _alg(Collective.ALLGATHER, b, in_chunks=1, out_chunks=3, inplace=True)
    rep = verify(alg)
    assert [p.message for p in rep.problems if p.rank == 0] == ["output chunk 2 holds in[1][0], expected in[2][0]"]
    monkeypatch.setattr(_api, "_fast_memory", lambda *args: None)
    assert verify(alg) == rep  # the Python walk's bitsets word it the same


def test_data_beyond_the_limit_names_the_memory_it_would_need(monkeypatch: pytest.MonkeyPatch) -> None:
    """The 16,384-rank all-reduce's rank sets need 513 GiB; the reason says so, names the variable
    that grants it, and with that much granted the data is no longer declined."""
    monkeypatch.delenv("COLLHUB_MAX_DATA_BYTES", raising=False)
    n = 16384
    meta = AlgorithmMeta(collective=Collective.ALLREDUCE, ranks=n, in_chunks=n, out_chunks=n, inplace=True)
    need = n * n * (n // 64 * 8 + 4)  # slots x (a 256-word set + a 4-byte index)
    why = _fast.data_too_large(meta)
    assert why == (
        f"the symbolic chunk values would need 513.0 GiB ({n * n} chunk slots, each a set of {n} ranks), "
        f"beyond the limit of 1 GiB (set COLLHUB_MAX_DATA_BYTES to {need} or more to check it with that much memory)"
    )
    monkeypatch.setenv("COLLHUB_MAX_DATA_BYTES", str(need))
    assert _fast.data_too_large(meta) is None
    monkeypatch.setenv("COLLHUB_MAX_DATA_BYTES", str(need - 1))
    assert _fast.data_too_large(meta) is not None


def test_granted_memory_checks_the_data(tiny: None, monkeypatch: pytest.MonkeyPatch) -> None:
    alg = make("halving_doubling", "allreduce", 8)
    assert "data" in verify(alg).not_checked  # the limit of 16 bytes stands in for a huge input
    monkeypatch.setenv("COLLHUB_MAX_DATA_BYTES", str(1 << 20))
    rep = verify(alg)
    assert rep.ok and rep.complete and not rep.not_checked
