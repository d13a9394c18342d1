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
import math
import random
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hub.chakra import Collective  # noqa: E402
from hub.errors import SimulationError  # noqa: E402
from hub.sim import simulate  # noqa: E402
from tests.sim.difftest import oracle_unavailable  # noqa: E402
from tests.sim.test_native_algorithms import STEM, _mixed, _real  # noqa: E402
from tests.sim.test_native_ring import BASE  # noqa: E402

#: the implementations hub.simulate reproduces per collective (docs/simulator.md, "Native collectives")
ALGOS: dict[Collective, tuple[str, ...]] = {
    Collective.ALLREDUCE: ("ring", "halvingDoubling", "doubleBinaryTree"),
    Collective.ALLGATHER: ("ring", "direct", "halvingDoubling", "doubleBinaryTree"),
    Collective.REDUCESCATTER: ("ring", "direct", "halvingDoubling", "doubleBinaryTree"),
    Collective.ALLTOALL: ("ring", "direct", "doubleBinaryTree"),
}
_POW2 = frozenset({"halvingDoubling", "doubleBinaryTree"})


def _setup(rng: random.Random) -> tuple[str, dict[str, Any], Collective, int, list[int], str]:
    coll = rng.choice(list(ALGOS))
    nd = rng.choice((1, 1, 2, 2, 3)) if coll is Collective.ALLREDUCE else rng.choice((1, 2))
    impls = [rng.choice(ALGOS[coll]) for _ in range(nd)]
    sizes = [rng.choice((2, 4) if nd > 1 else (4, 8)) if a in _POW2 else rng.choice((2, 3, 4)) for a in impls]
    if nd == 1 and impls[0] not in _POW2:
        sizes = [rng.choice((3, 4, 6, 8))]
    kinds = ("ring", "switch", "fc")
    net = ",".join(
        f"{rng.choice(kinds if m > 2 else kinds[1:])}:{m}@bw={rng.choice((25, 50, 100))},lat={rng.choice((100, 500))}"
        for m in sizes
    )  # (the aware binary aborts on a 2-NPU Ring)
    system = {
        **BASE,
        f"{STEM[coll]}-implementation": impls,
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
    return net, system, coll, math.prod(sizes), colls, f"{'/'.join(dict.fromkeys(impls))} {coll.value} | {feature}"


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
        net, system, coll, n, colls, feature = _setup(rng)
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
