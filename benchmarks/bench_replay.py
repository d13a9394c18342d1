"""Benchmark of collhub-replay: replayed all-reduce on gloo beside gloo's own all_reduce.

Run alone: ``nice -n 10 python benchmarks/bench_replay.py [--ranks 4] [--iters 5] [--repeat 5]``.

4 rank processes on this machine's CPUs (loopback TCP), ring / direct / halving-doubling
all-reduce from 1 KiB to 64 MiB. Each size is timed as nccl-tests does (mean per iteration, max
over ranks), with the native all_reduce timed the same way in the same process group, in
interleaved rounds (replay, native, replay, native, ...; median of each) so that a drifting load
hits both alike. Both sides run in place: the replayed in-place algorithms against a plain
``dist.all_reduce(buf)`` (no copy). Target: ring at 64 MiB reaches >= 0.85x the native busbw.

Per-step overhead: "replay minus native, per message" is meaningless on a loaded machine (it
goes negative), so the benchmark measures the interpreter's own cost per message in-process,
with communication stubbed out, and prints the replay time per message at 1 KiB as the upper
bound that includes the network. On a shared machine the numbers are noisy (expect +-20 %):
compare ratios, not absolutes.
"""

from __future__ import annotations

import argparse
import time

_TARGET = 0.85


class _Done:
    """A Work that is already complete."""

    def wait(self) -> bool:
        return True


class _NoNetwork:
    """Stands in for torch.distributed in ``_interpreter_overhead``: every send and receive
    completes at once, so what is left is the interpreter's own cost (dependency bookkeeping,
    issue, the waiter-thread hand-off, local copies/reductions of 4-byte chunks)."""

    def isend(self, *args: object, **kwargs: object) -> _Done:
        return _Done()

    irecv = isend


def _interpreter_overhead(alg: object, iters: int = 2000) -> tuple[float, float, int, int]:
    """(us per message, us per node, messages, nodes) of rank 0's plan at 4 B per chunk, in this
    process, communication stubbed out (it measures the interpreter, not the network)."""
    import torch

    from collhub_replay import preflight
    from collhub_replay._interp import make_program, run_gloo
    from collhub_replay._plan import RECV_COPY, RECV_REDUCE, SEND

    torch.set_num_threads(1)
    plan = preflight(alg, [1 << 12], "float32")  # type: ignore[arg-type]
    rp = plan.ranks_plan[0]
    mem = torch.zeros(rp.layout.size, dtype=torch.float32)
    prog = make_program(torch, rp, mem, 1, "sum", torch.float32, torch.device("cpu"))
    fake = _NoNetwork()
    try:
        for _ in range(50):
            run_gloo(torch, fake, prog, 10.0)
        t0 = time.perf_counter()
        for _ in range(iters):
            run_gloo(torch, fake, prog, 10.0)
        secs = (time.perf_counter() - t0) / iters
    finally:
        prog.close()
    msgs = sum(1 for k in rp.kind if k in (SEND, RECV_COPY, RECV_REDUCE))
    return secs * 1e6 / max(msgs, 1), secs * 1e6 / max(len(rp), 1), msgs, len(rp)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=5, help="interleaved timing rounds (median)")
    ap.add_argument("--min", default="1KiB")
    ap.add_argument("--max", default="64MiB")
    ap.add_argument("--factor", type=int, default=16)
    args = ap.parse_args()

    from collhub_replay import ReplayParams, replay
    from hub.algorithms import make

    names = ["ring", "direct", "halving_doubling"]
    algs = [make(n, "allreduce", args.ranks) for n in names]
    params = ReplayParams(
        size=args.min,
        max_size=args.max,
        factor=args.factor,
        iters=args.iters,
        warmup=2,
        repeat=args.repeat,
        inplace="algorithm",
        backend="gloo",
        timeout=120,
    )
    t0 = time.perf_counter()
    reps = replay(algs, params)
    wall = time.perf_counter() - t0
    print(
        f"gloo, {args.ranks} ranks, float32 sum, median of {args.repeat} interleaved rounds of {args.iters} iters "
        f"(+2 warm-up), in-place algorithms; "
        f"wall {wall:.1f} s (one spawn for everything)\n"
    )
    print(
        f"{'algorithm':<18} {'size (B)':>10} {'time (us)':>11} {'busbw':>8} {'native (us)':>12} "
        f"{'native busbw':>12} {'replay/native busbw':>20} {'#wrong':>7}"
    )
    ok = True
    for name, rep in zip(names, reps, strict=False):
        for row in rep.rows:
            ratio = row["ip_busbw_GBps"] / row["native_ip_busbw_GBps"]
            print(
                f"{name:<18} {row['size']:>10} {row['ip_time_us']:>11.1f} {row['ip_busbw_GBps']:>8.3f} "
                f"{row['native_ip_time_us']:>12.1f} {row['native_ip_busbw_GBps']:>12.3f} {ratio:>20.2f} "
                f"{row['ip_wrong']:>7}"
            )
            ok = ok and row["ip_wrong"] == 0
    print()
    for name, rep in zip(names, reps, strict=False):
        small = rep.rows[0]
        print(
            f"{name:<18}: at {small['size']} B, {small['ip_time_us'] / rep.steps:8.1f} us of replay time per message "
            f"(upper bound of the per-step cost: {rep.steps} messages per rank per iteration, network included)"
        )
    print()
    for name in names:
        per_msg, per_node, msgs, nodes = _interpreter_overhead(make(name, "allreduce", args.ranks))
        print(
            f"interpreter overhead {name:<18}: {per_msg:6.1f} us per message, {per_node:6.1f} us per node "
            f"({msgs} messages, {nodes} nodes on rank 0; communication stubbed out, see _interpreter_overhead)"
        )
    big = reps[0].rows[-1]
    ratio = big["ip_busbw_GBps"] / big["native_ip_busbw_GBps"]
    verdict = "PASS" if ratio >= _TARGET else "FAIL"
    print(f"\ntarget: ring all-reduce at {big['size']} B busbw >= {_TARGET}x native: {ratio:.2f}x {verdict}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
