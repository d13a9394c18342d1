"""`collhub trace show` of an algorithm prints what it printed before it streamed (issue #19).

The expected text and JSON are what `trace show` printed before it streamed (main 4997626, the
whole set read at once), recorded for ASTRA-sim's own example ETs and for `collhub produce
hub.ring` on 6 ranks; the ring's figures also match the closed form (2(n-1) SENDs and RECVs and
n-1 reducing COMPs per rank: 6 x 25 = 150 nodes).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hub.chakra import algorithm_summary, read_algorithm, summarize

EXAMPLE_TEXT = """\
algorithm   (unnamed)
collective  allreduce, 8 ranks
chunks      input 0, output 0, scratch 0
size        symbolic (unbound)
nodes       280: COMP 56, RECV 112, SEND 112
messages    112, 14.0 MiB sent
deps        272 edges
per rank    nodes 35 .. 35, messages 14 .. 14, bytes sent 1.8 MiB .. 1.8 MiB, deps 34 .. 34"""
EXAMPLE_JSON = {
    "name": "",
    "producer": "",
    "collective": "allreduce",
    "ranks": 8,
    "in_chunks": 0,
    "out_chunks": 0,
    "scratch_chunks": 0,
    "inplace": False,
    "root": 0,
    "size": None,
    "nodes": 280,
    "send": 112,
    "recv": 112,
    "comp": 56,
}
RING6_TEXT = """\
algorithm   ring  [producer: hub.ring]
collective  allreduce, 6 ranks, in-place
chunks      input 6, output 6, scratch 0
size        symbolic (unbound)
nodes       150: COMP 30, RECV 60, SEND 60
messages    60, 0 B sent, 120 SEND/RECV without a size
deps        138 edges
per rank    nodes 25 .. 25, messages 10 .. 10, bytes sent 0 B .. 0 B, deps 23 .. 23"""
RING6_JSON = {
    "name": "ring",
    "producer": "hub.ring",
    "collective": "allreduce",
    "ranks": 6,
    "in_chunks": 6,
    "out_chunks": 6,
    "scratch_chunks": 0,
    "inplace": True,
    "root": 0,
    "size": None,
    "nodes": 150,
    "send": 60,
    "recv": 60,
    "comp": 30,
    "metadata": {"channels": 1, "pipeline": 1, "bidirectional": False},
}


def _collhub(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hub.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLLHUB_LOAD_PLUGINS": ""},
    )


@pytest.fixture(scope="module")
def example(astrasim_example: Path) -> str:
    prefix = astrasim_example / "algorithm" / "custom_allreduce"
    if not Path(f"{prefix}.0.et").is_file():
        pytest.skip(f"{prefix}.0.et not found")
    return str(prefix)


@pytest.fixture(scope="module")
def ring6(tmp_path_factory: pytest.TempPathFactory) -> str:
    prefix = tmp_path_factory.mktemp("ring") / "ring6"
    proc = _collhub("produce", "hub.ring", "--set", "collective=allreduce", "--set", "ranks=6", "--out", str(prefix))
    assert proc.returncode == 0, proc.stderr
    return str(prefix)


@pytest.mark.parametrize(
    ("which", "text", "summary"), [("example", EXAMPLE_TEXT, EXAMPLE_JSON), ("ring6", RING6_TEXT, RING6_JSON)]
)
def test_show_prints_what_the_whole_read_printed(
    which: str, text: str, summary: dict[str, object], request: pytest.FixtureRequest
) -> None:
    prefix = request.getfixturevalue(which)
    proc = _collhub("trace", "show", prefix)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.rstrip("\n") == text
    proc = _collhub("trace", "show", prefix, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"prefix": prefix, "kind": "algorithm", "summary": summary}
    # the library's whole-set figures are the same ones
    alg = read_algorithm(prefix)
    assert summarize(alg) == text and algorithm_summary(alg.meta, alg.graphs) == summary


def test_damaged_rank_file_is_one_error_line(ring6: str, tmp_path: Path) -> None:
    """A truncated file in the middle of the set: exit 3, one line naming it; nothing printed."""
    for r in range(6):
        shutil.copy(f"{ring6}.{r}.et", tmp_path / f"ring6.{r}.et")
    bad = tmp_path / "ring6.3.et"
    bad.write_bytes(bad.read_bytes()[:-3])
    proc = _collhub("trace", "show", str(tmp_path / "ring6"))
    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and "ring6.3.et" in errors[0], proc.stderr
