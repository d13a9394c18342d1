"""nccl-tests-style ranges in a pipeline's matrix and on `collhub consume -b/-e/-f/-i`.

Expected value lists are written out by hand from nccl-tests' loop (start, multiply or add,
stop when past `to`); line:column positions were counted by hand in the texts below.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hub._ranges import range_values
from hub._units import format_size
from hub.errors import PipelineValidationError, UsageError
from hub.pipeline import run_pipeline_text, validate_text

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("name", "spec", "expected"),
    [
        ("size", {"from": "1KiB", "to": "1MiB", "factor": 4}, ["1KiB", "4KiB", "16KiB", "64KiB", "256KiB", "1MiB"]),
        ("size", {"from": "1KiB", "to": "100KiB", "factor": 4}, ["1KiB", "4KiB", "16KiB", "64KiB"]),  # `to` not reached
        ("size", {"from": 1000, "to": 4000, "step": 1000}, ["1KB", "2KB", "3KB", "4KB"]),
        ("size", {"from": "1K", "to": "3K", "step": 512}, ["1KiB", "1536B", "2KiB", "2560B", "3KiB"]),
        ("msg", {"from": "8B", "to": "32B", "factor": 2}, ["8B", "16B", "32B"]),  # a unit makes it a size range
        ("ranks", {"from": 2, "to": 16, "factor": 2}, [2, 4, 8, 16]),
        ("ranks", {"from": 8, "to": 8, "step": 4}, [8]),
        ("ranks", {"from": 4, "to": 20, "step": 8}, [4, 12, 20]),
    ],
)
def test_range_values(name: str, spec: dict, expected: list) -> None:
    assert range_values(name, spec) == expected


def test_exact_sizes_read_back_as_the_same_bytes() -> None:
    from hub import parse_size

    for n in (1, 1000, 1024, 1536, 10**6, 3 << 20, 2**40, 5 * 10**11, 12345):
        assert parse_size(format_size(n)) == n


def test_a_huge_range_is_refused_by_counting_not_listing() -> None:
    with pytest.raises(UsageError, match=r"1099511627776 values, more than the limit of 10000"):
        range_values("size", {"from": 1, "to": "1TiB", "step": 1}, limit=10_000)


BAD = """\
version: 1
matrix:
  size: {from: 1MiB, to: 1KiB, factor: 2}
  ranks: {from: 2, to: 16}
  n: {from: 1, to: 4, step: 0, by: 2}
  m: {from: 1, to: 4, factor: 1.5}
sources:
  ring: {producer: hub.ring, params: {collective: allreduce, ranks: 8}}
"""


def test_bad_ranges_are_reported_with_positions() -> None:
    with pytest.raises(PipelineValidationError) as info:
        validate_text(BAD, "bad.yaml")
    found = {(i.line, i.column, i.path): i.message for i in info.value.issues}
    assert found[(3, 16, "matrix.size.from")] == "from (1MiB) is greater than to (1KiB)"
    assert "needs exactly one of 'factor' or 'step'" in found[(4, 10, "matrix.ranks")]
    assert found[(5, 32, "matrix.n.by")] == "unknown key 'by' in the range of n"
    assert found[(6, 31, "matrix.m.factor")] == "factor must be an integer > 1, got 1.5"
    assert len(found) == 4


def test_a_range_past_the_point_limit_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLLHUB_PIPELINE_MAX_POINTS", "5")
    text = "version: 1\nmatrix:\n  size: {from: 1KiB, to: 1MiB, factor: 2}\nsources:\n  ring: {producer: hub.ring}\n"
    with pytest.raises(PipelineValidationError) as info:
        validate_text(text)
    issue = info.value.issues[0]
    assert (issue.line, issue.column, issue.path) == (3, 9, "matrix.size")
    assert issue.message == "the range of size has 11 values, more than the limit of 5"


SWEEP = """\
version: 1
matrix:
  size: SIZES
  ranks: RANKS
sources:
  ring: {producer: hub.ring, params: {collective: allreduce, ranks: "${ranks}"}}
consumers:
  sim: {use: hub.simulate, params: {network: "switch:${ranks}", size: "${size}"}}
