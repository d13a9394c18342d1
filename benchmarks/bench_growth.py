"""The growth law from 1K to 16K ranks (issue #32 item 3): produce, verify and simulate aware.

    python benchmarks/bench_growth.py                 # quick: 1024, 2048, 4096 ranks
    python benchmarks/bench_growth.py --full          # 1024 .. 16384 ranks (tens of minutes)
    python benchmarks/bench_growth.py --ranks 1024 8192 --algorithms hd dbt

Every step is a whole ``collhub`` process, as a user runs it (files on disk), timed by
``_rusage.measure`` (wall, CPU, peak RSS of that process alone):

* ``produce`` the all-reduce of ``hub.halving_doubling`` (hd), ``hub.double_binary_tree`` (dbt)
  and ``hub.hierarchical`` with 8 ranks per node, fused (hier; unfused it has 5n nodes per rank,
  1.3 billion at 16K);
* ``trace verify`` to every level (races and data included: a part that is beyond its budget
  is printed as "not checked", with the budget it would need in ``--format json``);
* ``consume hub.simulate`` congestion-aware on ``fattree:{n/8}x8`` (a leaf switch per node of 8
  NPUs, 8 spines) at 64 MiB.

The table gives each step's CPU seconds and peak MiB, then the fitted exponents: the slope of
log(CPU s) and log(peak MiB) against log(ranks) and log(nodes) over the measured sizes, per
algorithm and step (least squares; a slope near 1 is linear growth, 2 quadratic). The reference
of every row is the issue's target at 16K ranks, 2 minutes and 8 GB a step: the ratio column is
target / measured for the worst of time and memory (> 1 meets it). On a shared machine CPU time
is the steadier figure; run it alone and niced.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from _rusage import measure  # noqa: E402

QUICK = (1024, 2048, 4096)
FULL = (1024, 2048, 4096, 8192, 16384)
#: the issue's targets for one step at 16,384 ranks
TARGET_S = 120.0
TARGET_MIB = 8e9 / 2**20
LOCAL = 8  # ranks per node: the hierarchical algorithm's nodes and the fat tree's leaves
SIZE = "64MiB"

#: short name -> (producer, extra settings)
ALGORITHMS: dict[str, tuple[str, tuple[str, ...]]] = {
    "hd": ("hub.halving_doubling", ()),
    "dbt": ("hub.double_binary_tree", ()),
    "hier": ("hub.hierarchical", (f"local_size={LOCAL}", "fused=true")),
}
STEPS = ("produce", "verify", "simulate")


@dataclass
class Step:
    cpu: float
    wall: float
    mib: float
    note: str


@dataclass
class Point:
    algorithm: str
    ranks: int
    nodes: int
    steps: dict[str, Step]


def _collhub() -> str:
    return str(Path(sys.executable).parent / "collhub")


def _step(cmd: list[str]) -> tuple[Step, str]:
    try:
        wall, cpu, mib, out = measure(cmd)
    except RuntimeError as e:  # a failed step is a row saying so, never a figure
        return Step(math.nan, math.nan, math.nan, f"FAILED: {e}"), ""
    return Step(cpu, wall, mib, ""), out


def _verdict(out: str) -> str:
    r = json.loads(out)
    if not r["ok"]:
        return f"NOT ok ({r['problem_count']} problems)"
    left = r.get("not_checked", {})
    return "all levels" if not left else "; ".join(f"{k} not checked" for k in left)


def point(name: str, n: int, work: Path) -> Point:
    """Produce, verify and simulate one algorithm on ``n`` ranks (files under ``work``)."""
    producer, extra = ALGORITHMS[name]
    prefix = work / f"{name}{n}" / "a"
    prefix.parent.mkdir(parents=True)
    sets = [x for s in (f"ranks={n}", f"max_ranks={n}", "collective=allreduce", *extra) for x in ("-s", s)]
    made, out = _step([_collhub(), "produce", producer, *sets, "-f", "json", "--out", str(prefix)])
    nodes = 0
    if out:
        shown = measure([_collhub(), "trace", "show", str(prefix), "-f", "json"])[3]
        nodes = int(json.loads(shown)["summary"]["nodes"])
    steps = {"produce": made}
    checked, out = _step([_collhub(), "trace", "verify", str(prefix), "--level", "semantics", "-f", "json"])
    if out:
        checked.note = _verdict(out)
        why = json.loads(out).get("not_checked", {})
        if why:
            checked.note += "".join(f"\n    {k}: {v}" for k, v in why.items())
    steps["verify"] = checked
    net = f"fattree:{n // LOCAL}x{LOCAL}"
    sim, out = _step(
        [_collhub(), "consume", "hub.simulate", str(prefix), "-s", f"network={net}", "-s", "mode=aware"]
        + ["-s", f"size={SIZE}", "-f", "json"]
    )
    if out:
        sim.note = f"{int(json.loads(out)['metrics']['time_ns']):,} ns on {net}"
    steps["simulate"] = sim
    shutil.rmtree(prefix.parent)
    return Point(name, n, nodes, steps)


def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of log(ys) against log(xs) (nan with fewer than two finite points)."""
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys, strict=True) if x > 0 and y > 0 and math.isfinite(y)]
    if len(pts) < 2:
        return math.nan
    mx = sum(p[0] for p in pts) / len(pts)
    my = sum(p[1] for p in pts) / len(pts)
    sxx = sum((p[0] - mx) ** 2 for p in pts)
    return sum((p[0] - mx) * (p[1] - my) for p in pts) / sxx if sxx else math.nan


