"""Every winner shows its % of bound and the binding term; winners far above the bound are named
(issue 29, rule 5 of hub/results/_answer.py).

The rows are hand-made with known ratios; the expected cells and flags are written out here, not
computed by the code under test.
"""

from __future__ import annotations

import json
from pathlib import Path

from hub.results import write_report

from .test_report import _collhub


def _row(source: str, size: str, time_us: float, ratio: float | None, term: str | None) -> dict[str, object]:
    metrics: dict[str, object] = {"time_us": time_us, "collective": "allgather", "ranks": 8}
    if ratio is not None:
        metrics.update(time_over_bound=ratio, bound_term=term, bound_ns=time_us * 1e3 / ratio)
    return {"source": source, "consumer": "sim", "status": "ok", "metrics": metrics, "point": {"size": size}}


ROWS = [
    # 1KiB: a wins at 2.0x its bound (sub-optimal), b is slower
    _row("a", "1KiB", 3.0, 2.0, "latency"),
    _row("b", "1KiB", 4.0, 8 / 3, "latency"),
    # 1MiB: a wins at 1.12x (not flagged)
    _row("a", "1MiB", 10.0, 1.12, "bandwidth"),
    _row("b", "1MiB", 12.0, 1.344, "bandwidth"),
    # 16MiB: a is below its bound (set apart), so b wins at 1.6x (flagged)
    _row("a", "16MiB", 5.0, 0.9, "both"),
    _row("b", "16MiB", 20.0, 1.6, "both"),
]


def _run(tmp_path: Path, rows: list[dict[str, object]]) -> Path:
    (tmp_path / "results.json").write_text(json.dumps({"variables": ["size"], "rows": rows}))
    return tmp_path


def test_report_json_carries_percent_term_and_flag(tmp_path: Path) -> None:
    p = _collhub("report", str(_run(tmp_path, ROWS)), "--no-plot", "--format", "json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    (st,) = json.loads(p.stdout)["studies"]
    got = [(b["source"], b["time_over_bound"], b["bound_term"], b["far_from_bound"]) for b in st["best"]]
    assert got == [("a", 2.0, "latency", True), ("a", 1.12, "bandwidth", False), ("b", 1.6, "both", True)]
    assert [(s["source"], s["size_bytes"]) for s in st["set_apart"]] == [("a", 16 << 20)]


def test_report_md_shows_percent_of_bound_and_names_sub_optimal_winners(tmp_path: Path) -> None:
    md = write_report(_run(tmp_path, ROWS), plot=False)["md"].read_text()
    assert "| size | winner | time (µs) | busbw (GB/s) | % of bound | bound term | runner-up | × faster |" in md
    assert "| 1KiB | a (sub-optimal) | 3.000 | - | 200% | latency | b | 1.33 |" in md
    assert "| 1MiB | a | 10.000 | - | 112% | bandwidth | b | 1.20 |" in md
    assert "| 16MiB | b (sub-optimal) | 20.000 | - | 160% | both | - | - |" in md
    (line,) = [s for s in md.splitlines() if "sub-optimal winner(s)" in s]
    assert "a at 1KiB (200%)" in line and "b at 16MiB (160%)" in line and "a at 1MiB" not in line
    assert "at most 2.00x faster" in line
    assert "over 1.5x the lower bound" in line


def test_report_table_shows_percent_of_bound(tmp_path: Path) -> None:
    p = _collhub("report", str(_run(tmp_path, ROWS)), "--no-plot", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "% of bound" in p.stdout and "bound term" in p.stdout
    lines = p.stdout.splitlines()
    row = next(s for s in lines if "1MiB" in s and "bandwidth" in s)
    assert "112%" in row and "(sub-optimal)" not in row
    assert any("200%" in s and "latency" in s and "(sub-optimal)" in s for s in lines)
    assert any("sub-optimal winner(s)" in s for s in lines)


def test_no_bound_no_bound_columns(tmp_path: Path) -> None:
    rows = [_row("a", "1KiB", 3.0, None, None), _row("b", "1KiB", 4.0, None, None)]
    md = write_report(_run(tmp_path, rows), plot=False)["md"].read_text()
    assert "| size | winner | time (µs) | busbw (GB/s) | runner-up | × faster |" in md
    assert "% of bound" not in md and "sub-optimal" not in md
