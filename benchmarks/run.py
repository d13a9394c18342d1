"""Run every benchmark (benchmarks/bench_*.py) one after another and print their tables.

    python benchmarks/run.py            # all
    python benchmarks/run.py sim chakra # only bench_sim.py and bench_chakra.py

Each benchmark is a separate process, so one's memory and imports do not skew another's.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    scripts = sorted(HERE.glob("bench_*.py"))
    if argv:
        wanted = set(argv)
        scripts = [s for s in scripts if s.stem.removeprefix("bench_") in wanted]
    failures = 0
    for script in scripts:
        print(f"\n## {script.stem.removeprefix('bench_')}  ({script.name})\n", flush=True)
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, str(script)], cwd=HERE.parent)
        print(f"\n({time.perf_counter() - t0:.1f} s, exit {proc.returncode})", flush=True)
        failures += proc.returncode != 0
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
