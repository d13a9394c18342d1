"""Benchmark of collhub-astrasim: bundle writing and report parsing at scale.

Run alone: ``python benchmarks/bench_astrasim.py [--ranks 64,256,1024]``. Prints a table.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path


def _bench_bundle(ranks: int, algorithm: str) -> tuple[int, float, int]:
    from collhub_astrasim import Dim, build_bundle
    from hub.plugins import RunContext, create_manager

    tmp = Path(tempfile.mkdtemp(prefix="bench-astrasim-"))
    try:
        alg = create_manager().run_producer(
            f"hub.{algorithm}", {"collective": "allreduce", "ranks": ranks}, RunContext(workdir=tmp)
        )
        start = time.perf_counter()
        b = build_bundle(
            alg, out=tmp / "b", dims=[Dim("Ring", ranks, 50, 500)], size=1 << 26, predict=False, check=False
        )
        seconds = time.perf_counter() - start
        size = sum(p.stat().st_size for p in b.path.rglob("*.et"))
        return alg.node_count(), seconds, size
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _bench_parse(ranks: int) -> float:
    from collhub_astrasim import parse_output

    lines = []
    for i in range(ranks):
        lines.append(
            f"[2025-06-10 10:00:01.000] [workload] [info] sys[{i}] finished, 90174 cycles, exposed "
            "communication 90174 cycles."
        )
        lines.append(f"[2025-06-10 10:00:01.000] [statistics] [info] sys[{i}], Wall time: 90174")
        lines.append(f"[2025-06-10 10:00:01.000] [statistics] [info] sys[{i}], Comm time: 90174")
    text = "\n".join(lines)
    start = time.perf_counter()
    report = parse_output(text)
    assert report.time_ns == 90174 and len(report.ranks) == ranks
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--ranks", default="64,256,1024")
    ap.add_argument("--algorithms", default="ring,direct")
    args = ap.parse_args()
    print(f"{'algorithm':<10} {'ranks':>6} {'nodes':>10} {'bundle s':>9} {'Mnodes/s':>9} {'ET MiB':>8} {'parse ms':>9}")
    for algorithm in args.algorithms.split(","):
        for ranks in (int(r) for r in args.ranks.split(",")):
            nodes, seconds, size = _bench_bundle(ranks, algorithm)
            parse = _bench_parse(ranks)
            print(
                f"{algorithm:<10} {ranks:>6} {nodes:>10} {seconds:>9.2f} {nodes / seconds / 1e6:>9.2f} "
                f"{size / 2**20:>8.1f} {parse * 1e3:>9.2f}"
            )


if __name__ == "__main__":
    main()
