"""The commands a user runs, as real subprocesses: exit codes and one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "plans"


def _collhub(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "COLLHUB_DEBUG"}
    return subprocess.run(
        [sys.executable, "-m", "hub.cli", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=180
    )


def test_import_verify_and_export(tmp_path: Path) -> None:
    p = _collhub(
        "produce", "mscclpp.plan", "--set", f"path={EXAMPLES / 'mn_allgather_port_2x2.json'}", "--set", "size=1MiB",
        "--out", "ag", cwd=tmp_path,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    p = _collhub("trace", "verify", "ag", cwd=tmp_path)
    assert p.returncode == 0 and "ok: ag: allgather on 4 ranks (checked structure, progress, semantics)" in p.stdout
    p = _collhub("consume", "mscclpp.export", "ag", "--set", "out=again.json", "-f", "json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    plan = json.loads((tmp_path / "again.json").read_text())
    assert plan["name"] == "mn_allgather_2x2" and plan["collective"] == "allgather" and len(plan["gpus"]) == 4
    p = _collhub("consume", "mscclpp.export", "ag", "--set", "out=again.json", cwd=tmp_path)
    assert p.returncode == 0 and "warning: replaced the earlier" in p.stderr and "again.json" in p.stderr


def test_hang_per_connection_exits_3_with_located_problems(tmp_path: Path) -> None:
    path = EXAMPLES / "unit_signal_wait_fuse.json"
    p = _collhub(
        "produce", "mscclpp.plan", "--set", f"path={path}", "--set", "verify=false", "--out", "f", cwd=tmp_path
    )
    assert p.returncode == 0, p.stderr
    p = _collhub("trace", "verify", "f", cwd=tmp_path)
    assert p.returncode == 3
    assert "rank 0, node 2 (tb0/op1/signal.send): unmatched SEND to rank 1 tag 1" in p.stdout
    p = _collhub("produce", "mscclpp.plan", "--set", f"path={path}", "--set", "verify=true", "--out", "g", cwd=tmp_path)
    assert p.returncode == 3 and "unmatched SEND" in p.stderr and "Traceback" not in p.stderr
    assert not list(tmp_path.glob("g.*.et"))  # nothing half-written


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ("{", "not JSON"),
        ('{"name": "x"}', "collective: missing required key"),
    ],
)
def test_bad_plans_are_one_line_errors(tmp_path: Path, doc: str, message: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(doc)
    p = _collhub("produce", "mscclpp.plan", "--set", f"path={bad}", "--out", "o", cwd=tmp_path)
    assert p.returncode == 3
    first = p.stderr.splitlines()[0]
    assert first.startswith(f"error: {bad}") and message in first and "Traceback" not in p.stderr
