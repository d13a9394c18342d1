"""Pipeline overheads: validation of a large sweep, and runs of the demo, serial vs parallel.

Run alone: ``python benchmarks/bench_pipeline.py``. Prints a table.
"""

from __future__ import annotations

import logging
import os
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
            t = _time(lambda: run_pipeline(DEMO, Path(d) / f"j{jobs}", jobs=jobs))
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
            with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                              silence_logs=logging.CRITICAL) as cluster:
                address = cluster.scheduler_address
                t_start = time.perf_counter() - t0
                _dask_run(SCALING.format(sizes="1KiB, 2KiB"), Path(d) / "warm", address, workers)  # load plugins
                if workers == 2:
                    rows.append(("dask: start a 2-worker LocalCluster", f"{t_start:.2f} s", "once per run"))
                    t = _dask_run(sweep, Path(d) / "dask", address, workers)
                    rows.append((f"sweep {n} rows, dask 2 workers (warm)", f"{t:.2f} s",
                                 f"{t / n * 1e3:.2f} ms/row, overhead {(t - t_local) / n * 1e3:+.2f} ms/row "
                                 f"({t / t_local:.2f}x local)"))
                scale[workers] = _dask_run(scaling, Path(d) / f"scale{workers}", address, workers)
        rows.append((f"{units} units of ~1 s, dask 1 worker", f"{scale[1]:.2f} s", f"{scale[1] / units:.2f} s/unit"))
        rows.append((f"{units} units of ~1 s, dask 2 workers", f"{scale[2]:.2f} s",
                     f"speed-up {scale[1] / scale[2]:.2f}x (ideal 2x on 2 free cores)"))
    return rows


if __name__ == "__main__":
    main()
