"""Faults: refused before launch (mismatched sizes, a deadlock the pre-flight sees), and a
deadlock left to the runtime watchdog, which must time out cleanly and reap every rank."""

from __future__ import annotations

import multiprocessing
import time

import pytest

from collhub_replay import ReplayParams, preflight, replay
from hub.errors import DeadlockError, ExternalToolError, StructureError

from .replay_helpers import children, deadlock_allreduce, mismatched_allgather


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
        # 10 s: both ranks must have imported torch and posted their RECV before the deadline, which
        # took over 3 s on a loaded 2-core machine (then only rank 0 was reported)
        replay([deadlock_allreduce()], ReplayParams(size="1KiB", backend="gloo", timeout=10, preflight=False))
    msg = str(err.value)
    assert msg.startswith("replay hung: rank(s) 0, 1 made no progress for 10 s")
    assert "rank 0: node 1 (RECV reduce from rank 1 tag 0) posted, no data" in msg
    assert "rank 1: node 1 (RECV reduce from rank 0 tag 0) posted, no data" in msg
    assert time.monotonic() - t0 < 90
    assert multiprocessing.active_children() == []
    assert children() == []  # no orphan, no zombie


_KILLED_PARENT = """
import sys
from replay_helpers import deadlock_allreduce  # a script: the tests folder is its PYTHONPATH
from collhub_replay import ReplayParams, replay
if __name__ == "__main__":
    replay([deadlock_allreduce()], ReplayParams(size="1KiB", backend="gloo", timeout=120, preflight=False))
"""


def test_ranks_die_with_a_killed_parent(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """SIGKILL the process that spawned the ranks (no cleanup code runs): they must not live on."""
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    script = tmp_path / "parent.py"
    script.write_text(_KILLED_PARENT)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent)}
    parent = subprocess.Popen(
        [sys.executable, str(script)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        ranks: list[int] = []
        end = time.monotonic() + 90
        while time.monotonic() < end and len(ranks) < 2:
            ranks = [pid for pid, state in children(parent.pid) if state != "Z"]
            time.sleep(0.2)
        assert len(ranks) == 2, "the rank processes never started"
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
    end = time.monotonic() + 20
    while time.monotonic() < end and any(os.path.exists(f"/proc/{pid}") and _state(pid) != "Z" for pid in ranks):
        time.sleep(0.1)
    assert not [pid for pid in ranks if os.path.exists(f"/proc/{pid}") and _state(pid) != "Z"]


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"
