"""Benchmark of the collhub-mscclang plugin (MSCCL-IR import/export); prints a table.

Run alone: python benchmarks/bench_mscclang.py
1. import + write Chakra ET of the corpus' 64-rank ring all-reduce (8128 steps): target <= 0.2 s
2. a 256-rank fused ring all-reduce (~130k steps, ~16 MB XML): import, export: target <= 2 s
3. whole-process `collhub produce mscclang.ir` on an unfused (s/r/rrc) 128-rank ring all-reduce
   exported from hub.ring: the reference converter took 4.7 s and wrote ~1 GB (chakra-et.md §6);
   target >= 10x faster, >= 20x smaller. The process is run 16 times (the first also writes the
   bytecode caches a user's installation has); the least CPU of the other 15 is the figure, with
   their median (single runs vary by +-20 % on a shared machine), its wall time and peak RSS
   (``os.wait4``: that process alone). The machine may be shared: compare CPU seconds.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "data" / "msccl-ir"
REF_SECONDS, REF_BYTES = 4.7, 1_000_000_000


def best(fn, repeat: int = 3) -> float:
    """Best wall time of ``repeat`` runs (the machine may be shared: best-of filters noise)."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def cpu(fn) -> float:
    t = time.process_time()
    fn()
    return time.process_time() - t


# A small launcher times the child: a forked child starts with its parent's peak RSS, and this
# benchmark's own process holds a few hundred MiB by then.
_LAUNCH = (
    "import os, subprocess, sys, time\n"
    "t = time.perf_counter()\n"
    "p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
    "_, status, u = os.wait4(p.pid, 0)\n"
    "print(time.perf_counter() - t, u.ru_utime + u.ru_stime, u.ru_maxrss / 1024, os.waitstatus_to_exitcode(status))\n"
)


def process(cmd: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """(wall s, CPU s, peak MiB) of one whole process; its stderr is the error on failure."""
    ran = subprocess.run([sys.executable, "-S", "-c", _LAUNCH, *cmd], capture_output=True, text=True, env=env)
    wall, cpu_s, mib, code = ran.stdout.split()
    if ran.returncode or int(code):
        raise SystemExit(ran.stderr)
    return float(wall), float(cpu_s), float(mib)


def best_process(cmd: list[str], repeat: int = 3) -> tuple[float, float, float, float]:
    """The run with the least CPU of ``repeat``, after one that writes the bytecode caches, and
    the median CPU of the ``repeat`` runs: (wall s, CPU s, peak MiB, median CPU s)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    process(cmd, env)
    runs = [process(cmd, env) for _ in range(repeat)]
    return (*min(runs, key=lambda r: r[1]), statistics.median(r[1] for r in runs))


def main() -> None:
    from collhub_mscclang import read_msccl_ir, write_msccl_ir
    from hub.algorithms import RingParams, produce_ring
    from hub.chakra import write_algorithm

    rows: list[tuple[str, str, str, str]] = []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        f64 = CORPUS / "mscclang_allreduce_ring_n64_ch1_i1_LL128.xml"
        read_msccl_ir(f64)
        t_imp = best(lambda: read_msccl_ir(f64))
        t_all = best(lambda: write_algorithm(read_msccl_ir(f64), tmp / "r64"))
        rows.append(("64-rank ring: import", f"{t_imp:.3f} s", "", "8128 steps"))
        c_all = cpu(lambda: write_algorithm(read_msccl_ir(f64), tmp / "r64"))
        rows.append(
            (
                "64-rank ring: import + write ET",
                f"{t_all:.3f} s",
                "<= 0.2 s",
                ("ok" if t_all <= 0.2 else "MISSED") + f" (cpu {c_all:.3f} s)",
            )
        )

        ring256 = produce_ring(RingParams(collective="allreduce", ranks=256))
        x256 = tmp / "ring256.xml"
        t_exp = best(lambda: write_msccl_ir(ring256, x256, enforce_limits=False), 1)
        st = write_msccl_ir(ring256, x256, enforce_limits=False)
        t_imp256 = best(lambda: read_msccl_ir(x256), 2)
        rows.append(("256-rank fused ring: export", f"{t_exp:.2f} s", "", f"{st.steps} steps, {st.bytes / 1e6:.1f} MB"))
        rows.append(
            (
                "256-rank fused ring: import",
                f"{t_imp256:.2f} s",
                "<= 2 s",
                ("ok" if t_imp256 <= 2 else "MISSED") + f" (cpu {cpu(lambda: read_msccl_ir(x256)):.2f} s)",
            )
        )
        t_et = best(lambda: write_algorithm(read_msccl_ir(x256), tmp / "r256"), 1)
        rows.append(("256-rank fused ring: import + write ET", f"{t_et:.2f} s", "", ""))
        t_rt = t_exp + t_imp256
        rows.append(("256-rank fused ring: export + import", f"{t_rt:.2f} s", "", ""))

        ring128 = produce_ring(RingParams(collective="allreduce", ranks=128))
        x128 = tmp / "ring128_unfused.xml"
        st128 = write_msccl_ir(ring128, x128, fuse=False, enforce_limits=False)
        prefix = tmp / "out" / "ring128"
        floor = best_process([sys.executable, "-m", "hub.cli", "--help"])
        cmd = [sys.executable, "-m", "hub.cli", "produce", "mscclang.ir", "--set", f"path={x128}", "--out", str(prefix)]
        w_cli, t_cli, mib_cli, med_cli = best_process(cmd, 15)
        w_nv, t_nv, mib_nv, _ = best_process([*cmd, "--set", "verify=false"])  # the import's own share
        size = sum(p.stat().st_size for p in prefix.parent.glob("ring128.*"))
        rows.append(
            ("128-rank unfused ring XML", f"{x128.stat().st_size / 1e6:.1f} MB", "", f"{st128.steps} steps (s/r/rrc)")
        )
        rows.append(
            (
                "collhub produce mscclang.ir (process, CPU)",
                f"{t_cli:.2f} s",
                f"<= {REF_SECONDS / 10:.2f} s",
                f"{REF_SECONDS / t_cli:.1f}x faster than 4.7 s (median of 15 {med_cli:.2f} s: "
                f"{REF_SECONDS / med_cli:.1f}x; wall {w_cli:.2f} s, peak {mib_cli:.0f} MiB)",
            )
        )
        rows.append(
            (
                "  (the same, --set verify=false)",
                f"{t_nv:.2f} s",
                "",
                f"{REF_SECONDS / t_nv:.1f}x (wall {w_nv:.2f} s, peak {mib_nv:.0f} MiB)",
            )
        )
        rows.append(
            (
                "  (floor: python -m hub.cli --help)",
                f"{floor[1]:.2f} s",
                "",
                f"wall {floor[0]:.2f} s, peak {floor[2]:.0f} MiB",
            )
        )
        rows.append(
            (
                "  ET output size",
                f"{size / 1e6:.2f} MB",
                f"<= {REF_BYTES / 20 / 1e6:.0f} MB",
                f"{REF_BYTES / size:.0f}x smaller than ~1 GB",
            )
        )
    w = [max(len(r[i]) for r in rows + [("case", "measured", "target", "note")]) for i in range(4)]
    line = lambda r: "  ".join(c.ljust(w[i]) for i, c in enumerate(r))  # noqa: E731
    print(line(("case", "measured", "target", "note")))
    print("  ".join("-" * x for x in w))
    for r in rows:
        print(line(r))


if __name__ == "__main__":
    main()
