"""Benchmark of hub.simulate: large pipelined ring all-reduces (prints a table).

Run: ``python benchmarks/bench_sim.py [--quick] [--ranks 64,128] [--mode unaware]``, or
``python benchmarks/bench_sim.py --vs-astrasim 256,1024`` (whole processes from files on disk,
``collhub consume hub.simulate`` against the real ASTRA-sim binary on the same ETs; also run
after the default table at 256 ranks when the binaries can run).
Targets: 256 ranks <= 1 s unaware and <= 3 s aware; 1024 ranks unaware <= 10 s; whole process
256 ranks aware <= 2 s and >= 5x faster than ASTRA-sim.

Each case runs in its own subprocess, so ``peak MiB`` (``ru_maxrss`` of that child) is the
case's own peak, and no case inherits another's heap. ``wall`` and ``cpu`` time only the
``simulate`` call (the ring is built before, vectorized with ``RankGraph.from_columns``).
The machine may be shared, so each child also times a fixed pure-Python reference loop
(``ref``, 5 M iterations of ``s += i & 7``) just before; ``wall/ref`` is the CPU-normalised
figure, comparable across loaded and idle machines.
The simulated time is checked against the closed form 2(n-1)*floor(L + (S/n)/B') (same for
both models on a ring: every link carries one message at a time).
"""

from __future__ import annotations

import json
import math
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SIZE = 64 << 20  # collective size (bytes)
CASES = [(256, "unaware", 1.0), (256, "aware", 3.0), (1024, "unaware", 10.0)]
# whole-process comparison: larger cases run ours only (ASTRA_MAX_RANKS=4096 in the environment forces them)
ASTRA_MAX_RANKS = int(__import__("os").environ.get("ASTRA_MAX_RANKS", "512"))


def ring_allreduce(n: int, size: int):  # noqa: ANN201 - hub imported lazily (the parent does not need it)
    """Pipelined ring all-reduce: per step k SEND(k) -> r+1 (deps RECV(k-1)), RECV(k) <- r-1 (deps RECV(k-1))."""
    from hub.chakra import Algorithm, AlgorithmMeta, Collective, NodeType, RankGraph

    steps = 2 * (n - 1)
    m = size // n
    kind = np.empty(2 * steps, dtype=np.int8)
    kind[0::2] = NodeType.SEND
    kind[1::2] = NodeType.RECV
    # node 2k = SEND(k), 2k+1 = RECV(k); both depend on RECV(k-1) = 2k-1 (k >= 1)
    cnt = np.ones(2 * steps, dtype=np.int64)
    cnt[:2] = 0
    dep_ptr = np.concatenate([[0], np.cumsum(cnt)])
    dep_pos = np.repeat(np.arange(1, 2 * steps - 2, 2), 2).astype(np.int32)
    graphs = []
    for r in range(n):
        peer = np.empty(2 * steps, dtype=np.int32)
        peer[0::2] = (r + 1) % n
        peer[1::2] = (r - 1) % n
        graphs.append(
            RankGraph.from_columns(2 * steps, kind=kind, peer=peer, count=1, size=m, dep_ptr=dep_ptr, dep_pos=dep_pos)
        )
    return Algorithm(AlgorithmMeta(Collective.ALLREDUCE, n, n, n, size=size), tuple(graphs))


