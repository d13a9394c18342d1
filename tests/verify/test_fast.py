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
from hub.verify import _fast, check, verify

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
