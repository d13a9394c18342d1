"""Faults: refused before launch (mismatched sizes, a deadlock the pre-flight sees), and a
deadlock left to the runtime watchdog, which must time out cleanly and reap every rank."""

from __future__ import annotations

import multiprocessing
import time

import pytest

from hub.errors import DeadlockError, ExternalToolError, StructureError
from replay_helpers import children, deadlock_allreduce, mismatched_allgather

from collhub_replay import ReplayParams, preflight, replay


def test_mismatched_size_is_refused_before_launch() -> None:
    with pytest.raises(StructureError, match="nothing was launched") as err:
        replay([mismatched_allgather()], ReplayParams(size="1KiB", backend="gloo"))
    assert "rank 0" in str(err.value) or any(p.rank == 0 for p in err.value.problems)
    assert multiprocessing.active_children() == [] and children() == []


def test_byte_counts_checked_on_both_ends_without_the_verifier() -> None:
    # 16 B of all-gather over 2 ranks: 2 floats per rank and chunk; rank 0 sends 2 chunks, rank 1 takes 1
    with pytest.raises(StructureError, match=r"sends 16 B but rank 1 node \d+ \(RECV from rank 0 tag 0\) receives 8 B"):
        preflight(mismatched_allgather(), [16], "float32", verify=False)


def test_deadlock_is_refused_before_launch() -> None:
    with pytest.raises(DeadlockError, match="nothing was launched"):
        replay([deadlock_allreduce()], ReplayParams(size="1KiB", backend="gloo"))
    assert children() == []


def test_runtime_deadlock_times_out_and_reaps_every_rank() -> None:
    t0 = time.monotonic()
    with pytest.raises(ExternalToolError) as err:
        replay([deadlock_allreduce()], ReplayParams(size="1KiB", backend="gloo", timeout=3, preflight=False))
    msg = str(err.value)
    assert msg.startswith("replay hung: rank(s) 0, 1 made no progress for 3 s")
    assert "rank 0: node 1 (RECV reduce from rank 1 tag 0) posted, no data" in msg
    assert "rank 1: node 1 (RECV reduce from rank 0 tag 0) posted, no data" in msg
    assert time.monotonic() - t0 < 90
    assert multiprocessing.active_children() == []
    assert children() == []  # no orphan, no zombie