def expected_ns(n: int, size: int, bw_GBps: float = 50.0, lat_ns: float = 500.0) -> int:
    """astra-sim.md §7.4: 2(n-1) * floor(L + (S/n)/B'), B' = bw * 2^30 / 10^9 B/ns."""
    return 2 * (n - 1) * math.floor(lat_ns + (size // n) / (bw_GBps * 2**30 / 1e9))


def reference_loop() -> float:
    """Seconds for a fixed pure-Python loop: the machine's current speed for interpreted code."""
    t0 = time.perf_counter()
    s = 0
    for i in range(5_000_000):
        s += i & 7
    return time.perf_counter() - t0


def child(n: int, mode: str) -> None:
    """Run one case and print its figures as JSON."""
    from hub.sim import simulate

    alg = ring_allreduce(n, SIZE)
    ref = reference_loop()
    t0, c0 = time.perf_counter(), time.process_time()
    res = simulate(alg, f"ring:{n}", mode=mode)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(
        json.dumps(
            {"messages": res.messages, "time_ns": res.time_ns, "wall": wall, "cpu": cpu, "ref": ref, "peak": peak}
        )
    )


def _timed(cmd: list[str], cwd: Path | None = None) -> tuple[float, float, float, str]:
    """(wall s, CPU s, peak MiB, stdout) of one whole process (its own rusage: user + system
    time, ru_maxrss)."""
    import os
    import tempfile

    with tempfile.TemporaryFile() as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode(errors="replace")
    if proc.returncode:
        raise RuntimeError(f"{cmd[0]} exited with {proc.returncode}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, text


def vs_astrasim(ranks: list[int], modes: list[str]) -> bool:  # noqa: C901
    """Whole process from files on disk: ``collhub consume hub.simulate`` against the real
    ASTRA-sim binary on the same bundle (written by astrasim.bundle). Returns False on a failure."""
    import tempfile

    from collhub_astrasim._bundle import _dims_for, build_bundle
    from collhub_astrasim._parse import parse_output
    from tests.sim.difftest import BIN, BINARIES, oracle_unavailable

    why = oracle_unavailable()
    print("\nwhole process from files: collhub consume hub.simulate vs the real ASTRA-sim binary (same ETs)")
    if why:
        print(f"skipped: {why}")
        return True
    print(
        f"{'ranks':>6} {'mode':>8} {'ours s':>7} {'cpu s':>6} {'MiB':>5} {'astra s':>8} {'cpu s':>6} {'MiB':>5} "
        f"{'wall x':>6} {'cpu x':>6} {'same ns':>7}"
    )
    ok = True
    collhub = str(Path(sys.executable).parent / "collhub")
    for n in ranks:
        with tempfile.TemporaryDirectory(prefix="bench-sim-") as tmp:
            bundle = build_bundle(
                ring_allreduce(n, SIZE), out=Path(tmp) / "b", dims=_dims_for(f"ring:{n}"), predict=False
            )
            prefix = str(bundle.path / "algorithm" / "custom_allreduce")
            for mode in modes:
                ours_s, ours_cpu, ours_mib, text = _timed(
                    [
                        collhub,
                        "consume",
                        "hub.simulate",
                        prefix,
                        "-s",
                        f"network=ring:{n}",
                        "-s",
                        f"mode={mode}",
                        "-f",
                        "json",
                    ]
                )
                ours_ns = json.loads(text)["metrics"]["time_ns"]
                if n > ASTRA_MAX_RANKS:  # ASTRA-sim needs > 4 GiB and many minutes at 1024 ranks (aware)
                    print(
                        f"{n:>6} {mode:>8} {ours_s:>7.2f} {ours_cpu:>6.2f} {ours_mib:>5.0f} "
                        f"{'(ASTRA-sim not run above ' + str(ASTRA_MAX_RANKS) + ' ranks)':>40}",
                        flush=True,
                    )
                    continue
                theirs_s, theirs_cpu, theirs_mib, text = _timed(
                    [str(BIN / BINARIES[mode]), *bundle.args()], cwd=bundle.path
                )
                theirs_ns = parse_output(text).time_ns
                same = ours_ns == theirs_ns
                ok &= same
                print(
                    f"{n:>6} {mode:>8} {ours_s:>7.2f} {ours_cpu:>6.2f} {ours_mib:>5.0f} {theirs_s:>8.2f} "
                    f"{theirs_cpu:>6.2f} "
                    f"{theirs_mib:>5.0f} {theirs_s / ours_s:>5.1f}x {theirs_cpu / ours_cpu:>5.1f}x "
                    f"{'yes' if same else 'NO':>7}",
                    flush=True,
                )
    return ok


def main() -> None:
    if "--vs-astrasim" in sys.argv:
        i = sys.argv.index("--vs-astrasim")
        ranks = [int(x) for x in sys.argv[i + 1].split(",")] if len(sys.argv) > i + 1 else [256]
        sys.exit(0 if vs_astrasim(ranks, ["aware", "unaware"]) else 1)
    if "--child" in sys.argv:
        i = sys.argv.index("--child")
        child(int(sys.argv[i + 1]), sys.argv[i + 2])
        return
    cases = CASES[:2] if "--quick" in sys.argv else CASES
    if "--ranks" in sys.argv:
        ranks = [int(x) for x in sys.argv[sys.argv.index("--ranks") + 1].split(",")]
        modes = [sys.argv[sys.argv.index("--mode") + 1]] if "--mode" in sys.argv else ["unaware", "aware"]
        cases = [(n, m, math.nan) for n in ranks for m in modes]
    print(
        f"{'ranks':>6} {'mode':>8} {'messages':>9} {'sim ns':>9} {'exact':>5} {'wall s':>7} {'cpu s':>6} "
        f"{'ref s':>6} {'wall/ref':>8} {'peak MiB':>8} {'target s':>8} {'ok':>3}"
    )
    failed = False
    for n, mode, target in cases:
        out = subprocess.run([sys.executable, __file__, "--child", str(n), mode], capture_output=True, text=True)
        if out.returncode:
            print(f"{n:>6} {mode:>8} FAILED: {out.stderr.strip().splitlines()[-1] if out.stderr else out.returncode}")
            failed = True
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        exact = r["time_ns"] == expected_ns(n, SIZE)
        ok = "-" if math.isnan(target) else ("yes" if r["wall"] <= target else "NO")
        failed |= not exact or ok == "NO"
        print(
            f"{n:>6} {mode:>8} {r['messages']:>9} {r['time_ns']:>9} {'yes' if exact else 'NO':>5} {r['wall']:>7.2f} "
            f"{r['cpu']:>6.2f} {r['ref']:>6.3f} {r['wall'] / r['ref']:>8.1f} {r['peak']:>8.0f} "
            f"{'' if math.isnan(target) else f'{target:.1f}':>8} {ok:>3}",
            flush=True,
        )
    if "--ranks" not in sys.argv and not vs_astrasim([256], ["aware", "unaware"]):
        failed = True
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
