"""`collhub consume astrasim.run` leaves no bundle behind unless asked to (real CLI, real ASTRA-sim)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hub.algorithms import ring
from hub.chakra import write_algorithm
from tests.sim.difftest import BIN, BINARIES, oracle_unavailable


def _consume(cwd: Path, tmp: Path, *sets: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, TMPDIR=str(tmp))
    env.pop("COLLHUB_ASTRASIM_BIN", None)
    args = [
        "consume",
        "astrasim.run",
        "ring",
        "--set",
        "network=ring:4",
        "--set",
        "size=1MiB",
        "--set",
        f"binary={BIN / BINARIES['unaware']}",
    ]
    for s in sets:
        args += ["--set", s]
    return subprocess.run(
        [sys.executable, "-m", "hub.cli", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=120
    )


def test_bundles_are_temporary_unless_kept(tmp_path: Path) -> None:
    why = oracle_unavailable()
    if why:
        pytest.skip(why)
    work, tmp = tmp_path / "work", tmp_path / "tmp"
    work.mkdir()
    tmp.mkdir()
    write_algorithm(ring("allreduce", 4), work / "ring")
    before = sorted(p.name for p in work.iterdir())
    for _ in range(2):  # each call used to leave one more directory here
        p = _consume(work, tmp)
        assert p.returncode == 0, p.stderr
        assert "time_ns" in p.stdout and "bundle" not in p.stdout
    assert sorted(p.name for p in work.iterdir()) == before and not any(tmp.iterdir())

    kept = _consume(work, tmp, "keep=true")
    assert kept.returncode == 0, kept.stderr
    row = next(line.split() for line in kept.stdout.splitlines() if line.split()[:1] == ["bundle"])
    bundle = work / row[1]  # printed relative to the working directory
    assert bundle.parent == work and (bundle / "run.sh").is_file()
    assert (bundle / "log" / "stdout.txt").is_file() and not any(tmp.iterdir())
