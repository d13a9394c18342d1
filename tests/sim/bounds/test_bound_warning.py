"""Impossible numbers are flagged: a simulated time below the collective's lower bound.

hub.direct all-to-all on an 8-rank Ring, 1 MiB: the congestion-unaware model charges the farthest
peer 4 hops x 500 ns + one serialization (4441 ns, the value real ASTRA-sim prints: see
../shared/reference/astra-sim.md), while no schedule can move (p-1)/p of 1 MiB out of a rank
through its two 50 GB/s links in less than 917504 B / (2 x 50 x 2^30 / 10^9 B/ns) = 8545 ns.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from hub.algorithms import make
from hub.chakra import write_algorithm
from hub.pipeline import run_pipeline_text
from hub.results import plot_layout
from hub.sim import simulate

BOUND = (7 / 8) * (1 << 20) / (2 * 50 * 2**30 / 1e9)


def test_unaware_below_the_bound_warns_and_aware_does_not() -> None:
    alg = make("direct", "alltoall", 8)
    fast = simulate(alg, "ring:8", size=1 << 20, mode="unaware")
    assert fast.time_ns == 4441 and abs(fast.bound_ns - BOUND) < 1e-6
    assert fast.warnings == [
        f"time 4441 ns is below the alltoall lower bound {BOUND:.0f} ns ((p-1)M/(p*B_out)) on this network "
        f"(time_over_bound {4441 / BOUND:.3g}): the congestion-unaware model charges no link contention, so "
        "messages that share a link overlap for free; simulate with mode 'aware' for a contention-heavy algorithm"
    ]
    assert simulate(alg, "ring:8", size=1 << 20, mode="aware").warnings == []
    assert simulate(make("ring", "allreduce", 8), "ring:8", size=1 << 20).warnings == []  # 41181 ns > bound


def test_consume_prints_the_warning(tmp_path: Path) -> None:
    write_algorithm(make("direct", "alltoall", 8), tmp_path / "a2a")
    cmd = [
        sys.executable,
        "-m",
        "hub.cli",
        "consume",
        "hub.simulate",
        str(tmp_path / "a2a"),
        "--set",
        "network=ring:8",
        "--set",
        "size=1MiB",
        "--workdir",
        str(tmp_path),
    ]
    default = subprocess.run(cmd + ["-f", "json"], capture_output=True, text=True, timeout=120)
    doc = json.loads(default.stdout)  # mode auto: the aware model on a ring, so a time the links allow
    assert doc["metrics"]["mode"] == "aware" and doc["warnings"] == [] and doc["metrics"]["time_over_bound"] >= 1
    cmd += ["--set", "mode=unaware"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.startswith("warning: time 4441 ns is below the alltoall lower bound 8545 ns")
    doc = json.loads(subprocess.run(cmd + ["-f", "json"], capture_output=True, text=True, timeout=120).stdout)
    assert len(doc["warnings"]) == 1 and doc["metrics"]["time_over_bound"] < 1
    aware = subprocess.run(cmd[:-2] + ["--set", "mode=aware"], capture_output=True, text=True, timeout=120)
    assert aware.returncode == 0 and "warning" not in aware.stderr


PIPELINE = """\
version: 1
matrix:
  mode: [unaware, aware]
  size: [1MiB, 4MiB]
sources:
  direct:
    producer: hub.direct
    params: {collective: alltoall, ranks: 8}
consumers:
  sim:
    use: hub.simulate
    params: {network: "ring:8", size: "${size}", mode: "${mode}"}
"""


def test_run_tables_and_plots_show_the_warning(tmp_path: Path) -> None:
    run = run_pipeline_text(PIPELINE, tmp_path / "run", jobs=1)
    by_mode = {m: [r for r in run.rows if r["point"]["mode"] == m] for m in ("unaware", "aware")}
    assert all(len(r["warnings"]) == 1 for r in by_mode["unaware"])
    assert all(r["warnings"] == [] for r in by_mode["aware"])
    md = (run.run_dir / "results.md").read_text()
    assert md.count("| ok (below bound) |") == 2 and md.count("| ok |") == 2
    assert "Warnings:" in md and "direct · sim (mode=unaware, size=1MiB): time 4441 ns is below" in md
    layout = plot_layout(json.loads((run.run_dir / "results.json").read_text()), metric="time_us")
    assert layout.warned == 2 and "2 point(s) circled red carry a warning" in layout.title
    flagged = [pt for p in layout.panels for pts in p.flagged.values() for pt in pts]
    assert sorted(y for _, y in flagged)[0] == 4.441


def test_whole_ns_truncation_is_not_below_the_bound() -> None:
    """The model floors each message's delay to whole ns, so a schedule of many messages finishes
    up to 1 ns per message of its busiest GPU before a bound computed in real numbers: at the
    bound, not below it. hub.direct all-gather on fc:4 without latency at 4 x 262,145 bytes: each
    GPU sends its 262,145 bytes over 3 links of 50 GiB/s at once, floor(262145 / 53.687...) =
    4882 ns, while the cut bound is 262145 / 53.687... = 4882.83 ns."""
    alg = make("direct", "allgather", 4)
    res = simulate(alg, "fc:4@lat=0", size=4 * 262145, mode="aware")
    bound = 262145 / (50 * 2**30 / 1e9)
    assert res.bound_ns is not None and abs(res.bound_ns - bound) < 1e-6
    assert res.time_ns == 4882 and res.bound_slack_ns == 3  # three sends and three receives per GPU
    assert res.warnings == [] and res.metrics()["bound_slack_ns"] == 3


def test_below_the_bound_by_more_than_the_slack_still_warns() -> None:
    fast = simulate(make("direct", "alltoall", 8), "ring:8", size=1 << 20, mode="unaware")
    assert fast.bound_slack_ns == 7 and fast.warnings and "below the alltoall lower bound" in fast.warnings[0]
