"""Differential fidelity of ASTRA-sim's native ring all-reduce in hub.simulate, set-up by set-up.

    python benchmarks/bench_native.py                  # 60 random set-ups, seed 1
    python benchmarks/bench_native.py --cases 200 --seed 7

Each set-up: a random 1-3 dimensional network (Ring / Switch / FullyConnected of 2-8 NPUs,
random bandwidths and latencies), a system.json with random ``preferred-dataset-splits``,
``active-chunks-per-dimension``, ``collective-optimization``, ``endpoint-delay``,
``local-mem-bw`` and ``scheduling-policy``, and a workload of skewed compute then two
all-reduces (8 B to 3 MB). Every rank's finish from hub.simulate is compared with the real
binary's (both backends on 1-D networks, the unaware one otherwise). Prints, per feature and
backend: set-ups compared, equal, and those neither simulator finishes (ASTRA-sim's streams
deadlock: "Hardware Resource ... has unreleased nodes"; hub.simulate says so in one error).
Exit status 1 when any set-up differs otherwise.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hub.errors import SimulationError  # noqa: E402
from hub.sim import simulate  # noqa: E402
from tests.sim.difftest import oracle_unavailable  # noqa: E402
from tests.sim.test_native_ring import BASE, _real, _skewed  # noqa: E402


def _setup(rng: random.Random) -> tuple[str, dict[str, Any], list[int], str]:
    nd = rng.choice((1, 1, 2, 2, 3))
    sizes = [rng.choice((2, 3, 4)) for _ in range(nd)] if nd > 1 else [rng.choice((3, 4, 6, 8))]
    kinds = ("ring", "switch", "fc")
    net = ",".join(
        f"{rng.choice(kinds)}:{m}@bw={rng.choice((25, 50, 100))},lat={rng.choice((100, 500))}" for m in sizes
    )
    system = {
        **BASE,
        "all-reduce-implementation": ["ring"] * nd,
        "preferred-dataset-splits": rng.randint(1, 8),
        "active-chunks-per-dimension": rng.randint(1, 3),
        "collective-optimization": rng.choice(("baseline", "localBWAware")),
        "endpoint-delay": rng.randint(1, 20),
        "local-mem-bw": rng.choice((50, 400, 1600)),
        "scheduling-policy": rng.choice(("LIFO", "FIFO")),
    }
    colls = [rng.choice((rng.randint(8, 5000), rng.randint(10_000, 3_000_000))), rng.randint(10_000, 300_000)]
    feature = (
        f"{nd}-D"
        + (", active chunks > 1" if system["active-chunks-per-dimension"] > 1 else "")
        + (", localBWAware" if system["collective-optimization"] == "localBWAware" else "")
    )
    return net, system, [math.prod(sizes), *colls], feature


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=60)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    if (why := oracle_unavailable()) is not None:
        print(f"skipped: {why}")
        return 0
    rng = random.Random(args.seed)
    stats: Counter[tuple[str, str, str]] = Counter()
    first_diff = None
    for _ in range(args.cases):
        net, system, (n, *colls), feature = _setup(rng)
        wl = _skewed(colls, n)
        for mode in ("unaware", "aware") if feature.startswith("1-D") else ("unaware",):
            try:
                ours: Any = simulate(wl, net, mode=mode, system=system).rank_finish_ns
            except SimulationError as exc:
                ours = exc.message
            try:
                real: Any = _real(wl, net, mode, system)
            except KeyError:  # no "finished" line: ASTRA-sim never finished
                real = None
            if ours == real:
                stats[(feature, mode, "equal")] += 1
            elif real is None and isinstance(ours, str) and "never finishes" in ours:
                stats[(feature, mode, "neither finishes")] += 1
            else:
                stats[(feature, mode, "DIFFERENT")] += 1
                first_diff = first_diff or (net, system, colls, mode, ours, real)
    rows = sorted({(f, m) for f, m, _ in stats})
    print(f"| feature | backend | set-ups | equal | neither finishes | different |  (seed {args.seed})")
    print("|---|---|---|---|---|---|")
    for f, m in rows:
        e, s, d = (stats[(f, m, k)] for k in ("equal", "neither finishes", "DIFFERENT"))
        print(f"| {f} | {m} | {e + s + d} | {e} | {s} | {d} |")
    if first_diff:
        print("first difference:", first_diff)
    return 1 if first_diff else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
