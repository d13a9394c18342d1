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
import logging
import os
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
    print(
        f"{'rows':>6} {'jobs':>4} {'wall':>8} {'ms/row':>7} {'overhead ms/row':>15} {'peak RSS':>9} "
        f"{'results.json':>12}"
    )
    for rows in sizes:
        for jobs in (1, 2):
            proc = subprocess.run(
                [sys.executable, __file__, "--child", str(rows), str(jobs)], capture_output=True, text=True, check=True
            )
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            over = (r["wall"] - r["units"] / jobs) / rows * 1e3
            print(
                f"{rows:>6} {jobs:>4} {r['wall']:>7.1f}s {r['wall'] / rows * 1e3:>7.2f} {over:>15.2f} "
                f"{r['rss_kib'] / 1024:>7.0f}MB {r['json'] / 1e6:>10.1f}MB"
            )


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
    rows.extend(dask_rows())
    w = max(len(r[0]) for r in rows)
    print(f"{'case'.ljust(w)}  {'time':>9}  per unit")
    for name, total, per in rows:
        print(f"{name.ljust(w)}  {total:>9}  {per}")


# --------------------------------------------------------------------------- Dask executor rows
DASK_ROWS = int(os.environ.get("BENCH_DASK_ROWS", "1000"))  # 10000 for the full sweep

SCALING = """\
version: 1
matrix:
  size: [{sizes}]
sources:
  ring: {{producer: hub.ring, params: {{collective: allreduce, ranks: 128}}}}
consumers:
  sim: {{use: hub.simulate, params: {{network: "ring:128", size: "${{size}}", mode: aware}}}}
"""


def _dask_run(text: str, out: Path, address: str | None, jobs: int) -> float:
    from hub.pipeline import execute

    vp = validate_text(text)
    executor = "dask" if address else "local"
    return _time(lambda: execute(vp, out, jobs=jobs, executor=executor, scheduler=address, plot=False, force=True))


def dask_rows() -> list[tuple[str, str, str]]:
    """Dask overhead per row (cheap units, warm 2-worker LocalCluster vs local jobs=2) and the
    speed-up from 1 to 2 workers on units of ~1 s. Cluster start-up is timed on its own row."""
    try:
        from distributed import LocalCluster
    except ImportError:
        return [("dask rows skipped", "-", "pip install 'collhub[dask]'")]
    rows = []
    sweep = SWEEP.format(sizes=", ".join(str(1024 * (i + 1)) for i in range(max(1, DASK_ROWS // 8))))
    n = 8 * max(1, DASK_ROWS // 8)  # 2 sources x 4 networks per size
    units = 8
    scaling = SCALING.format(sizes=", ".join(f"{i + 1}MiB" for i in range(units)))
    with tempfile.TemporaryDirectory() as d:
        t_local = _dask_run(sweep, Path(d) / "local", None, 2)
        rows.append((f"sweep {n} rows, local jobs=2", f"{t_local:.2f} s", f"{t_local / n * 1e3:.2f} ms/row"))
        scale = {}
        for workers in (2, 1):
            t0 = time.perf_counter()
            with LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
                silence_logs=logging.CRITICAL,
            ) as cluster:
                address = cluster.scheduler_address
                t_start = time.perf_counter() - t0
                _dask_run(SCALING.format(sizes="1KiB, 2KiB"), Path(d) / "warm", address, workers)  # load plugins
                if workers == 2:
                    rows.append(("dask: start a 2-worker LocalCluster", f"{t_start:.2f} s", "once per run"))
                    t = _dask_run(sweep, Path(d) / "dask", address, workers)
                    rows.append(
                        (
                            f"sweep {n} rows, dask 2 workers (warm)",
                            f"{t:.2f} s",
                            f"{t / n * 1e3:.2f} ms/row, overhead {(t - t_local) / n * 1e3:+.2f} ms/row "
                            f"({t / t_local:.2f}x local)",
                        )
                    )
                scale[workers] = _dask_run(scaling, Path(d) / f"scale{workers}", address, workers)
        rows.append((f"{units} units of ~1 s, dask 1 worker", f"{scale[1]:.2f} s", f"{scale[1] / units:.2f} s/unit"))
        rows.append(
            (
                f"{units} units of ~1 s, dask 2 workers",
                f"{scale[2]:.2f} s",
                f"speed-up {scale[1] / scale[2]:.2f}x (ideal 2x on 2 free cores)",
            )
        )
    return rows


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        _sweep_child(int(sys.argv[2]), int(sys.argv[3]))
    else:
        main()
        print()
        rows = [int(a) for a in sys.argv[2:]] if sys.argv[1:2] == ["--rows"] else [1000, 10000]
        sweep_table(rows)
