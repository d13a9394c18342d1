"""``collhub nccl explain`` as a real subprocess: text, JSON, errors and exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

COLLHUB = str(Path(sys.executable).parent / "collhub")


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([COLLHUB, "nccl", *args], capture_output=True, text=True, timeout=120)


def test_explain_json_records() -> None:
    r = _run("explain", "hopper:8x2@nic=400G", "--collective", "allreduce", "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["nccl"] == "2.30.7" and doc["ranks"] == 16 and doc["channels"] == 16
    recs = doc["records"]
    assert [x["size"] for x in recs] == [1 << k for k in range(10, 33)]
    first = recs[0]
    assert set(first) == {"collective", "size", "algorithm", "protocol", "channels", "time_us", "times"}
    assert first["collective"] == "AllReduce" and first["time_us"] == min(first["times"].values())
    assert "Ring/LL" in first["times"] and "NVLSTree/Simple" in first["times"]


def test_explain_text_and_table() -> None:
    r = _run("explain", "dgx-a100", "--table")
    assert r.returncode == 0, r.stderr
    assert "AllReduce |    56.0/ 137.1 |" in r.stdout.replace("  ", " ") or "56.0/ 137.1" in r.stdout
    assert "crossovers:" in r.stdout and "AllGather from 1KiB: Ring/LL" in r.stdout


def test_explain_bad_system_is_one_line() -> None:
    r = _run("explain", "pascal:8x2")
    assert r.returncode == 2
    assert r.stderr.startswith("error: system: cannot read") and "Traceback" not in r.stderr
    r = _run("explain", "dgx-h100", "--collective", "alltoall")
    assert r.returncode == 2 and "not one NCCL tunes here" in r.stderr
