"""`collhub report`: the best algorithm per size and the crossovers of a real pipeline run.

The run is real: hub.simulate (congestion-aware) on the built-in ring, direct and
halving-doubling all-reduces, on a ring network (where the winner changes with size: direct's
one hop per peer wins while latency dominates, the ring's neighbour-only traffic wins once
contention does) and on a switch. Expected winners and crossovers are recomputed from the rows
of results.json by the few lines of :func:`_expected`, not by the code under test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hub import parse_size
from hub.pipeline import run_pipeline_text

STUDY = """\
version: 1
name: crossover
matrix:
  size: {from: 1KiB, to: 16MiB, factor: 4}
  network: ["ring:8", "switch:8"]
sources:
  ring: {producer: hub.ring, params: {collective: allreduce, ranks: 8}}
  direct: {producer: hub.direct, params: {collective: allreduce, ranks: 8}}
  hd: {producer: hub.halving_doubling, params: {collective: allreduce, ranks: 8}}
consumers:
  sim: {use: hub.simulate, params: {network: "${network}", size: "${size}", mode: aware}}
"""


def _collhub(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    e = {k: v for k, v in os.environ.items() if k != "COLLHUB_DEBUG"}
    e.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "hub.cli", *args], capture_output=True, text=True, cwd=cwd, env=e, timeout=180
    )


def _expected(run_dir: Path) -> dict[str, tuple[list[tuple[int, str]], list[tuple[int, int, str, str]]]]:
    """network -> (winner per size, crossovers (last size of A, first size of B, A, B)), from the rows."""
    rows = json.loads((run_dir / "results.json").read_text())["rows"]
    out = {}
    for net in ("ring:8", "switch:8"):
        best: dict[int, tuple[float, str]] = {}
        for r in rows:
            if r["point"]["network"] == net:
                size, t = parse_size(r["point"]["size"]), r["metrics"]["time_us"]
                if size not in best or t < best[size][0]:
                    best[size] = (t, r["source"])
        winners = [(s, best[s][1]) for s in sorted(best)]
        cross = [(a[0], b[0], a[1], b[1]) for a, b in zip(winners, winners[1:], strict=False) if a[1] != b[1]]
        out[net] = (winners, cross)
    return out


def test_the_run_writes_its_report_with_the_crossovers(run_dir: Path) -> None:
    expected = _expected(run_dir)
    assert expected["ring:8"][1], "the study must have a winner that changes with size"
    report = json.loads((run_dir / "report.json").read_text())
    assert report["format"] == "collhub-report/1" and report["size_variable"] == "size"
    studies = {s["key"]["network"]: s for s in report["studies"]}
    assert set(studies) == {"ring:8", "switch:8"}
    for net, (winners, cross) in expected.items():
        st = studies[net]
        assert [(b["size_bytes"], b["source"]) for b in st["best"]] == winners
        assert [(c["below"], c["at"], c["before"], c["after"]) for c in st["crossovers"]] == cross
        assert st["collective"] == "allreduce" and st["ranks"] == 8
    assert (run_dir / "report.md").read_text().count("* crossover:") == len(expected["ring:8"][1])
    png = run_dir / "report.png"
    pytest.importorskip("matplotlib")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_segments_tile_the_studied_range(run_dir: Path) -> None:
    report = json.loads((run_dir / "report.json").read_text())
    for st in report["studies"]:
        segs = st["segments"]
        assert segs[0]["min_bytes"] == 1024 and segs[-1]["max_bytes"] == 16 << 20
        for a, b in zip(segs, segs[1:], strict=False):
            assert a["max_bytes"] + 1 == b["min_bytes"] and a["source"] != b["source"]


def test_report_command_table_and_json(run_dir: Path, tmp_path: Path) -> None:
    expected = _expected(run_dir)
    p = _collhub("report", str(run_dir), "--format", "json", "--out", str(tmp_path / "o"), "--no-plot", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    got = {
        s["key"]["network"]: [(c["below"], c["at"], c["before"], c["after"]) for c in s["crossovers"]]
        for s in doc["studies"]
    }
    assert got == {net: cross for net, (_w, cross) in expected.items()}
    assert sorted(x.name for x in (tmp_path / "o").iterdir()) == ["report.json", "report.md"]
    t = _collhub("report", str(run_dir), "--out", str(tmp_path / "t"), "--no-plot", cwd=tmp_path)
    assert t.returncode == 0, t.stderr
    ((below, at, before, after),) = expected["ring:8"][1]
    from hub._units import format_size

    assert f"crossover: {before} up to {format_size(below)}, {after} from {format_size(at)}" in t.stdout
    assert f"no crossover: {expected['switch:8'][0][0][1]} wins at every size" in t.stdout


def test_report_bad_input_is_one_line(tmp_path: Path) -> None:
    missing = _collhub("report", str(tmp_path / "nope"), cwd=tmp_path)
    assert missing.returncode == 3 and missing.stderr.startswith("error: no results file at")
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "results.json").write_text("{not json")
    broken = _collhub("report", str(tmp_path / "broken"), cwd=tmp_path)
    assert broken.returncode == 3 and "not a readable results document" in broken.stderr.splitlines()[0]
    nosize = run_pipeline_text(
        STUDY.replace("size: {from: 1KiB, to: 16MiB, factor: 4}", "chunks: [1]").replace(
            'size: "${size}"', "size: 1MiB"
        ),
        tmp_path / "nosize",
        jobs=1,
        plot=False,
    )
    assert not (nosize.run_dir / "report.json").exists()  # no size swept: the run writes no report
    p = _collhub("report", str(nosize.run_dir), cwd=tmp_path)
    assert p.returncode == 2
    assert p.stderr.splitlines() == [
        "error: the run has no size variable to compare algorithms along",
        "hint: sweep a size, e.g. matrix: {size: {from: 1KiB, to: 1GiB, factor: 2}}",
    ]
    for res in (missing, broken, p):
        assert "Traceback" not in res.stderr


def test_damaged_rows_are_counted_not_fatal(tmp_path: Path) -> None:
    rows = [
        {"source": "a", "status": "ok", "metrics": [1], "point": {"size": "1KiB"}},
        {"source": "b", "status": "ok", "metrics": {"time_us": 2}, "point": "x"},
        {"source": "a", "status": "ok", "metrics": {"time_us": 1.5}, "point": {"size": "1KiB"}, "algorithm": 5},
        {"source": "b", "status": "ok", "metrics": {"time_us": 1.0}, "point": {"size": "2KiB"}},
        {"source": "b", "status": "failed", "metrics": {}, "point": {"size": "1KiB"}},
        "junk",
    ]
    (tmp_path / "results.json").write_text(json.dumps({"variables": ["size"], "rows": rows}))
    p = _collhub("report", str(tmp_path), "--no-plot", "--format", "json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert (doc["failed_rows"], doc["rows_without_time"]) == (1, 2)
    (st,) = doc["studies"]
    assert [(b["size_bytes"], b["source"]) for b in st["best"]] == [(1024, "a"), (2048, "b")]


def test_auto_report_warns_on_a_problem_but_an_interrupt_stays_an_interrupt(
    run_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from hub.results import _report as _write

    def broken(*_a: object, **_k: object) -> None:
        raise OSError("disk went away")

    monkeypatch.setattr(_write, "write_report", broken)
    assert _write.auto_report(run_dir) == {}
    assert capsys.readouterr().err == "warning: could not write the report: OSError: disk went away\n"
    with pytest.raises(KeyboardInterrupt):  # the run is being interrupted: the error is the signal's doing
        _write.auto_report(run_dir, stopping=lambda: True)
    assert capsys.readouterr().err == ""
