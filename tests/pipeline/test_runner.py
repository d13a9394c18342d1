"""The runner: row counts, reuse of produced algorithms, parallel == serial, the run directory,
atomicity, on_error, observer hooks. Uses only the test plugin ``t`` (tests/pipeline/plugin_components.py)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from hub.chakra import read_algorithm
from hub.errors import StepFailedError
from hub.pipeline import ManagerSpec, run_pipeline, run_pipeline_text, run_unit
from hub.pipeline._run import env as _env
from hub.pipeline._run.env import _import_plugin
from hub.plugins import create_manager, hookimpl

from .conftest import PLUGIN_FILE

SWEEP = """\
version: 1
vars: {bw: 2.0}
matrix:
  size: [1000, 3000]
  ranks: [4, 8]
  chunks: [1, 2, 3]
sources:
  a:
    producer: t.line
    params: {ranks: "${ranks}", log: "LOG"}
    transforms: [{use: t.tag, params: {label: "a${ranks}"}}]
  b:
    producer: t.line
    params: {ranks: 4, chunks: "${chunks}", log: "LOG"}
consumers:
  fast:
    use: t.cost
    params: {size: "${size}", bw: "${bw}"}
  slow:
    use: t.cost
    params: {size: "${size}", bw: 0.5}
"""


def _sweep(tmp_path: Path) -> tuple[str, Path]:
    log = tmp_path / "produce.log"
    return SWEEP.replace("LOG", str(log)), log


def _comparable(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # The content key covers the files params name: here the producers' log, which grows between runs.
    return [{k: v for k, v in r.items() if k not in ("wall_s", "key")} for r in rows]


def test_sweep_rows_order_metrics_and_reuse(tmp_path: Path, tspec: ManagerSpec) -> None:
    text, log = _sweep(tmp_path)
    run = run_pipeline_text(text, tmp_path / "run", jobs=1, manager_spec=tspec)
    # 2 sources x (2 sizes x 2 ranks x 3 chunks = 12 points) x 2 consumers.
    assert len(run.rows) == 2 * 12 * 2
    # Produced once per distinct interpolated spec: a depends on ranks only (2), b on chunks only (3).
    assert len(log.read_text().splitlines()) == 2 + 3
    first = run.rows[0]
    assert (first["source"], first["consumer"], first["point"]) == (
        "a",
        "fast",
        {"size": 1000, "ranks": 4, "chunks": 1},
    )
    assert [r["consumer"] for r in run.rows[:4]] == ["fast", "slow", "fast", "slow"]
    assert [r["source"] for r in run.rows] == ["a"] * 24 + ["b"] * 24
    # t.cost: time_ns = (ranks - 1) * size / bw.
    for r in run.rows:
        ranks = r["point"]["ranks"] if r["source"] == "a" else 4
        bw = 2.0 if r["consumer"] == "fast" else 0.5
        assert r["metrics"]["time_ns"] == pytest.approx((ranks - 1) * r["point"]["size"] / bw)
        assert r["status"] == "ok" and r["error"] is None
    hashes_a = {r["algorithm"]["hash"] for r in run.rows if r["source"] == "a"}
    hashes_b = {r["algorithm"]["hash"] for r in run.rows if r["source"] == "b"}
    assert len(hashes_a) == 2 and len(hashes_b) == 3


def test_parallel_and_serial_runs_are_identical(tmp_path: Path, tspec: ManagerSpec) -> None:
    text, log = _sweep(tmp_path)
    serial = run_pipeline_text(text, tmp_path / "serial", jobs=1, manager_spec=tspec)
    parallel = run_pipeline_text(text, tmp_path / "parallel", jobs=2, manager_spec=tspec)
    assert parallel.document["jobs"] == 2
    assert _comparable(serial.rows) == _comparable(parallel.rows)
    for name in ("results.csv", "results.md"):
        assert (serial.run_dir / name).read_text() == (parallel.run_dir / name).read_text()
    pids = {line.split()[1] for line in log.read_text().splitlines()}
    assert len(pids) >= 2  # the parallel run really used worker processes besides this one


def test_run_directory_contents(tmp_path: Path, tspec: ManagerSpec) -> None:
    text, _ = _sweep(tmp_path)
    run = run_pipeline_text(text, tmp_path / "run", jobs=1, manager_spec=tspec)
    d = run.run_dir
    assert d == (tmp_path / "run").absolute()
    assert sorted(p.name for p in d.iterdir()) == [
        "algorithms",
        "algorithms.jsonl",
        "artifacts",
        "pipeline.yaml",
        "report.json",
        "report.md",
        "report.png",  # a size sweep: the answer
        "results.csv",
        "results.json",
        "results.md",
        "results.png",
        "rows.jsonl",
    ]
    assert (d / "pipeline.yaml").read_text() == text
    algs = sorted(p.name for p in (d / "algorithms").iterdir())
    assert len(algs) == 5 and sum(a.startswith("a-") for a in algs) == 2
    # Each distinct algorithm once, as <name>.<rank>.et, readable back to the same content.
    a8 = next(r for r in run.rows if r["source"] == "a" and r["point"]["ranks"] == 8)["algorithm"]
    files = sorted((d / a8["dir"]).iterdir())
    assert [f.name for f in files] == [f"a8.{r}.et" for r in range(8)]
    back = read_algorithm(d / a8["dir"] / "a8")
    assert back.ranks == 8 and back.node_count() == 16
    assert back.content_hash() == a8["hash"]
    # Consumer artifacts, referenced relative to the run directory.
    row = run.rows[0]
    assert row["artifacts"] == {"report": "artifacts/a/000-size-1000_ranks-4_chunks-1/fast/cost.txt"}
    assert (d / row["artifacts"]["report"]).read_text() == "a4 1000 1500.0\n"
    doc = json.loads((d / "results.json").read_text())
    assert doc["rows"] == json.loads(json.dumps(run.rows))
    assert doc["variables"] == ["size", "ranks", "chunks"] and len(doc["points"]) == 12
    assert {p["name"] for p in doc["plugins"]} == {"t"}
    assert doc["collhub"] and doc["started"] <= doc["finished"]
    with open(d / "results.csv", newline="") as fh:
        table = list(csv.DictReader(fh))
    assert len(table) == 48
    assert table[0]["source"] == "a" and table[0]["consumer"] == "fast" and float(table[0]["time_ns"]) == 1500.0
    md = (d / "results.md").read_text().splitlines()
    assert md[2] == "| source | consumer | size | ranks | chunks | time_us | algbw GB/s | busbw GB/s | status |"
    assert md[4] == "| a | fast | 1000 | 4 | 1 | 1.500 | 0.667 | 2.000 | ok |"  # 1500 ns; 1000 B / 1500 ns
    assert len(md) == 4 + 48


def test_existing_directory_gets_suffix_or_is_replaced(tmp_path: Path, tspec: ManagerSpec) -> None:
    text = "version: 1\nsources:\n  s: {producer: t.line, params: {ranks: 2}}\n"
    first = run_pipeline_text(text, tmp_path / "out", manager_spec=tspec)
    second = run_pipeline_text(text, tmp_path / "out", manager_spec=tspec)
    assert (first.run_dir.name, second.run_dir.name) == ("out", "out-2")
    (first.run_dir / "stale").write_text("x")
    third = run_pipeline_text(text, tmp_path / "out", manager_spec=tspec, force=True)
    assert third.run_dir.name == "out" and not (third.run_dir / "stale").exists()
    # Without consumers a row per source x point describes the algorithm.
    assert third.rows[0]["metrics"] == {"nodes": 4, "send": 2, "recv": 2, "comp": 0}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "out-2"]  # no temporaries left


@pytest.mark.parametrize("jobs", [1, 2])
def test_failing_step_leaves_no_output(tmp_path: Path, tspec: ManagerSpec, jobs: int) -> None:
    text = (
        "version: 1\nmatrix: {size: [100, 200, 300]}\n"
        "sources:\n  s: {producer: t.line, params: {ranks: 4}}\n"
        "consumers:\n  c: {use: t.cost, params: {size: '${size}', fail_at: 200}}\n"
    )
    with pytest.raises(StepFailedError) as info:
        run_pipeline_text(text, tmp_path / "out", jobs=jobs, manager_spec=tspec)
    msg = info.value.message
    assert msg == (
        "consumer 'c' (t.cost) on source 's' at point size=200 failed: "
        "SimulationError: t.cost cannot simulate 200 bytes"
    )
    assert info.value.hint == "pick another size"
    assert list(tmp_path.iterdir()) == []


def test_failing_producer_names_the_source(tmp_path: Path, tspec: ManagerSpec) -> None:
    text = "version: 1\nsources:\n  s: {producer: t.line, params: {ranks: 4, fail: true}}\n"
    with pytest.raises(
        StepFailedError,
        match=r"^produce t.line of source 's' failed: AlgorithmError: "
        r"t.line refuses 4 ranks$",
    ):
        run_pipeline_text(text, tmp_path / "out", manager_spec=tspec)
    assert list(tmp_path.iterdir()) == []


def test_on_error_continue_records_failures(tmp_path: Path, tspec: ManagerSpec) -> None:
    text = (
        "version: 1\non_error: continue\nmatrix: {size: [100, 200], fail: [false, true]}\n"
        "sources:\n  s: {producer: t.line, params: {ranks: 4, fail: '${fail}'}}\n"
        "consumers:\n  c: {use: t.cost, params: {size: '${size}', fail_at: 100}}\n"
    )
    run = run_pipeline_text(text, tmp_path / "out", manager_spec=tspec)
    status = [(r["point"]["size"], r["point"]["fail"], r["status"], r["error"]) for r in run.rows]
    assert status == [
        (100, False, "failed", "SimulationError: t.cost cannot simulate 100 bytes"),
        (100, True, "failed", "AlgorithmError: t.line refuses 4 ranks"),
        (200, False, "ok", None),
        (200, True, "failed", "AlgorithmError: t.line refuses 4 ranks"),
    ]
    assert not run.ok
    assert "failed: SimulationError" in (run.run_dir / "results.md").read_text()


class _Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    @hookimpl
    def collhub_before_pipeline_run(self, pipeline: Any, run_dir: Any) -> None:
        self.calls.append(("before_run", Path(run_dir).name))

    @hookimpl
    def collhub_after_pipeline_run(self, pipeline: Any, run_dir: Any, results: Any) -> None:
        self.calls.append(("after_run", len(results)))

    @hookimpl
    def collhub_on_pipeline_error(self, pipeline: Any, run_dir: Any, error: BaseException) -> None:
        self.calls.append(("run_error", type(error).__name__))

    @hookimpl
    def collhub_before_step(self, step: Any) -> None:
        self.calls.append(("before", f"{step.kind}:{step.component}"))

    @hookimpl
    def collhub_after_step(self, step: Any, output: Any) -> None:
        self.calls.append(("after", f"{step.kind}:{type(output).__name__}"))

    @hookimpl
    def collhub_on_step_error(self, step: Any, error: BaseException) -> None:
        self.calls.append(("step_error", type(error).__name__))


def test_observer_hooks(tmp_path: Path, tspec: ManagerSpec, monkeypatch: pytest.MonkeyPatch) -> None:
    # A manager of its own (plugin t + the recorder), installed under a spec only this test uses.
    spec = ManagerSpec(autoload=False, plugins=("observer-test",))
    mgr = create_manager(autoload=False)
    mgr.register(_import_plugin(str(PLUGIN_FILE)), name="t")
    rec = _Recorder()
    mgr.register(rec, name="recorder")
    monkeypatch.setitem(_env._CACHE, spec, mgr)
    text = (
        "version: 1\nsources:\n  s:\n    producer: t.line\n    params: {ranks: 2}\n"
        "    transforms: [{use: t.tag, params: {label: x}}]\n"
        "consumers:\n  c: {use: t.cost, params: {size: 10}}\n"
    )
    run_pipeline_text(text, tmp_path / "ok", manager_spec=spec)
    assert rec.calls == [
        ("before_run", "ok"),
        ("before", "produce:t.line"),
        ("after", "produce:Algorithm"),
        ("before", "transform:t.tag"),
        ("after", "transform:Algorithm"),
        ("before", "consume:t.cost"),
        ("after", "consume:Result"),
        ("after_run", 1),
    ]
    rec.calls.clear()
    with pytest.raises(StepFailedError):
        run_pipeline_text(text.replace("size: 10", "size: 10, fail_at: 10"), tmp_path / "bad", manager_spec=spec)
    assert rec.calls[-2:] == [("step_error", "SimulationError"), ("run_error", "StepFailedError")]


def test_run_unit_is_a_plain_function_returning_errors_as_data(tmp_path: Path, tspec: ManagerSpec) -> None:
    unit = {
        "kind": "produce",
        "manager": tspec.as_dict(),
        "source": "s",
        "producer": "t.line",
        "params": {"ranks": 3},
        "transforms": [],
        "point": {},
        "spec_key": "k",
        "run_dir": str(tmp_path),
        "workdir": "w",
    }
    res = run_unit(unit)
    assert res["ok"] and res["info"]["files"] == [f"{res['info']['dir']}/line3.{r}.et" for r in range(3)]
    res = run_unit({**unit, "params": {"ranks": 1}})
    assert not res["ok"]
    assert res["error"]["type"] == "UsageError" and "ranks" in res["error"]["message"]


def test_run_pipeline_from_file_uses_output_relative_to_cwd(
    tmp_path: Path, tspec: ManagerSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    f = tmp_path / "conf" / "p.yaml"
    f.parent.mkdir()
    f.write_text(
        "version: 1\nvars: {tag: v1}\nsources:\n  s: {producer: t.line, params: {ranks: 2}}\noutput: runs/${tag}\n"
    )
    monkeypatch.chdir(tmp_path)
    run = run_pipeline(f, manager_spec=tspec, jobs=1)
    assert run.run_dir == tmp_path / "runs" / "v1"
