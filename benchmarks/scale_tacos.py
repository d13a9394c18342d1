"""The TACOS-style greedy rows of the scale benchmark (issue #32): the compiled scoring against
the numpy path it replaced, measured in the same run, same makespans checked.

    python benchmarks/bench_scale.py               # the scale table, these rows included
    python benchmarks/scale_tacos.py [--big]       # these rows alone; --big: also the 64x64 torus

Rows (all-gather, 1 chunk per NPU, TACOS's link model, 1 MiB per NPU, seed 0):

* the greedy alone (``collhub_tacos._greedy.greedy_allgather``) on a 32x32 torus, compiled and
  numpy (``compiled=False``) in this process: ratio = numpy CPU s / compiled CPU s, the two
  schedules' makespans and transfer counts checked equal;
* ``collhub produce tacos.synthesize`` on the 32x32 torus as a whole process (greedy + the
  Algorithm + writing it, ``verify=false``): target <= 2 s;
* ``--big``: the greedy on the 64x64 torus (4096 NPUs), compiled; the numpy path there takes
  88-135 s (issue #32's figures), so it is timed only with ``--numpy``; target <= 10 s. The ratio
  is against the compiled per-slot scan it replaced (main at bc01dcc, recorded below).

The 32x32 greedy row also gives TACOS's own synthesis time there (78.8 s, its C++ code built and
run on this machine: bench_tacos.py's TACOS table) and the ratio against it.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _rusage import measure  # noqa: E402  (needs the path above)
from scale_sim import Row, _collhub  # noqa: E402

#: the greedy at 4096 NPUs before the packed scan: main's compiled per-slot scan (bc01dcc), CPU s,
#: measured in one session beside this branch's 16.0 s (Dec 7 2026, 2 cores at load ~10)
BEFORE_64_S = 21.4
#: TACOS's own synthesis of the 32x32 torus all-gather on this machine (bench_tacos.TACOS_ROWS)
TACOS_32_S = 78.8


def _greedy(topology: str, compiled: bool) -> tuple[float, float, float, int, float]:
    """(wall s, CPU s, makespan, transfers, peak MiB so far) of one greedy all-gather."""
    import resource

    import numpy as np

    from collhub_tacos import network_of
    from collhub_tacos._greedy import greedy_allgather
    from hub.topology import load_topology

    net = network_of(load_topology(topology))
    busy, delay = net.link_times_us(1 << 20, "tacos")
    w0, c0 = time.perf_counter(), time.process_time()
    sch = greedy_allgather(net, 1, busy, delay, np.random.default_rng(0), None, "scarce", True, compiled)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return wall, cpu, sch.makespan, int(sch.chunk.size), peak


def _pair(topology: str, label: str, numpy_too: bool, target_s: float, before_s: float | None) -> list[Row]:
    cw, cc, cm, ct, peak = _greedy(topology, True)
    if numpy_too:
        nw, nc, nm, nt, _ = _greedy(topology, False)
        assert (cm, ct) == (nm, nt), f"{label}: compiled {cm} us / {ct} transfers, numpy {nm} us / {nt}"
        ref, ratio = f"numpy path {nw:.2f} s wall, {nc:.2f} s CPU (same run, same makespan {nm:g} us)", nc / cc
        if "32x32" in label:
            ref += f"; TACOS {TACOS_32_S:g} s = {TACOS_32_S / cw:.0f}x this wall"
    else:
        ref = f"main's per-slot scan: {before_s:g} s CPU (recorded; ratio = it / this CPU s)"
        ratio = (before_s or cc) / cc
    ok = cw <= target_s
    return [Row(f"tacos greedy {label}, makespan {cm:g} us", cw, cc, peak, f"{ref}; target {target_s:g} s", ratio, ok)]


def rows_tacos(work: Path) -> list[Row]:
    """The 32x32 torus: the greedy both ways, then the whole ``produce`` process."""
    try:
        import collhub_tacos  # noqa: F401
    except ImportError:
        return []
    rows = _pair("torus:32x32", "32x32 torus (1024 NPUs)", True, 2.0, None)
    wall, cpu, mib, _out = measure(
        [
            _collhub(),
            "produce",
            "tacos.synthesize",
            "-s",
            "collective=allgather",
            "-s",
            "network=torus:32x32",
            "-s",
            "verify=false",
            "-s",
            "seeds=1",
            "-s",
            "progress=false",
            "--out",
            str(work / "t32" / "t"),
        ]
    )
    rows.append(
        Row(
            "produce tacos.synthesize 32x32 torus",
            wall,
            cpu,
            mib,
            "target 2 s (whole process)",
            2.0 / wall,
            wall <= 2.0,
        )
    )
    return rows


def rows_tacos_big(numpy_too: bool = False) -> list[Row]:
    """The 64x64 torus (4096 NPUs)."""
    return _pair("torus:64x64", "64x64 torus (4096 NPUs)", numpy_too, 10.0, BEFORE_64_S)


ROWS: list[Callable[[Path], list[Row]]] = [rows_tacos]


def main() -> int:
    import tempfile

    ap = argparse.ArgumentParser()
    ap.add_argument("--big", action="store_true", help="also the 64x64 torus (4096 NPUs)")
    ap.add_argument("--numpy", action="store_true", help="with --big: also time the numpy path there (minutes)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rows = rows_tacos(Path(tmp)) + (rows_tacos_big(args.numpy) if args.big else [])
    for r in rows:
        verdict = "" if r.ok is None else (" (target met)" if r.ok else " (target NOT met)")
        print(f"{r.name:<48}{r.wall:>8.2f}{r.cpu:>8.2f}{r.mib:>8.0f}{r.ratio:>7.1f}x  {r.reference}{verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
