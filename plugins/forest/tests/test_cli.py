"""From the shell (real `collhub` subprocesses): produce, show the provenance, simulate with the
certificate, export to MSCCL-IR within the executor's per-threadblock limits; bad input exits 3
with one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

COLLHUB = [sys.executable, "-m", "hub.cli"]


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*COLLHUB, *args], capture_output=True, text=True, cwd=cwd, timeout=300)


@pytest.mark.parametrize("coll,net", [("allreduce", "torus:4x4"), ("allgather", "dgx1")])
def test_produce_simulate_export(tmp_path: Path, coll: str, net: str) -> None:
    p = run(
        "produce",
        "forest.synthesize",
        "--set",
        f"collective={coll}",
        "--set",
        f"network={net}",
        "--set",
        "size=64MiB",
        "--out",
        "out/alg",
        cwd=tmp_path,
    )
    assert p.returncode == 0, p.stderr
    show = run("trace", "show", "out/alg", "--format", "json", cwd=tmp_path)
    meta = json.loads(show.stdout)["summary"]["metadata"]
    assert (
        meta["forest.verified"] is True and meta["bound_term"] == "bandwidth" and meta["forest.load_over_cut"] <= 1.02
    )
    sim = run(
        "consume",
        "hub.simulate",
        "out/alg",
        "--set",
        f"network={net}",
        "--set",
        "mode=aware",
        "--format",
        "json",
        cwd=tmp_path,
    )
    assert sim.returncode == 0, sim.stderr
    m = json.loads(sim.stdout)["metrics"]
    assert m["bound_term"] == "bandwidth" and 1.0 <= m["time_over_bound"] <= 1.10
    assert m["bound_ns"] == pytest.approx(meta["bound_ns"], abs=1e-3)
    exp = run(
        "consume",
        "mscclang.export",
        "out/alg",
        "--set",
        "out=a.xml",
        "--set",
        "target=msccl-executor-nccl",
        cwd=tmp_path,
    )
    assert exp.returncode == 0, exp.stderr
    xml = (tmp_path / "a.xml").read_text()
    assert xml.lstrip().startswith("<algo")
    # and back: the MSCCL-IR file imports, verifies and simulates the same collective
    imp = run("produce", "mscclang.ir", "--set", "path=a.xml", "--out", "back/alg", cwd=tmp_path)
    assert imp.returncode == 0, imp.stderr
    back = run(
        "consume",
        "hub.simulate",
        "back/alg",
        "--set",
        f"network={net}",
        "--set",
        "mode=aware",
        "--set",
        "size=64MiB",
        "--format",
        "json",
        cwd=tmp_path,
    )
    assert back.returncode == 0, back.stderr
    assert json.loads(back.stdout)["metrics"]["collective"] == coll


@pytest.mark.parametrize(
    "sets,needle",
    [
        (("collective=alltoall", "network=ring:8", "size=1MiB"), "does not implement alltoall"),
        (("collective=allgather", "network=ring:8@bw=0", "size=1MiB"), "bw=0"),
        (("collective=allgather", "network=ring:8", "size=1MiB", "pieces=0"), "pieces must be in 1..4096"),
    ],
)
def test_bad_input_one_line(tmp_path: Path, sets: tuple[str, ...], needle: str) -> None:
    p = run("produce", "forest.synthesize", *[a for s in sets for a in ("--set", s)], "--out", "out/a", cwd=tmp_path)
    assert p.returncode != 0 and "Traceback" not in p.stderr
    first = [ln for ln in p.stderr.splitlines() if ln.strip()][0]
    assert first.startswith("error: ") and needle in first, p.stderr
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