"""


def test_a_range_runs_the_same_rows_as_its_list(tmp_path: Path) -> None:
    ranged = SWEEP.replace("SIZES", "{from: 1KiB, to: 64KiB, factor: 8}").replace("RANKS", "{from: 4, to: 8, step: 4}")
    listed = SWEEP.replace("SIZES", "[1KiB, 8KiB, 64KiB]").replace("RANKS", "[4, 8]")
    a = run_pipeline_text(ranged, tmp_path / "a", plot=False)
    b = run_pipeline_text(listed, tmp_path / "b", plot=False)
    assert [r["point"] for r in a.rows] == [r["point"] for r in b.rows]
    assert len(a.rows) == 6
    assert [r["metrics"]["time_ns"] for r in a.rows] == [r["metrics"]["time_ns"] for r in b.rows]


# ---------------------------------------------------------------------------------- the CLI


def _collhub(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "COLLHUB_DEBUG"}
    return subprocess.run(
        [sys.executable, "-m", "hub.cli", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=120
    )


@pytest.fixture(scope="module")
def ring8(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("ring8")
    p = _collhub(
        "produce", "hub.ring", "--set", "collective=allreduce", "--set", "ranks=8", "--out", str(d / "ring"), cwd=d
    )
    assert p.returncode == 0, p.stderr
    return d


def test_consume_sweeps_sizes_like_nccl_tests(ring8: Path) -> None:
    p = _collhub(
        "consume",
        "hub.simulate",
        "ring",
        "--set",
        "network=ring:8",
        "-b",
        "1K",
        "-e",
        "64K",
        "--factor",
        "8",
        "--format",
        "json",
        cwd=ring8,
    )
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)["rows"]
    assert [r["size_bytes"] for r in rows] == [1024, 8192, 65536]
    # Each row is what one consume call at that size reports.
    one = _collhub(
        "consume",
        "hub.simulate",
        "ring",
        "--set",
        "network=ring:8",
        "--set",
        "size=8KiB",
        "--format",
        "json",
        cwd=ring8,
    )
    assert json.loads(one.stdout)["metrics"]["time_ns"] == rows[1]["metrics"]["time_ns"]
    table = _collhub(
        "consume",
        "hub.simulate",
        "ring",
        "--set",
        "network=ring:8",
        "-b",
        "1000",
        "-e",
        "3000",
        "-i",
        "1000",
        cwd=ring8,
    )
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[1].split() == ["size", "(B)", "size", "time_us", "algbw_GBps", "busbw_GBps"]
    assert [ln.split()[:2] for ln in lines[3:]] == [["1000", "1KB"], ["2000", "2KB"], ["3000", "3KB"]]


def test_consume_keeps_f_json_as_the_output_format(ring8: Path) -> None:
    p = _collhub(
        "consume", "hub.simulate", "ring", "--set", "network=ring:8", "--set", "size=1MiB", "-f", "json", cwd=ring8
    )
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["metrics"]["size_bytes"] == 1 << 20


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-b", "1M", "-e", "1K"], "error: -b/-e/--factor/-i: -b (1M) is greater than -e (1K)"),
        (["-b", "1K", "-e", "1M", "--factor", "1"], "error: -b/-e/--factor/-i: factor must be an integer > 1, got 1"),
        (["-b", "1K", "-e", "1M", "--factor", "2", "-i", "1K"], "error: give either --factor or -i (step), not both"),
        (["-b", "1x"], "error: -b/-e/--factor/-i: -b: cannot read size '1x'"),
        (["--factor", "4"], "error: --factor/-i need a size range"),
        (["-b", "1K", "-f", "4"], "error: -f 4: -f is --format (table or json) in every collhub command"),
        (["-b", "1K", "--set", "size=1M"], "error: give the size either with --set size=... or with -b/-e, not both"),
    ],
)
def test_bad_size_flags_exit_2_with_one_line(ring8: Path, args: list[str], message: str) -> None:
    p = _collhub("consume", "hub.simulate", "ring", "--set", "network=ring:8", *args, cwd=ring8)
    assert p.returncode == 2
    assert p.stderr.splitlines()[0] == message
    assert "Traceback" not in p.stderr and p.stdout == ""
