"""No silent no-ops (issue 30): `trace inline` says when nothing was inlined and why, and
`collhub transform` runs every listed transform on the trace kind it takes (hub.inline on a
workload). Real PyTorch/gloo workload traces from ../shared/data/chakra-pytorch."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SHARED_DATA

DDP2 = SHARED_DATA / "chakra-pytorch" / "ddp2" / "ddp2"
pytestmark = pytest.mark.skipif(not DDP2.with_name("ddp2.0.et").is_file(), reason="shared data not available")


def _collhub(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hub.cli", *args], capture_output=True, text=True, cwd=cwd, timeout=300
    )


def test_inline_of_gloo_collectives_without_recognize_says_why(tmp_path: Path) -> None:
    p = _collhub("trace", "inline", str(DDP2), "out/x", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "(0 COMM_COLL nodes inlined" in p.stdout
    lines = p.stderr.splitlines()
    assert any(ln.startswith("warning: nothing was inlined: the workload has no COMM_COLL node") for ln in lines)
    assert "hint: pass --recognize to turn them into collectives first" in lines
    j = _collhub("trace", "inline", str(DDP2), "out/y", "--format", "json", cwd=tmp_path)
    doc = json.loads(j.stdout)
    assert doc["inlined"] == 0 and "gloo" in doc["nothing_inlined"][0]
    r = _collhub("trace", "inline", str(DDP2), "out/z", "--recognize", cwd=tmp_path)
    assert r.returncode == 0 and "nothing was inlined" not in r.stderr
    assert "(0 COMM_COLL" not in r.stdout


def test_transform_runs_a_workload_transform_on_a_workload(tmp_path: Path) -> None:
    from hub.chakra import Workload, read_trace

    p = _collhub("transform", "hub.inline", str(DDP2), "out/w", "--set", "recognize=true", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert isinstance(read_trace(tmp_path / "out" / "w"), Workload)
    bad = _collhub("transform", "hub.chunk", str(DDP2), "out/c", cwd=tmp_path)
    assert bad.returncode == 2
    assert "hub.chunk transforms an algorithm trace, but" in bad.stderr
    assert "hint: workload transforms: hub.inline, hub.overlap" in bad.stderr
