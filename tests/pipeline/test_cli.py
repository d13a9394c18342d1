"""The pipeline commands as real subprocesses (``python -m hub.cli``) on the built-in components.

The run test drives the real built-in producers and simulator (areas hub.algorithms, hub.sim,
hub.topology, hub.chakra); values asserted here are structural (counts, files, formulas),
not simulator numbers.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "compare-allreduce.yaml"


def collhub(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hub.cli", *args], capture_output=True, text=True, cwd=cwd or REPO, timeout=120
    )


BAD = """\
version: 1
matrix: {n: [8]}
sources:
  ring:
    producer: hub.rign
    params: {collective: allreduce, ranks: "${m}"}
consumers:
  sim: {use: hub.ring, params: {}}
"""


def test_validate_reports_every_issue_one_per_line(tmp_path: Path) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(BAD)
    proc = collhub("pipeline", "validate", str(f))
    assert proc.returncode == 3
    assert proc.stdout.splitlines() == [
        f"{f}:5:15: sources.ring.producer: unknown producer 'hub.rign' (hint: did you mean hub.ring?)",
        f"{f}:6:44: sources.ring.params.ranks: unknown variable ${{m}} (hint: defined variables: n)",
        f"{f}:8:14: consumers.sim.use: hub.ring is a producer, not a consumer "
        "(hint: did you mean the consumer hub.simulate?)",
    ]
    assert proc.stderr.splitlines() == [f"error: 3 issue(s) in {f}", "hint: did you mean hub.ring?"]


def test_validate_json_and_ok(tmp_path: Path) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(BAD)
    proc = collhub("pipeline", "validate", str(f), "--format", "json")
    assert proc.returncode == 3
    doc = json.loads(proc.stdout)
    assert doc["valid"] is False
    assert [(i["line"], i["column"], i["path"]) for i in doc["issues"]] == [
        (5, 15, "sources.ring.producer"),
        (6, 44, "sources.ring.params.ranks"),
        (8, 14, "consumers.sim.use"),
    ]
    proc = collhub("pipeline", "validate", str(EXAMPLE))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith("ok (4 source(s) x 9 point(s) x 1 consumer(s) = 36 row(s))")


def test_schema_is_json_schema() -> None:
    proc = collhub("pipeline", "schema")
    assert proc.returncode == 0
    schema = json.loads(proc.stdout)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) == {"version", "sources"}
    assert {"version", "requires", "vars", "matrix", "sources", "consumers", "output", "on_error"} <= set(
        schema["properties"]
    )


def test_graph_formats() -> None:
    proc = collhub("pipeline", "graph", str(EXAMPLE), "--format", "text")
    assert proc.returncode == 0
    assert proc.stdout.splitlines() == [
        "ring (hub.ring) -> sim (hub.simulate)",
        "direct (hub.direct) -> sim (hub.simulate)",
        "halving_doubling (hub.halving_doubling) -> sim (hub.simulate)",
        "double_binary_tree (hub.double_binary_tree) -> sim (hub.simulate)",
        "matrix: size[3] x network[3]",
    ]
    mermaid = collhub("pipeline", "graph", str(EXAMPLE)).stdout.splitlines()
    assert mermaid[0] == "flowchart LR"
    assert '  s0(["ring: hub.ring"])' in mermaid and '  c0[["sim: hub.simulate"]]' in mermaid
    assert sum(1 for line in mermaid if "-->" in line) == 4
    dot = collhub("pipeline", "graph", str(EXAMPLE), "-f", "dot").stdout
    assert dot.startswith("digraph pipeline {") and dot.count("->") == 4 and dot.rstrip().endswith("}")


def test_run_example_json(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    proc = collhub("run", str(EXAMPLE), "--out", str(out), "--jobs", "2", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["run_dir"] == str(out)
    rows = doc["rows"]
    assert len(rows) == 4 * 3 * 3 * 1  # sources x sizes x networks x consumers
    assert {r["status"] for r in rows} == {"ok"}
    sizes = {"64KiB": 64 * 1024, "1MiB": 1 << 20, "16MiB": 16 << 20}
    for r in rows:
        m = r["metrics"]
        # nccl-tests: algbw = S / t (decimal GB/s = bytes per ns); busbw = algbw * 2 (n-1) / n for all-reduce.
        assert m["algbw_GBps"] == pytest.approx(sizes[r["point"]["size"]] / m["time_ns"], rel=1e-6)
        assert m["busbw_GBps"] == pytest.approx(m["algbw_GBps"] * 2 * 7 / 8, rel=1e-6)
    # Each algorithm produced once: 4 directories of 8 rank files.
    algs = sorted((out / "algorithms").iterdir())
    assert len(algs) == 4 and all(len(list(d.glob("*.et"))) == 8 for d in algs)
    assert len({r["algorithm"]["hash"] for r in rows}) == 4
    md = (out / "results.md").read_text().splitlines()
    assert md[2] == "| source | size | network | time_us | algbw GB/s | busbw GB/s | % of bound | bound term | status |"
    assert len(md) == 4 + 36


def test_run_failure_is_one_line_and_leaves_nothing(tmp_path: Path) -> None:
    f = tmp_path / "fail.yaml"
    # hub.simulate cannot place 8 ranks on a 4-NPU ring.
    f.write_text(
        "version: 1\nsources:\n  r: {producer: hub.ring, params: {collective: allreduce, ranks: 8}}\n"
        "consumers:\n  sim: {use: hub.simulate, params: {network: 'ring:4', size: 1MiB}}\n"
    )
    proc = collhub("run", str(f), "--out", str(tmp_path / "out"), "-j", "1")
    assert proc.returncode == 1
    lines = proc.stderr.splitlines()
    assert lines[0].startswith("error: consumer 'sim' (hub.simulate) on source 'r' failed: ")
    assert "Traceback" not in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fail.yaml"]
