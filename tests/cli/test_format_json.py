"""``--format json`` on the commands that write or draw (issue 30, "One surface"): each prints
one JSON object saying what it wrote, or the drawing itself where that is the output, and its
text output stays as it was. Real subprocesses on traces and runs collhub itself makes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

PIPELINE = """\
version: 1
name: fmt
matrix:
  size: [4KiB, 64KiB]
sources:
  ring: {producer: hub.ring, params: {collective: allreduce, ranks: 4}, transforms: [{use: hub.chunk}]}
  direct: {producer: hub.direct, params: {collective: allreduce, ranks: 4}}
consumers:
  sim: {use: hub.simulate, params: {network: "ring:4", size: "${size}"}}
"""


def _collhub(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "COLLHUB_DEBUG"}
    return subprocess.run(
        [sys.executable, "-m", "hub.cli", *args], capture_output=True, text=True, timeout=300, cwd=cwd, env=env
    )


def _ok(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    proc = _collhub(*args, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return proc


@pytest.fixture(scope="module")
def ring4(tmp_path_factory: pytest.TempPathFactory) -> Path:
    prefix = tmp_path_factory.mktemp("ring") / "ring4"
    _ok("produce", "hub.ring", "--set", "collective=allreduce", "--set", "ranks=4", "--out", str(prefix))
    return prefix


# --------------------------------------------------------------------------- trace show --graph
def test_trace_show_graph_json_to_stdout_holds_the_drawing(ring4: Path) -> None:
    text = _ok("trace", "show", str(ring4), "--graph", "dot", "--rank", "1").stdout
    doc = json.loads(_ok("trace", "show", str(ring4), "--graph", "dot", "--rank", "1", "-f", "json").stdout)
    assert text.startswith("digraph")
    assert doc == {"prefix": str(ring4), "format": "dot", "rank": 1, "document": doc["document"]}
    assert doc["document"].rstrip("\n") == text.rstrip("\n")


def test_trace_show_graph_json_with_out_names_the_file(ring4: Path, tmp_path: Path) -> None:
    dest = tmp_path / "ring.graphml"
    proc = _ok("trace", "show", str(ring4), "--graph", "graphml", "-o", str(dest), "--format", "json")
    assert json.loads(proc.stdout) == {"prefix": str(ring4), "format": "graphml", "rank": None, "written": str(dest)}
    assert dest.read_text().startswith("<?xml") and proc.stderr == ""
    # text mode: nothing on stdout, "wrote" on stderr, as before
    again = _ok("trace", "show", str(ring4), "--graph", "graphml", "-o", str(tmp_path / "b.graphml"))
    assert again.stdout == "" and again.stderr.strip() == f"wrote {tmp_path / 'b.graphml'}"


# --------------------------------------------------------------------------- trace convert
def test_trace_convert_json_lists_what_it_wrote(ring4: Path, tmp_path: Path) -> None:
    view = tmp_path / "ring.json"
    doc = json.loads(_ok("trace", "convert", str(ring4), str(view), "-f", "json").stdout)
    assert doc == {"src": str(ring4), "dst": str(view), "format": "json", "written": [str(view)]}
    assert json.loads(view.read_text())  # the JSON view itself
    back = tmp_path / "back"
    doc = json.loads(_ok("trace", "convert", str(view), str(back), "--format", "json").stdout)
    assert doc["format"] == "et" and sorted(doc["written"]) == [f"{back}.{r}.et" for r in range(4)]
    assert all(Path(f).is_file() for f in doc["written"])
    assert (
        _ok("trace", "convert", str(ring4), str(tmp_path / "t.json")).stdout.strip() == f"wrote {tmp_path / 't.json'}"
    )


# --------------------------------------------------------------------------- pipeline graph
def test_pipeline_graph_json_is_the_graph(tmp_path: Path) -> None:
    f = tmp_path / "p.yaml"
    f.write_text(PIPELINE)
    doc = json.loads(_ok("pipeline", "graph", str(f), "--format", "json").stdout)
    # by hand from PIPELINE: ring -> hub.chunk -> sim, direct -> sim; two sizes in the matrix
    assert doc == {
        "file": str(f),
        "nodes": [
            {"id": "s0", "label": "ring: hub.ring", "kind": "producer"},
            {"id": "s0t0", "label": "hub.chunk", "kind": "transform"},
            {"id": "s1", "label": "direct: hub.direct", "kind": "producer"},
            {"id": "c0", "label": "sim: hub.simulate", "kind": "consumer"},
        ],
        "edges": [{"from": "s0", "to": "s0t0"}, {"from": "s0t0", "to": "c0"}, {"from": "s1", "to": "c0"}],
        "matrix": {"size": 2},
    }
    text = _ok("pipeline", "graph", str(f), "-f", "text").stdout.splitlines()
    assert text == [
        "ring (hub.ring) -> hub.chunk -> sim (hub.simulate)",
        "direct (hub.direct) -> sim (hub.simulate)",
        "matrix: size[2]",
    ]


# --------------------------------------------------------------------------- pipeline plot
def test_pipeline_plot_json_names_the_png(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(PIPELINE)
    _ok("run", "p.yaml", "--out", "r", "--jobs", "1", cwd=tmp_path)
    doc = json.loads(_ok("pipeline", "plot", "r", "--metric", "time_us", "-f", "json", cwd=tmp_path).stdout)
    want = str(Path("r") / "results-time_us.png")
    assert doc == {"written": want, "format": "png", "metric": "time_us", "x": None, "panel": None}
    assert (tmp_path / want).read_bytes()[:8] == PNG_MAGIC
    doc = json.loads(
        _ok("pipeline", "plot", "r", "--panel", "none", "-o", "one.png", "-f", "json", cwd=tmp_path).stdout
    )
    assert doc["written"] == "one.png" and doc["panel"] == []
    assert (tmp_path / "one.png").read_bytes()[:8] == PNG_MAGIC
