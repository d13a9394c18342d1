"""Pipeline overheads: validation of a large sweep, and runs of the demo, serial vs parallel.

Run alone: ``python benchmarks/bench_pipeline.py``. Prints a table.
"""

from __future__ import annotations

import tempfile
import time
from functools import partial
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
            t = _time(partial(run_pipeline, DEMO, Path(d) / f"j{jobs}", jobs=jobs))
            rows.append((f"run compare-allreduce (36 rows), jobs={jobs}", f"{t:.2f} s", f"{t / 36 * 1e3:.1f} ms/row"))
    w = max(len(r[0]) for r in rows)
    print(f"{'case'.ljust(w)}  {'time':>9}  per unit")
    for name, total, per in rows:
        print(f"{name.ljust(w)}  {total:>9}  {per}")


if __name__ == "__main__":
    main()