def _ratio(s: Step) -> float:
    return min(TARGET_S / s.cpu, TARGET_MIB / s.mib) if s.cpu > 0 and s.mib > 0 else math.nan


def print_point(p: Point) -> None:
    for step in STEPS:
        s = p.steps[step]
        first, *rest = (s.note or "").split("\n")
        print(
            f"| {p.algorithm:4} | {p.ranks:6} | {p.nodes:11,} | {step:8} | {s.cpu:8.2f} | {s.wall:8.2f} "
            f"| {s.mib:8.0f} | {_ratio(s):6.2f} | {first} |",
            flush=True,
        )
        for line in rest:
            print(f"| {'':4} | {'':6} | {'':11} | {'':8} | {'':8} | {'':8} | {'':8} | {'':6} | {line.strip()} |")


def predicted_nodes(done: list[Point], n: int) -> float | None:
    """Nodes at ``n`` ranks by the power law through the last two measured sizes, or None."""
    if len(done) < 2 or not done[-1].nodes or not done[-2].nodes:
        return None
    a, b = done[-2], done[-1]
    k = math.log(b.nodes / a.nodes) / math.log(b.ranks / a.ranks)
    return b.nodes * (n / b.ranks) ** k


def print_skipped(name: str, n: int, nodes: float, limit: int) -> None:
    print(
        f"| {name:4} | {n:6} | ~{nodes:10,.0f} | (all)    |          |          |          |        "
        f"| not run: about {nodes / 1e6:.0f}M nodes predicted, over --max-nodes {limit / 1e6:.0f}M "
        "(this machine's share of memory) |",
        flush=True,
    )


def print_fits(points: list[Point]) -> None:
    print("\n| algorithm | step | CPU ~ ranks^ | MiB ~ ranks^ | CPU ~ nodes^ | MiB ~ nodes^ |")
    print("|---|---|---|---|---|---|")
    for name in ALGORITHMS:
        mine = [p for p in points if p.algorithm == name]
        if len(mine) < 2:
            continue
        ranks = [float(p.ranks) for p in mine]
        nodes = [float(p.nodes) for p in mine]
        nodes_law = slope(ranks, nodes)
        for step in STEPS:
            cpu = [p.steps[step].cpu for p in mine]
            mib = [p.steps[step].mib for p in mine]
            print(
                f"| {name} | {step} | {slope(ranks, cpu):.2f} | {slope(ranks, mib):.2f} "
                f"| {slope(nodes, cpu):.2f} | {slope(nodes, mib):.2f} |"
            )
        print(f"| {name} | (nodes ~ ranks^{nodes_law:.2f}) | | | | |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="1024 .. 16384 ranks (default: up to 4096)")
    ap.add_argument("--ranks", type=int, nargs="+", help="rank counts (multiples of 8)")
    ap.add_argument("--algorithms", nargs="+", choices=sorted(ALGORITHMS), default=list(ALGORITHMS))
    ap.add_argument(
        "--max-nodes",
        type=int,
        default=60_000_000,
        help="skip a size whose node count, extrapolated from the two sizes before it, passes this "
        "(default 60M: about 8 GB a step at the measured bytes per node)",
    )
    a = ap.parse_args(argv)
    sizes = tuple(a.ranks) if a.ranks else FULL if a.full else QUICK
    if any(n % LOCAL or n < 2 * LOCAL for n in sizes):
        ap.error(f"--ranks must be multiples of {LOCAL}, at least {2 * LOCAL}")
    print(f"growth from {sizes[0]} to {sizes[-1]} ranks: CPU s, wall s, peak MiB per whole process; ")
    print(f"ratio = the 16K target ({TARGET_S:.0f} s, 8 GB) / the measured figure, the worse of the two\n")
    print("| alg  |  ranks |       nodes | step     |    CPU s |   wall s | peak MiB |  ratio | result |")
    print("|---|---|---|---|---|---|---|---|---|")
    points: list[Point] = []
    failed = False
    with tempfile.TemporaryDirectory(prefix="bench-growth-") as tmp:
        for name in a.algorithms:
            done: list[Point] = []
            for n in sizes:
                guess = predicted_nodes(done, n)
                if guess is not None and guess > a.max_nodes:
                    print_skipped(name, n, guess, a.max_nodes)
                    continue
                p = point(name, n, Path(tmp))
                done.append(p)
                print_point(p)
                points.append(p)
                failed |= any(s.note.startswith("FAILED") for s in p.steps.values())
    print_fits(points)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
