"""Benchmark the ``collhub`` command line as users run it: fresh subprocesses, wall and CPU time.

Run alone: ``python benchmarks/bench_cli.py [--repeat 10] [--ranks 64]``.
Prints best and median wall seconds and best CPU seconds (user + system of that process alone,
``os.wait4``) of ``--repeat`` runs. Targets are checked against the CPU figure: these commands are
single-threaded, so on a quiet machine their wall time is their CPU time, and on a shared one CPU
is the figure that does not depend on the neighbours. Rows:

* ``collhub --help`` (start-up: Typer, the lazy command table, the entry-point index; target 0.15 s),
* ``collhub produce hub.ring --set collective=allreduce --set ranks=2`` (start-up with every
  plugin loaded, the producer, 2 ET files; target 0.30 s wall),
* ``collhub consume hub.stats`` on an 8-rank trace: CPU and wall from the process's start to the
  consumer's first ``open`` of a ``.et`` file (an audit hook), the start-up a consumer pays before
  reading (target 0.2 s),
* ``collhub plugins list``, ``collhub plugins validate plugins/astrasim``, and ``collhub produce``
  of ``--ranks`` ranks end to end,

plus the import time of the ``--help`` path measured inside one interpreter. Every row runs once
before it is timed, as a user's second command would: the bytecode caches and collhub's cache
directory (entry-point index, command list) are warm; ``PYTHONDONTWRITEBYTECODE`` is cleared for
the children, since an installed package has its ``.pyc`` files.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HELP_TARGET_S = 0.15  # issue #19 asks < 0.3 s; the start-up work aims at half
PRODUCE_2_TARGET_S = 0.30  # issue #19: < 0.5 s for produce of a 2-rank algorithm, whole process
CONSUMER_START_TARGET_S = 0.2  # process start to the consumer's first file read
#: runs ``collhub ARGS`` (as the console script does) and reports CPU/wall at the first .et open
_FIRST_OPEN = """
import os, sys, time
t0 = float(os.environ["BENCH_T0"])
seen = []
def hook(event, args):
    if event == "open" and not seen and str(args[0]).endswith(".et"):
        seen.append(1)
        sys.stderr.write(f"FIRST-OPEN {time.process_time():.6f} {time.time() - t0:.6f}\\n")
