"""Result tables show each row's ``% of bound`` and the term that binds, where a bound exists
(issue 29). Hand-made rows with known ratios; the expected cells are written out here.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from hub.results._tables import csv_text, markdown_text, table_rows, write_results
from tests.pipeline.test_cli import collhub


def _row(source: str, n: int, metrics: dict[str, object]) -> dict[str, object]:
    return {"source": source, "consumer": "sim", "point": {"n": n}, "status": "ok", "metrics": metrics}


BOUNDED = {"time_ns": 2240.0, "algbw_GBps": 1.0, "busbw_GBps": 2.0, "bound_ns": 2000.0}
ROWS = [
    _row("ring", 8, {**BOUNDED, "time_over_bound": 1.12, "bound_term": "bandwidth"}),
    _row("tree", 8, {**BOUNDED, "time_over_bound": 2.5, "bound_term": "latency"}),
    _row("fast", 8, {**BOUNDED, "time_over_bound": 0.9996, "bound_term": "both"}),
    _row("plain", 8, {"time_ns": 1000.0, "algbw_GBps": 1.0, "busbw_GBps": 2.0}),  # no bound reported
]


def test_table_has_percent_of_bound_and_term() -> None:
    header, cells = table_rows(ROWS, ["n"])
    assert header == ["source", "n", "time_us", "algbw GB/s", "busbw GB/s", "% of bound", "bound term", "status"]
    got = {c[0]: (c[5], c[6]) for c in cells}
    # 0.9996 is below the bound: it must never read as 100%
    assert got == {
        "ring": ("112%", "bandwidth"),
        "tree": ("250%", "latency"),
        "fast": ("99.9%", "both"),
        "plain": ("", ""),
    }


def test_results_md_and_writer_agree(tmp_path: Path) -> None:
    md = markdown_text(ROWS, ["n"], "t")
    assert "| source | n | time_us | algbw GB/s | busbw GB/s | % of bound | bound term | status |" in md
    assert "| ring | 8 | 2.240 | 1.000 | 2.000 | 112% | bandwidth | ok |" in md
    assert "| plain | 8 | 1.000 | 1.000 | 2.000 |  |  | ok |" in md
    write_results(tmp_path, {"rows": ROWS}, ["n"], "t")
    assert (tmp_path / "results.md").read_text() == md


def test_no_bound_no_column() -> None:
    header, _ = table_rows([ROWS[3]], ["n"])
    assert "% of bound" not in header and "bound term" not in header


def test_csv_and_json_keep_the_raw_keys(tmp_path: Path) -> None:
    got = list(csv.DictReader(io.StringIO(csv_text(ROWS, ["n"]))))
    assert (got[0]["time_over_bound"], got[0]["bound_term"], got[0]["bound_ns"]) == ("1.12", "bandwidth", "2000.0")
    write_results(tmp_path, {"rows": ROWS}, ["n"], "t")
    rows = json.loads((tmp_path / "results.json").read_text())["rows"]
    assert rows[1]["metrics"]["time_over_bound"] == 2.5 and rows[1]["metrics"]["bound_term"] == "latency"


PIPE = """\
version: 1
name: bounded
matrix:
  size: [4KiB, 4MiB]
sources:
  ring: {producer: hub.ring, params: {collective: allgather, ranks: 8}}
consumers:
  sim: {use: hub.simulate, params: {network: "ring:8", size: "${size}", mode: aware}}
"""


def test_collhub_run_table_shows_percent_of_bound(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(PIPE)
    p = collhub("run", "p.yaml", "--out", "r", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "% of bound" in p.stdout and "bound term" in p.stdout
    for r in json.loads((tmp_path / "r" / "results.json").read_text())["rows"]:
        m = r["metrics"]
        pct = f"{round(m['time_over_bound'] * 100)}%"  # at or above the bound here
        assert m["time_over_bound"] >= 1
        line = next(s for s in p.stdout.splitlines() if f" {r['point']['size']} " in s)
        assert pct in line and m["bound_term"] in line, (pct, line)
    md = (tmp_path / "r" / "results.md").read_text()
    assert "% of bound | bound term" in md
