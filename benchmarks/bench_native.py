"""Differential fidelity of ASTRA-sim's native collectives in hub.simulate, set-up by set-up.

    python benchmarks/bench_native.py                  # 80 random set-ups, seed 1
    python benchmarks/bench_native.py --cases 200 --seed 7

Each set-up: a collective (all-reduce, all-gather, reduce-scatter, all-to-all) and one
implementation per network dimension drawn from those hub.simulate reproduces for it (``ring``,
``direct``, ``halvingDoubling``, ``doubleBinaryTree``), a random 1-3 dimensional network (Ring /
Switch / FullyConnected of 2-8 NPUs, powers of two where the algorithm needs them, random
bandwidths and latencies), a system.json with random ``preferred-dataset-splits``,
``active-chunks-per-dimension``, ``collective-optimization``, ``endpoint-delay``,
``local-mem-bw`` and ``scheduling-policy``, and a workload of skewed compute then two such
collectives (8 B to 3 MB). Every rank's finish from hub.simulate is compared with the real
binary's (both backends on 1-D networks, the unaware one otherwise). Prints, per algorithm,
collective, feature and backend: set-ups compared, equal, and those neither simulator finishes
(ASTRA-sim's streams deadlock: "Hardware Resource ... has unreleased nodes"; hub.simulate says
so in one error); refusals are counted apart. Exit status 1 when any set-up differs otherwise.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hub.errors import SimulationError  # noqa: E402
from hub.sim import simulate  # noqa: E402
from tests.sim.astrasim.cases import random_setup  # noqa: E402
from tests.sim.astrasim.test_algorithms import _mixed, _real  # noqa: E402
from tests.sim.difftest import oracle_unavailable  # noqa: E402


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=80)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    if (why := oracle_unavailable()) is not None:
        print(f"skipped: {why}")
        return 0
    rng = random.Random(args.seed)
    stats: Counter[tuple[str, str, str]] = Counter()
    diffs = []
    for _ in range(args.cases):
        net, system, coll, n, colls, feature = random_setup(rng)
        wl = _mixed(n, [(coll, s) for s in colls], seed=rng.randint(0, 4))
        for mode in ("unaware", "aware") if "| 1-D" in feature else ("unaware",):
            try:
                ours: Any = simulate(wl, net, mode=mode, system=system).rank_finish_ns
            except SimulationError as exc:
                ours = exc.message
            if isinstance(ours, str) and ours.startswith("system.json key"):
                stats[(feature, mode, "refused")] += 1
                continue
            try:
                real: Any = _real(wl, net, mode, system, {coll: "ring"})  # (the system's list wins)
            except KeyError:  # no "finished" line: ASTRA-sim never finished
                real = None
            if ours == real:
                stats[(feature, mode, "equal")] += 1
            elif real is None and isinstance(ours, str) and "never finishes" in ours:
                stats[(feature, mode, "neither finishes")] += 1
            else:
                stats[(feature, mode, "DIFFERENT")] += 1
                diffs.append((net, system, coll.value, colls, mode, ours, real))
    rows = sorted({(f, m) for f, m, _ in stats})
    print("| algorithm collective | feature | backend | set-ups | equal | neither finishes | refused | different |")
    print("|---|---|---|---|---|---|---|---|  (seed", args.seed, ")")
    for f, m in rows:
        e, s, r, d = (stats[(f, m, k)] for k in ("equal", "neither finishes", "refused", "DIFFERENT"))
        print(f"| {f} | {m} | {e + s + r + d} | {e} | {s} | {r} | {d} |")
    tot = {
        k: sum(v for (_, _, kk), v in stats.items() if kk == k)
        for k in ("equal", "neither finishes", "refused", "DIFFERENT")
    }
    print("total:", tot)
    for d in diffs[:5]:
        print("difference:", d)
    return 1 if diffs else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
