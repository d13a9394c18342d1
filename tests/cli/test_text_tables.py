"""Text tables a user reads (issue 30, "Tables and pictures"): ``plugins list`` fits the terminal
width (summaries cut with an ellipsis, ids and kinds whole; JSON unchanged), and ``consume`` of a
workload prints no ``None`` rows for metrics that do not apply (JSON keeps them as null).
Real subprocesses; the workload is a real PyTorch/gloo trace from ../shared/data/chakra-pytorch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hub.cli._output import table
from tests.conftest import SHARED_DATA

DDP2 = SHARED_DATA / "chakra-pytorch" / "ddp2" / "ddp2"


def _collhub(*args: str, cwd: Path, columns: int | None = None) -> subprocess.CompletedProcess[str]:
    # every installed plugin (the CLI tests' fixture loads none), and no width unless given
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "COLLHUB_LOAD_PLUGINS")}
    if columns is not None:
        env["COLUMNS"] = str(columns)
    return subprocess.run(
        [sys.executable, "-m", "hub.cli", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=300
    )


def test_table_cuts_only_the_last_column_to_the_width() -> None:
    rows = [("hub.ring", "producer", "a ring of n ranks " * 10), ("x", "consumer", "short")]
    text = table(["component", "kind", "summary"], rows, width=45)
    lines = text.splitlines()
    assert max(len(ln) for ln in lines) == 45
    assert lines[2].startswith("hub.ring   producer  a ring") and lines[2].endswith("…")
    assert lines[3].endswith("consumer  short")
    # an unbreakable first column keeps its text; the summary keeps at least a few characters
    wide = table(["component", "summary"], [("a" * 50, "b" * 30)], width=40).splitlines()[2]
    assert wide.startswith("a" * 50 + "  bbb") and wide.endswith("…")
    assert table(["a", "b"], rows=[("x", "y" * 100)]) == table(["a", "b"], rows=[("x", "y" * 100)], width=None)


def test_table_wraps_a_list_column_after_commas() -> None:
    rows = [("hub.direct", "allgather,allreduce,alltoall,broadcast,gather,reduce", "Direct " * 20)]
    lines = table(["component", "collectives", "summary"], rows, width=60, wrap=(1,)).splitlines()
    assert max(len(ln) for ln in lines) <= 60
    assert lines[2].startswith("hub.direct  allgather,")
    listed = "".join(ln[12:].split()[0] for ln in lines[2:])
    assert listed == rows[0][1]  # every item, in order, none cut
    # a table that fits is printed as without a width
    small = [("a", "b,c", "d")]
    assert table(["x", "y", "z"], small, width=80, wrap=(1,)) == table(["x", "y", "z"], small)


def test_plugins_list_fits_80_columns_and_keeps_every_id(tmp_path: Path) -> None:
    doc = json.loads(_collhub("plugins", "list", "--format", "json", cwd=tmp_path, columns=80).stdout)
    ids = [c["id"] for c in doc["components"]]
    assert len(ids) > 10 and any(len(c["summary"]) > 80 for c in doc["components"])
    # JSON is the same whatever the width: whole summaries
    assert json.loads(_collhub("plugins", "list", "--format", "json", cwd=tmp_path, columns=200).stdout) == doc
    by_width = {}
    for columns in (80, 200):
        p = _collhub("plugins", "list", cwd=tmp_path, columns=columns)
        assert p.returncode == 0, p.stderr
        lines = p.stdout.splitlines()
        assert max(len(ln) for ln in lines) <= columns, [ln for ln in lines if len(ln) > columns]
        first = {ln.split()[0] for ln in lines if ln.strip()}
        assert set(ids) <= first  # every component id whole, at the start of its line
        by_width[columns] = p.stdout
    assert "…" in by_width[80]
    # a wider terminal shows more of each summary; piped without COLUMNS, nothing is cut
    piped = _collhub("plugins", "list", cwd=tmp_path).stdout
    assert "…" not in piped and max(len(ln) for ln in piped.splitlines()) > 200


@pytest.mark.skipif(not DDP2.with_name("ddp2.0.et").is_file(), reason="shared data not available")
def test_consume_of_a_workload_prints_no_none_rows(tmp_path: Path) -> None:
    args = ("consume", "hub.simulate", str(DDP2), "--set", "network=ring:2")
    j = _collhub(*args, "--format", "json", cwd=tmp_path)
    assert j.returncode == 0, j.stderr
    metrics = json.loads(j.stdout)["metrics"]
    nulls = [k for k, v in metrics.items() if v is None]
    assert nulls, "the workload result should have metrics that do not apply (null)"
    p = _collhub(*args, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "None" not in p.stdout
    shown = {ln.split()[0] for ln in p.stdout.splitlines()[1:] if ln.startswith("  ")}
    assert not shown & set(nulls)
    assert {k for k, v in metrics.items() if v is not None} <= shown
