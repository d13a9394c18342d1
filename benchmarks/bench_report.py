"""`collhub report` on large sweeps: the answer (winners, crossovers, segments) and the files.

    python benchmarks/bench_report.py

Documents of 1,000 to 100,000 rows (8 sources x 2^k sizes x networks, the row layout of
`collhub run`) are written as results.json; the reference is reading that file back
(`load_document`), which any report must do. Columns: rows, read (ms), answer (ms), answer /
read, report.json + report.md written (ms), report.png drawn (ms, 10,000 rows only), peak
memory of the answer (MiB, tracemalloc). Timings on a shared machine are noisy.
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hub._units import format_size  # noqa: E402
from hub.results import (  # noqa: E402
    answer,
    load_document,  # noqa: E402
    write_report,
)
from hub.results._report_plot import render_plot  # noqa: E402


def _document(rows: int) -> dict:
    rng = random.Random(7)
    sources = [f"alg{i}" for i in range(8)]
    sizes = [format_size(1 << k) for k in range(10, 35)]  # 1KiB .. 16GiB: 25 sizes
    networks = max(1, rows // (len(sources) * len(sizes)))
    out = []
    for n in range(networks):
        for s_i, src in enumerate(sources):
            for k, size in enumerate(sizes):
                # latency + size/bandwidth per source, so winners change with size
                t = (1 + s_i) * 2.0 + (1 << (k + 10)) / (1e3 * (8 - s_i)) * (1 + rng.random() * 0.01)
                out.append(
                    {
                        "source": src,
                        "consumer": "sim",
                        "component": "hub.simulate",
                        "point": {"size": size, "network": f"net{n}"},
                        "status": "ok",
                        "algorithm": {"dir": f"algorithms/{src}-0"},
                        "metrics": {
                            "time_us": t,
                            "busbw_GBps": (1 << (k + 10)) / t / 1e3,
                            "collective": "allreduce",
                            "ranks": 8,
                        },
                    }
                )
    return {
        "format": "collhub-run/1",
        "pipeline": {"name": "bench"},
        "variables": ["size", "network"],
        "rows": out[:rows],
    }


def main() -> int:
    print(f"{'rows':>8} {'read ms':>9} {'answer ms':>10} {'ratio':>6} {'files ms':>9} {'png ms':>8} {'peak MiB':>9}")
    for rows in (1_000, 10_000, 100_000):
        with tempfile.TemporaryDirectory() as d:
            run = Path(d)
            (run / "results.json").write_text(json.dumps(_document(rows)))
            t0 = time.perf_counter()
            doc, _ = load_document(run)
            t1 = time.perf_counter()
            tracemalloc.start()
            ans = answer(doc)
            t2 = time.perf_counter()
            peak = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
            t3 = time.perf_counter()
            write_report(run, plot=False)
            t4 = time.perf_counter()
            png = ""
            if rows == 10_000:
                t5 = time.perf_counter()
                render_plot(ans, run / "report.png")
                png = f"{(time.perf_counter() - t5) * 1e3:.0f}"
            read, ansms = (t1 - t0) * 1e3, (t2 - t1) * 1e3
            print(
                f"{rows:>8} {read:>9.1f} {ansms:>10.1f} {ansms / read:>6.2f} {(t4 - t3) * 1e3:>9.1f} {png:>8} "
                f"{peak:>9.1f}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
