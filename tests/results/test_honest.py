"""The report is right, and says so (issue 30): a source is one contender across sizes, and a
time below a lower bound never wins.

Both runs are real pipelines. Expected winners are recomputed from results.json by the rules of
hub/results/_answer.py stated in a few lines here (:func:`_possible_winners`), not by the code
under test.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hub import parse_size
from hub.pipeline import run_pipeline_text

from .test_report import _collhub

pytest.importorskip("collhub_tacos")

FAMILY = """\
version: 1
name: family
matrix:
  size: [64KiB, 1MiB, 16MiB]
sources:
  tacos: {producer: tacos.synthesize, params: {collective: allgather, network: "mesh:2x4", size: "${size}"}}
  ring: {producer: hub.ring, params: {collective: allgather, ranks: 8}}
consumers:
  sim: {use: hub.simulate, params: {network: "mesh:2x4", size: "${size}", mode: aware}}
"""

# hub.direct's all-pairs messages share the ring's links; the congestion-unaware model charges no
# queueing, so its large-size times fall below the all-reduce's lower bound on ring:8.
IMPOSSIBLE = """\
version: 1
name: impossible
matrix:
  size: [4KiB, 1MiB, 16MiB]
sources:
  ring: {producer: hub.ring, params: {collective: allreduce, ranks: 8}}
  direct: {producer: hub.direct, params: {collective: allreduce, ranks: 8}}
consumers:
  sim: {use: hub.simulate, params: {network: "ring:8", size: "${size}", mode: unaware}}
"""


def _possible_winners(run_dir: Path) -> tuple[dict[int, str], set[tuple[str, int]]]:
    """size -> fastest source among rows at or above both bounds; and the (source, size) below one."""
    rows = json.loads((run_dir / "results.json").read_text())["rows"]
    best: dict[int, tuple[float, str]] = {}
    below = set()
    for r in rows:
        m, size = r["metrics"], parse_size(r["point"]["size"])
        if any((m.get(k) is not None and m[k] < 1) for k in ("time_over_bound", "time_over_link_bound")):
            below.add((r["source"], size))
            continue
        if size not in best or m["time_us"] < best[size][0]:
            best[size] = (m["time_us"], r["source"])
    return {s: w for s, (_t, w) in best.items()}, below


@pytest.fixture(scope="module")
def family_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = run_pipeline_text(FAMILY, tmp_path_factory.mktemp("family") / "run", jobs=1)
    assert run.ok
    return run.run_dir


@pytest.fixture(scope="module")
def impossible_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = run_pipeline_text(IMPOSSIBLE, tmp_path_factory.mktemp("impossible") / "run", jobs=1)
    assert run.ok
    return run.run_dir


def test_a_source_synthesized_per_size_is_one_contender(family_run: Path) -> None:
    rows = json.loads((family_run / "results.json").read_text())["rows"]
    dirs = {r["algorithm"]["dir"] for r in rows if r["source"] == "tacos"}
    assert len(dirs) == 3  # synthesized at every size: three algorithms, one source
    winners, _ = _possible_winners(family_run)
    report = json.loads((family_run / "report.json").read_text())
    (st,) = report["studies"]
    assert set(winners.values()) == {"tacos"}
    assert st["crossovers"] == []
    (seg,) = st["segments"]
    assert seg["source"] == "tacos" and (seg["min_bytes"], seg["max_bytes"]) == (64 << 10, 16 << 20)
    assert set(seg["algorithms"]) == dirs  # the per-size artifacts are kept
    md = (family_run / "report.md").read_text()
    assert "crossover" not in md.replace("no crossover", "") and "no crossover: tacos wins at every size" in md


def test_export_of_a_family_writes_one_file_per_size_tiling_the_range(family_run: Path, tmp_path: Path) -> None:
    pytest.importorskip("collhub_mscclang")
    p = _collhub("report", str(family_run), "--no-plot", "--export", "msccl", str(tmp_path / "x"), cwd=tmp_path)
    manifest = json.loads((tmp_path / "x" / "export.json").read_text())
    (st,) = manifest["studies"]
    got = [(e["min_bytes"], e["max_bytes"], e["algorithm"]) for e in st["exported"] + st["not_exported"]]
    got.sort()
    assert [(lo, hi) for lo, hi, _ in got] == [
        (64 << 10, (1 << 20) - 1),
        (1 << 20, (16 << 20) - 1),
        (16 << 20, 16 << 20),
    ]
    assert len({a for _, _, a in got}) == 3, p.stderr


def test_rows_below_a_bound_never_win_and_are_listed_apart(impossible_run: Path, tmp_path: Path) -> None:
    winners, below = _possible_winners(impossible_run)
    assert below, "the study must have rows below a bound"
    report = json.loads((impossible_run / "report.json").read_text())
    (st,) = report["studies"]
    assert {b["size_bytes"]: b["source"] for b in st["best"]} == winners
    assert all(b["below_bound"] is None for b in st["best"])
    assert {(a["source"], a["size_bytes"]) for a in st["set_apart"]} == below
    assert all("lower bound" in a["reason"] or "link-load" in a["reason"] for a in st["set_apart"])
    md = (impossible_run / "report.md").read_text()
    assert "Set apart" in md and md.count("| direct |") >= len(below)
    table = _collhub("report", str(impossible_run), "--no-plot", "--out", str(tmp_path / "t"), cwd=tmp_path)
    assert table.returncode == 0, table.stderr
    assert "set apart: below a lower bound" in table.stdout and "row(s) below a lower bound set apart" in table.stdout


def test_allow_below_bound_lets_them_compete_marked(impossible_run: Path, tmp_path: Path) -> None:
    p = _collhub(
        "report",
        str(impossible_run),
        "--no-plot",
        "--allow-below-bound",
        "-f",
        "json",
        "--out",
        str(tmp_path),
        cwd=tmp_path,
    )
    assert p.returncode == 0, p.stderr
    (st,) = json.loads(p.stdout)["studies"]
    _winners, below = _possible_winners(impossible_run)
    marked = {(b["source"], b["size_bytes"]) for b in st["best"] if b["below_bound"]}
    assert marked and marked <= below


def test_export_never_ships_a_time_below_a_bound(impossible_run: Path, tmp_path: Path) -> None:
    pytest.importorskip("collhub_mscclang")
    winners, below = _possible_winners(impossible_run)
    p = _collhub("report", str(impossible_run), "--no-plot", "--export", "msccl", str(tmp_path / "x"), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    (st,) = json.loads((tmp_path / "x" / "export.json").read_text())["studies"]
    sizes = sorted({size for _src, size in below} | set(winners))
    shipped = {(e["source"], s) for e in st["exported"] for s in sizes if e["min_bytes"] <= s <= e["max_bytes"]}
    assert shipped == {(w, s) for s, w in winners.items()} and not shipped & below
    assert {(a["source"], a["size_bytes"]) for a in st["set_apart"]} == below


def test_a_time_under_the_bound_by_truncation_alone_is_at_the_bound() -> None:
    """``bound_slack_ns`` (1 ns per message of the busiest GPU, what whole-ns truncation gains):
    a row under its bound by no more than that competes; one further under is set apart."""
    from hub.results._answer import below_bound_reason

    row = {"collective": "allgather", "time_ns": 4882, "bound_ns": 4882.83, "time_over_bound": 4882 / 4882.83}
    assert below_bound_reason({**row, "bound_slack_ns": 3}) is None
    assert below_bound_reason({**row, "bound_ns": 4886.5, "time_over_bound": 4882 / 4886.5, "bound_slack_ns": 3})
    assert below_bound_reason(row)  # a consumer that reports no slack: the plain rule