sys.addaudithook(hook)
sys.argv = ["collhub", *sys.argv[1:]]
import runpy
runpy.run_module("hub.cli", run_name="__main__")
"""


def _run(cmd: list[str], env: dict[str, str]) -> tuple[float, float, int, str]:
    """Wall s, CPU s (that child alone), exit code and stderr of one run."""
    env = {**env, "BENCH_T0": repr(time.time())}
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=REPO)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    _, status, usage = os.wait4(proc.pid, 0)
    return time.perf_counter() - t0, usage.ru_utime + usage.ru_stime, os.waitstatus_to_exitcode(status), err


def _time(cmd: list[str], repeat: int, env: dict[str, str], ok: tuple[int, ...] = (0,)) -> dict[str, list[float]]:
    """Samples of ``repeat`` runs after one warm-up: wall, cpu, and first-open cpu/wall when reported."""
    samples: dict[str, list[float]] = {"wall": [], "cpu": [], "first_cpu": [], "first_wall": [], "rc": []}
    _run(cmd, env)
    for _ in range(repeat):
        wall, cpu, rc, err = _run(cmd, env)
        samples["wall"].append(wall)
        samples["cpu"].append(cpu)
        samples["rc"].append(rc)
        first = next((line.split() for line in err.splitlines() if line.startswith("FIRST-OPEN ")), None)
        if first:
            samples["first_cpu"].append(float(first[1]))
            samples["first_wall"].append(float(first[2]))
        if rc not in ok:
            sys.stderr.write(err[-2000:])
            break
    return samples


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10, help="runs per row (default 10)")
    parser.add_argument("--ranks", type=int, default=64, help="ranks for the produce row (default 64)")
    args = parser.parse_args(argv)

    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    collhub = [sys.executable, "-m", "hub.cli"]
    rows: list[tuple[str, float, float, float, str]] = []
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as tmp:
        env["COLLHUB_CACHE_DIR"] = str(Path(tmp) / "cache")
        base = _time([sys.executable, "-c", "pass"], args.repeat, env)
        wall = base["wall"]
        rows.append(("python -c pass (baseline)", min(wall), statistics.median(wall), min(base["cpu"]), ""))
        trace = Path(tmp) / "t8" / "ring"
        subprocess.run(
            [*collhub, "produce", "hub.ring", "-s", "collective=allreduce", "-s", "ranks=8", "--out", str(trace)],
            check=True,
            capture_output=True,
            env=env,
            cwd=REPO,
        )
        produce = [*collhub, "produce", "hub.ring", "--set", "collective=allreduce", "--out"]
        cases = [
            ("collhub --help", [*collhub, "--help"], HELP_TARGET_S),
            (
                "collhub produce hub.ring allreduce ranks=2",
                [*produce, str(Path(tmp) / "out2" / "r"), "--set", "ranks=2"],
                PRODUCE_2_TARGET_S,
            ),
            (
                "collhub consume hub.stats 8 ranks",
                [sys.executable, "-c", _FIRST_OPEN, "consume", "hub.stats", str(trace)],
                None,
            ),
            ("collhub plugins list", [*collhub, "plugins", "list"], None),
            ("collhub plugins validate plugins/astrasim", [*collhub, "plugins", "validate", "plugins/astrasim"], None),
            (
                f"collhub produce hub.ring allreduce ranks={args.ranks}",
                [*produce, str(Path(tmp) / "out" / "ring"), "--set", f"ranks={args.ranks}"],
                None,
            ),
        ]
        for label, cmd, target in cases:
            # validate exits 3 on the first-party plugins until their pyproject lines land
            s = _time(cmd, args.repeat, env, ok=(0, 3) if "validate" in label else (0,))
            note = "" if s["rc"][-1] == 0 else f"exit {s['rc'][-1]}"
            cpu = min(s["cpu"])
            if target is not None:  # judged on CPU: on a quiet machine these single-threaded runs' wall is their CPU
                note = f"target {target} s: {'ok' if cpu <= target else 'MISSED'}"
            rows.append((label, min(s["wall"]), statistics.median(s["wall"]), cpu, note))
            if s["first_cpu"]:
                first = min(s["first_cpu"])
                rows.append(
                    (
                        "  start-up: process start to first .et open",
                        min(s["first_wall"]),
                        statistics.median(s["first_wall"]),
                        first,
                        f"target {CONSUMER_START_TARGET_S} s: {'ok' if first <= CONSUMER_START_TARGET_S else 'MISSED'}",
                    )
                )
        probe = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", "import hub.cli._app"],
            capture_output=True,
            text=True,
            env=env,
            cwd=REPO,
        )
        total_us = 0
        for line in probe.stderr.splitlines():
            parts = line.split("|")
            if len(parts) == 3 and parts[2].strip() == "hub.cli._app":
                total_us = int(parts[1])
        rows.append(("import hub.cli._app (cumulative)", total_us / 1e6, total_us / 1e6, float("nan"), "-X importtime"))

    width = max(len(r[0]) for r in rows)
    print(f"{'command':{width}}  {'best s':>8}  {'median s':>8}  {'CPU s':>7}  note")
    print(f"{'-' * width}  {'-' * 8}  {'-' * 8}  {'-' * 7}  ----")
    for label, best, median, cpu, note in rows:
        print(f"{label:{width}}  {best:8.3f}  {median:8.3f}  {cpu:7.3f}  {note}")
    print(
        f"\n{args.repeat} runs per row after one warm-up; wall best/median, CPU best; python "
        f"{sys.version.split()[0]}; {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
