"""Pipeline overheads: validation of a large sweep, runs of the demo, and a 10,000-row sweep.

Run alone: ``python benchmarks/bench_pipeline.py [--rows N ...]``. Prints two tables.

The sweep table runs ``hub.simulate`` on a 4-rank ring (about 1-2 ms a row) at N sizes, each
size in a fresh process so that its peak RSS is its own: ``wall`` is the whole ``run_pipeline``
(validation, plan, units, results files, no plot), ``ms/row`` is wall / rows and ``overhead``
is what the runner adds per row: (wall - the rows' own wall_s / jobs) / rows. Flat memory
shows as the same peak RSS at 1,000 and 10,000 rows.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hub.pipeline import run_pipeline, validate_text

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "examples" / "compare-allreduce.yaml"

SWEEP = """\
version: 1
matrix:
  size: [{sizes}]
  network: ["ring:8", "switch:8", "torus:2x4", "ring:2,switch:4"]
sources:
  ring: {{producer: hub.ring, params: {{collective: allreduce, ranks: 8}}}}
  direct: {{producer: hub.direct, params: {{collective: allreduce, ranks: 8}}}}
consumers:
  sim: {{use: hub.simulate, params: {{network: "${{network}}", size: "${{size}}"}}}}
"""


CHEAP = """\
version: 1
matrix:
  size: [{sizes}]
sources:
  ring: {{producer: hub.ring, params: {{collective: allreduce, ranks: 4}}}}
consumers:
  sim: {{use: hub.simulate, params: {{network: "ring:4", size: "${{size}}"}}}}
"""


def _sweep_child(rows: int, jobs: int) -> None:
    """One sweep in this process; prints a JSON line of its figures."""
    text = CHEAP.format(sizes=", ".join(str(1024 + i) for i in range(rows)))
    with tempfile.TemporaryDirectory() as d:
        t = time.perf_counter()
        run = run_pipeline(_write(Path(d), text), Path(d) / "run", jobs=jobs, plot=False)
        wall = time.perf_counter() - t
        units = sum(r["wall_s"] for r in run.iter_rows())
        size = (run.run_dir / "results.json").stat().st_size
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss + resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(json.dumps({"rows": rows, "jobs": jobs, "wall": wall, "units": units, "rss_kib": rss, "json": size}))


def _write(d: Path, text: str) -> Path:
    f = d / "sweep.yaml"
    f.write_text(text)
    return f


def sweep_table(sizes: list[int]) -> None:
    print(f"{'rows':>6} {'jobs':>4} {'wall':>8} {'ms/row':>7} {'overhead ms/row':>15} {'peak RSS':>9} "
          f"{'results.json':>12}")
    for rows in sizes:
        for jobs in (1, 2):
            proc = subprocess.run([sys.executable, __file__, "--child", str(rows), str(jobs)], capture_output=True,
                                  text=True, check=True)
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            over = (r["wall"] - r["units"] / jobs) / rows * 1e3
            print(f"{rows:>6} {jobs:>4} {r['wall']:>7.1f}s {r['wall'] / rows * 1e3:>7.2f} {over:>15.2f} "
                  f"{r['rss_kib'] / 1024:>7.0f}MB {r['json'] / 1e6:>10.1f}MB")


def _time(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main() -> None:
    rows = []
    text = SWEEP.format(sizes=", ".join(str(1024 * (i + 1)) for i in range(250)))
    validate_text(text)  # warm the plugin manager
    t = _time(lambda: validate_text(text))
    rows.append(("validate 2 sources x 1000 points", f"{t * 1e3:.0f} ms", f"{t / 2000 * 1e6:.1f} us/step-point"))
    with tempfile.TemporaryDirectory() as d:
        for jobs in (1, 2):
            t = _time(lambda jobs=jobs: run_pipeline(DEMO, Path(d) / f"j{jobs}", jobs=jobs))
            rows.append((f"run compare-allreduce (36 rows), jobs={jobs}", f"{t:.2f} s", f"{t / 36 * 1e3:.1f} ms/row"))
    w = max(len(r[0]) for r in rows)
    print(f"{'case'.ljust(w)}  {'time':>9}  per unit")
    for name, total, per in rows:
        print(f"{name.ljust(w)}  {total:>9}  {per}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        _sweep_child(int(sys.argv[2]), int(sys.argv[3]))
    else:
        main()
        print()
        rows = [int(a) for a in sys.argv[2:]] if sys.argv[1:2] == ["--rows"] else [1000, 10000]
        sweep_table(rows)
