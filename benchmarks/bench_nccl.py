"""Benchmark of collhub-nccl: NCCL's choice per call, and producing / simulating its schedules.

    python benchmarks/bench_nccl.py            # auto per call + schedules up to 256 ranks (about a minute)
    python benchmarks/bench_nccl.py --big      # also 1024 ranks (8 per node: ring; 1 per node: PAT)

Targets (issue #28): ``algorithm=auto`` <= 50 ms per call; ``nccl.ring`` / ``nccl.pat`` at 1024
ranks (8 per node) and 1 GiB: produce <= 5 s, simulate <= 10 s. Columns: ``ms/call`` = NCCL's
choice (``choose``) per call, first call (the model table built, cold) and after (cached);
``produce s`` = plan + schedule (wall, one process per case so ``peak MB`` is that case's RSS),
``sim s`` = hub.simulate (unaware: the aware model on a link graph of 1024 GPUs is far slower;
its times ignore link sharing between NCCL's channels, so they fall below the lower bound and are
flagged: only the run time is the measurement here, ``collhub nccl compare`` gives honest times),
``nodes`` = Chakra nodes over all ranks; ratios are against the targets (< 1 = within).
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

# name -> (producer algorithm, collective, ranks, gpus per node, size)
CASES: dict[str, tuple[str, str, int, int, int]] = {
    "ring-ar-64x8": ("Ring", "allreduce", 64, 8, 1 << 30),
    "ring-ag-128x8": ("Ring", "allgather", 128, 8, 1 << 30),
    "tree-ar-128x8": ("Tree", "allreduce", 128, 8, 1 << 30),
    "pat-ag-128x1": ("PAT", "allgather", 128, 1, 1 << 30),
    "pat-rs-256x1": ("PAT", "reducescatter", 256, 1, 1 << 30),
    "ring-ag-1024x8": ("Ring", "allgather", 1024, 8, 1 << 30),
    "pat-ag-1024x1": ("PAT", "allgather", 1024, 1, 1 << 30),
}
BIG = {"ring-ag-1024x8", "pat-ag-1024x1"}


def _case(name: str) -> dict[str, object]:
    from collhub_nccl import plan, schedule
    from collhub_nccl._system import make_system, network_of
    from hub.sim import simulate

    algo, coll, ranks, ppn, size = CASES[name]
    s = make_system("hopper", ppn, ranks // ppn, 400.0)
    t0 = time.perf_counter()
    p = plan(coll, ranks, size, gpus_per_node=ppn, algorithm=algo, system=s)
    alg = schedule(p)
    t_prod = time.perf_counter() - t0
    t0 = time.perf_counter()
    res = simulate(alg, network_of(s))
    t_sim = time.perf_counter() - t0
    return {
        "case": name,
        "pick": f"{p.algorithm}/{p.protocol} x{len(p.split.parts)}",
        "nodes": alg.node_count(),
        "produce_s": t_prod,
        "sim_s": t_sim,
        "time_us": res.time_ns / 1000,
        "bound_us": (res.bound_ns or 0) / 1000,
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def _auto() -> list[tuple[str, float, float]]:
    from collhub_nccl import choose
    from collhub_nccl._system import parse_system

    rows = []
    for text in ("dgx-h100x4", "hopper:8x128@nic=400G", "ampere:1x1024@nic=200G", "volta:8x16@nic=100G"):
        s = parse_system(text)
        t0 = time.perf_counter()
        choose(s, "AllReduce", 1 << 20)
        cold = time.perf_counter() - t0
        sizes = [1 << k for k in range(10, 33)]
        t0 = time.perf_counter()
        for coll in ("AllReduce", "AllGather", "ReduceScatter"):
            for n in sizes:
                choose(s, coll, n)
        warm = (time.perf_counter() - t0) / (3 * len(sizes))
        rows.append((text, cold * 1000, warm * 1000))
    return rows


def main(argv: list[str]) -> int:
    if argv[:1] == ["--case"]:
        print(json.dumps(_case(argv[1])))
        return 0
    print("NCCL's choice (algorithm=auto), target 50 ms per call")
    print(f"{'system':<26} {'cold ms/call':>12} {'ms/call':>9} {'vs 50 ms':>9}")
    for text, cold, warm in _auto():
        print(f"{text:<26} {cold:>12.3f} {warm:>9.4f} {cold / 50:>9.4f}")
    cases = [c for c in CASES if c not in BIG or "--big" in argv]
    print("\nschedules at 1 GiB (produce target 5 s, simulate target 10 s)")
    print(
        f"{'case':<16} {'pick':<20} {'nodes':>11} {'produce s':>10} {'vs 5 s':>7} {'sim s':>8} {'vs 10 s':>8} "
        f"{'time us':>10} {'bound us':>9} {'peak MB':>8}"
    )
    for name in cases:
        proc = subprocess.run([sys.executable, __file__, "--case", name], capture_output=True, text=True)
        if proc.returncode != 0:
            tail = (proc.stderr.strip().splitlines() or ["?"])[-1]
            print(f"{name:<16} failed: {tail}")
            continue
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        print(
            f"{r['case']:<16} {r['pick']:<20} {r['nodes']:>11,} {r['produce_s']:>10.2f} {r['produce_s'] / 5:>7.2f} "
            f"{r['sim_s']:>8.2f} {r['sim_s'] / 10:>8.2f} {r['time_us']:>10.1f} {r['bound_us']:>9.1f} "
            f"{r['peak_mb']:>8.0f}"
            + (
                "  BELOW THE BOUND: the unaware model runs channels as if links were not shared"
                if r["time_us"] < r["bound_us"]
                else ""
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
