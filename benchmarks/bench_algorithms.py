"""Build times of the built-in algorithm library (``hub.algorithms``).

Run alone: ``python benchmarks/bench_algorithms.py [--max-ranks 1024] [--repeat 3]``.
Prints, per algorithm / collective / rank count, the node count, the best-of-``repeat`` build
time, the build rate (nodes/s) and the model's memory per node; then the time of
``Algorithm.bind`` on the largest ring all-reduce.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hub.algorithms import make  # noqa: E402

CASES: list[tuple[str, str, dict[str, object]]] = [
    ("ring", "allreduce", {}),
    ("ring", "allreduce", {"reduction_comp": False}),
    ("ring", "allreduce", {"channels": 2, "bidirectional": True}),
    ("ring", "allgather", {}),
    ("ring", "reducescatter", {"inplace": False}),
    ("ring", "alltoall", {}),
    ("direct", "alltoall", {}),
    ("direct", "allreduce", {}),
    ("halving_doubling", "allreduce", {}),
    ("double_binary_tree", "allreduce", {"pipeline": 8}),
    ("hierarchical", "allreduce", {"local_size": 8}),
    ("hierarchical", "alltoall", {"local_size": 8}),
]

# quadratic algorithms (n^2 messages, ring all-to-all's n^3/2 chunks) stop earlier
LIMIT = {("ring", "alltoall"): 256, ("direct", "alltoall"): 512, ("direct", "allreduce"): 512}


def _time(fn, repeat: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        out = None
        gc.collect()
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-ranks", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    ranks = [n for n in (64, 256, 1024) if n <= args.max_ranks]
    print(
        f"{'algorithm':<20} {'collective':<14} {'options':<34} {'ranks':>6} {'nodes':>10} "
        f"{'build s':>8} {'Mnodes/s':>9} {'B/node':>7}"
    )
    largest = None
    for name, coll, opts in CASES:
        for n in ranks:
            if n > LIMIT.get((name, coll), 1 << 30):
                continue
            secs, alg = _time(partial(make, name, coll, n, **opts), args.repeat)
            nodes = alg.node_count()  # type: ignore[union-attr]
            opt_text = ",".join(f"{k}={v}" for k, v in opts.items()) or "-"
            print(
                f"{name:<20} {coll:<14} {opt_text:<34} {n:>6} {nodes:>10} {secs:>8.3f} "
                f"{nodes / secs / 1e6:>9.2f} {alg.nbytes() / nodes:>7.1f}"
            )  # type: ignore[union-attr]
            if name == "ring" and coll == "allreduce" and not opts:
                largest = alg
            del alg
    if largest is not None:
        secs, bound = _time(lambda: largest.bind(1 << 30), 1)
        print(f"\nbind(1 GiB) of ring allreduce on {largest.ranks} ranks ({largest.node_count()} nodes): {secs:.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
