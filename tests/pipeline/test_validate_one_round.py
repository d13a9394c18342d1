"""`pipeline validate` in one round (issue 30): every problem of a file in one pass, including
the files params name, the parts next to a malformed step, and "did you mean" for choices.

Real components (hub.*, hub.simulate; mscclang.ir when installed), real files on disk.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SIX_MISTAKES = """\
version: 1
name: six
matrix:
  size: [1KiB, lots]
  network: ["ring:8", "rong:8"]
sources:
  r: {producer: hub.rng, params: {collective: allreduce, ranks: 8}}
  d: {producer: hub.direct, params: {collective: allreduc, ranks: 8}}
  broken: {producr: hub.ring, params: {collective: allreduce, ranks: 8}}
consumers:
  sim: {use: hub.simulate, params: {network: "${network}", size: "${size}", mode: awre, system: nowhere/system.json}}
"""


def _validate(text: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    (tmp_path / "p.yaml").write_text(text)
    return subprocess.run(
        [sys.executable, "-m", "hub.cli", "pipeline", "validate", "p.yaml"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )


def test_every_mistake_in_one_pass(tmp_path: Path) -> None:
    p = _validate(SIX_MISTAKES, tmp_path)
    assert p.returncode == 3
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("p.yaml:")]
    found = "\n".join(lines)
    expected = [
        "sources.r.producer: unknown producer 'hub.rng' (hint: did you mean hub.ring?)",
        "sources.d.params.collective: unknown collective 'allreduc' (did you mean allreduce?)",
        "sources.broken.producr: unknown key 'producr' (hint: did you mean 'producer'?)",
        "consumers.sim.params.network: topology 'rong:8': unknown kind 'rong'",
        "consumers.sim.params.size: cannot read size 'lots'",
        "consumers.sim.params.mode: Input should be 'unaware', 'aware' or 'auto' (got 'awre') "
        "(hint: did you mean 'aware'?)",
        "consumers.sim.params.system: file not found: nowhere/system.json",
    ]
    for want in expected:
        assert want in found, f"missing {want!r} in:\n{found}"
    assert "K/M/G/T" in found  # the size grammar is in the hint


def test_a_missing_input_file_fails_validate_as_run_would(tmp_path: Path) -> None:
    pytest.importorskip("collhub_mscclang")
    text = """\
version: 1
sources:
  x: {producer: mscclang.ir, params: {path: allreduce_ring.xml}}
consumers:
  sim: {use: hub.simulate, params: {network: "ring:8", size: 1MiB}}
"""
    p = _validate(text, tmp_path)
    assert p.returncode == 3 and "sources.x.params.path: file not found: allreduce_ring.xml" in p.stdout
    (tmp_path / "allreduce_ring.xml").write_text("<algo/>")  # present: validate leaves reading it to run
    assert "file not found" not in _validate(text, tmp_path).stdout
