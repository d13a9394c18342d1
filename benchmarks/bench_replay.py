"""Benchmark of collhub-replay: replayed all-reduce on gloo beside gloo's own all_reduce.

Run alone: ``nice -n 10 python benchmarks/bench_replay.py [--ranks 4] [--iters 10]``.
4 rank processes on this machine's CPUs (loopback TCP), ring / direct / halving-doubling
from 1 KiB to 64 MiB, each size timed as nccl-tests does (mean per iteration, max over ranks)
with the native all_reduce timed the same way in the same process group. Target: ring at
64 MiB reaches >= 0.85x the native busbw. The per-step overhead is the replay's extra time over
native at the smallest size divided by the messages a rank handles per iteration.
On a shared machine the numbers are noisy (expect +-20 %); compare ratios, not absolutes.
"""

from __future__ import annotations

import argparse
import time

_TARGET = 0.85


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--min", default="1KiB")
    ap.add_argument("--max", default="64MiB")
    ap.add_argument("--factor", type=int, default=16)
    args = ap.parse_args()

    from collhub_replay import ReplayParams, replay
    from hub.algorithms import make

    names = ["ring", "direct", "halving_doubling"]
    algs = [make(n, "allreduce", args.ranks) for n in names]
    params = ReplayParams(size=args.min, max_size=args.max, factor=args.factor, iters=args.iters, warmup=2,
                          inplace="algorithm", backend="gloo", timeout=120)
    t0 = time.perf_counter()
    reps = replay(algs, params)
    wall = time.perf_counter() - t0
    print(f"gloo, {args.ranks} ranks, float32 sum, {args.iters} iters (+2 warm-up), in-place algorithms; "
          f"wall {wall:.1f} s (one spawn for everything)\n")
    print(f"{'algorithm':<18} {'size (B)':>10} {'time (us)':>11} {'busbw':>8} {'native (us)':>12} "
          f"{'native busbw':>12} {'replay/native busbw':>20} {'#wrong':>7}")
    ok = True
    for name, rep in zip(names, reps):
        for row in rep.rows:
            ratio = row["ip_busbw_GBps"] / row["native_busbw_GBps"]
            print(f"{name:<18} {row['size']:>10} {row['ip_time_us']:>11.1f} {row['ip_busbw_GBps']:>8.3f} "
                  f"{row['native_time_us']:>12.1f} {row['native_busbw_GBps']:>12.3f} {ratio:>20.2f} "
                  f"{row['ip_wrong']:>7}")
            ok = ok and row["ip_wrong"] == 0
    print()
    for name, rep in zip(names, reps):
        small = rep.rows[0]
        extra = small["ip_time_us"] - small["native_time_us"]
        print(f"per-step overhead {name:<18}: {extra / rep.steps:8.1f} us per message "
              f"({rep.steps} messages per rank per iteration at {small['size']} B)")
    big = reps[0].rows[-1]
    ratio = big["ip_busbw_GBps"] / big["native_busbw_GBps"]
    verdict = "PASS" if ratio >= _TARGET else "FAIL"
    print(f"\ntarget: ring all-reduce at {big['size']} B busbw >= {_TARGET}x native: {ratio:.2f}x {verdict}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
