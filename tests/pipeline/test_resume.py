"""Resumable runs: a real `collhub run` interrupted with SIGINT mid-run, then resumed; changed
pipelines; --resume=strict; rows.jsonl as the run's log."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from hub.errors import UsageError
from hub.pipeline import ManagerSpec, run_pipeline_text

from .test_hostile import _SLOW

REPO = Path(__file__).resolve().parents[2]
SLOW = _SLOW  # the interrupt tests' sweep: long enough to stop part-way


def _env(tmp: Path) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(REPO), COLLHUB_LOAD_PLUGINS="", COLLHUB_CACHE_DIR=str(tmp / ".cache"))


def _collhub(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hub.cli", *args], cwd=tmp, capture_output=True, text=True, env=_env(tmp), timeout=120
    )


def _same(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k != "wall_s"} for r in rows]


def _log_lines(tmp: Path) -> int:
    for d in tmp.glob(".out.tmp-*"):
        try:
            return len((d / "rows.jsonl").read_bytes().splitlines())
        except OSError:
            return 0
    return 0


def test_sigint_mid_run_leaves_an_incomplete_run_that_resume_completes(tmp_path: Path) -> None:
    (tmp_path / "slow.yaml").write_text(SLOW)
    ref = _collhub(tmp_path, "run", "slow.yaml", "-j", "2", "-o", "ref", "--format", "json")
    assert ref.returncode == 0, ref.stderr
    p = subprocess.Popen(
        [sys.executable, "-m", "hub.cli", "run", "slow.yaml", "-j", "2", "-o", "out"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(tmp_path),
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while _log_lines(tmp_path) < 10 and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    os.killpg(p.pid, signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    lines = err.strip().splitlines()
    assert lines[0] == "error: interrupted" and lines[1].startswith("hint: ") and "--resume --out" in lines[1], err
    out = tmp_path / "out"
    assert (out / "INCOMPLETE").is_file() and not (out / "results.json").exists()
    kept = len((out / "rows.jsonl").read_text().splitlines())
    assert 10 <= kept < 80
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out")] == []
    # A plain re-run does not touch it: it goes to out-2, as with any existing directory.
    again = _collhub(tmp_path, "run", "slow.yaml", "-j", "1", "-o", "out", "--format", "json")
    assert again.returncode == 0 and json.loads(again.stdout)["run_dir"].endswith("out-2")
    assert (out / "INCOMPLETE").is_file()

    resumed = _collhub(tmp_path, "run", "slow.yaml", "-j", "2", "-o", "out", "--resume", "--format", "json")
    assert resumed.returncode == 0, resumed.stderr
    assert f"resumed: {kept} row(s) reused" in resumed.stderr
    assert not (out / "INCOMPLETE").exists()
    doc = json.loads((out / "results.json").read_text())
    assert _same(doc["rows"]) == _same(json.loads(ref.stdout)["rows"])
    assert len((out / "rows.jsonl").read_text().splitlines()) == 80
    assert (out / "results.csv").read_text() == (tmp_path / "ref" / "results.csv").read_text()
    # Per-rank and per-link detail lives in per-row files, not in results.json.
    assert all("details" not in r and (out / r["details_file"]).is_file() for r in doc["rows"])


TEXT = """version: 1
matrix: {size: [100, 200, 300]}
sources:
  a: {producer: t.line, params: {ranks: 4}}
  b: {producer: t.line, params: {ranks: 8}}
consumers:
  c1: {use: t.cost, params: {size: "${size}", bw: 1.0}}
  c2: {use: t.cost, params: {size: "${size}", bw: 1.0}}
"""


def test_resume_over_a_changed_pipeline_recomputes_only_the_changed_rows(tmp_path: Path, tspec: ManagerSpec) -> None:
    first = run_pipeline_text(TEXT, tmp_path / "out", manager_spec=tspec)
    before = {(r["source"], r["consumer"], r["point"]["size"]): r for r in first.rows}
    # c2 gets another bandwidth (its 6 rows changed); size 400 is new (4 rows); c1's 6 rows stay.
    old_c2 = 'c2: {use: t.cost, params: {size: "${size}", bw: 1.0}}'
    text = TEXT.replace("[100, 200, 300]", "[100, 200, 300, 400]").replace(old_c2, old_c2.replace("1.0", "2.0"))
    with pytest.raises(UsageError) as info:
        run_pipeline_text(text, tmp_path / "out", manager_spec=tspec, resume="strict")
    assert info.value.message.startswith("6 row(s) of ")
    assert "a · c2 (size=100)" in info.value.message and "c1" not in info.value.message
    assert (tmp_path / "out" / "results.json").is_file()  # refused before touching anything
    computed: list[dict[str, Any]] = []
    run = run_pipeline_text(text, tmp_path / "out", manager_spec=tspec, resume=True, on_row=computed.append)
    assert run.run_dir == (tmp_path / "out").absolute()
    assert run.reuse is not None and run.reuse.reusable == 6 and len(run.reuse.changed) == 6
    assert len(computed) == 10 and {r["consumer"] for r in computed if r["point"]["size"] != 400} == {"c2"}
    assert len(run.rows) == 16
    for r in run.rows:
        old = before.get((r["source"], r["consumer"], r["point"]["size"]))
        if r["consumer"] == "c1" and old is not None:
            assert r == {**old, "point_index": r["point_index"]}  # reused as it was, wall_s included
        else:
            assert r["key"] != (old or {}).get("key")
    assert [r["point_index"] for r in run.rows if r["source"] == "a" and r["consumer"] == "c1"] == [0, 1, 2, 3]
    # Resuming a complete run computes nothing.
    computed.clear()
    again = run_pipeline_text(text, tmp_path / "out", manager_spec=tspec, resume="strict", on_row=computed.append)
    assert computed == [] and again.reuse is not None and again.reuse.reusable == 16
    assert _same(again.rows) == _same(run.rows)


def test_resume_of_a_directory_that_is_not_a_run_is_refused(tmp_path: Path, tspec: ManagerSpec) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "notes.txt").write_text("mine")
    with pytest.raises(UsageError, match="is not a resumable run directory"):
        run_pipeline_text(TEXT, tmp_path / "out", manager_spec=tspec, resume=True)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["notes.txt"]
