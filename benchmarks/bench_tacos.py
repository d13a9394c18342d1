"""Benchmark of the collhub-tacos synthesizer (``tacos.synthesize``) and the TACOS comparison.

    python benchmarks/bench_tacos.py            # the cases and the TACOS table (several minutes)
    python benchmarks/bench_tacos.py --quick    # small cases only
    python benchmarks/bench_tacos.py --big      # also the 64x64 torus (4096 ranks; minutes, ~1-3 GB)
    python benchmarks/bench_tacos.py --tacos    # only the TACOS comparison table

Every case runs in its own process (``--case``), so ``peak MB`` is that process's peak RSS.
Columns: ``synth s`` = greedy matching + building the Algorithm (wall; ``cpu s`` its CPU time,
which is what to compare when other processes share the machine), ``greedy s`` = the matching
alone (wall), ``verify s`` = hub.verify
(semantics) on the result, ``makespan``/``bound`` = the synthesizer's own model (µs) and the
lower bound under it, then hub.simulate (congestion-aware; ``-`` where not simulated) time in µs
and bus bandwidth (nccl-tests' busbw, GB/s) of tacos and of the built-in ring, direct,
halving-doubling and double binary tree on the same network and size. On switched networks
``synth s`` includes tacos.synthesize's two aware simulations for its hub.direct fallback, and a
``fallback`` line under the row gives what it returned and both simulated times.

The TACOS table compares with TACOS's own C++ code (astra-sim/tacos 1811f1f) built and run on
this machine (issue #13): same model (a link carries one whole chunk at a time, busy 0.5 µs +
chunk / 50 GiB/s), 1 MiB per NPU.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

# name -> (collective, topology, chunks, model, size or None (= 1 MiB per rank), simulate, seeds)
CASES: dict[str, tuple[str, str, int, str, str | None, bool, int]] = {
    "torus16x16-ag": ("allgather", "torus:16x16", 1, "tacos", None, True, 1),
    "torus32x32-ag": ("allgather", "torus:32x32", 1, "tacos", None, True, 1),
    "torus8x8x8-ag": ("allgather", "torus:8x8x8", 1, "tacos", None, True, 1),
    "fattree32x32-ag": ("allgather", "fattree:32x32", 1, "tacos", None, True, 1),
    "torus16x16-ar-16M": ("allreduce", "torus:16x16", 1, "pipelined", "16MiB", True, 1),
    "torus16x16-ar-64M": ("allreduce", "torus:16x16", 1, "pipelined", "64MiB", True, 1),
    "dgx1-ar-16M": ("allreduce", "dgx1", 4, "pipelined", "16MiB", True, 3),
    "dgx1-ar-256M": ("allreduce", "dgx1", 4, "pipelined", "256MiB", True, 3),
    "torus64x64-ag": ("allgather", "torus:64x64", 1, "tacos", None, False, 1),
}
QUICK = ["torus16x16-ag", "torus16x16-ar-16M", "dgx1-ar-16M", "dgx1-ar-256M"]
DEFAULT = [c for c in CASES if c != "torus64x64-ag"]

# TACOS's results on this machine: topology, chunks, TACOS time µs, bound µs, TACOS synthesis s
TACOS_ROWS: list[tuple[str, str, int, float | None, float, float | None]] = [
    ("2-D torus 32x32", "torus:32x32@bw=50,lat=500", 1, 5168.06, 5128.0, 78.8),
    ("2-D torus 16x16", "torus:16x16@bw=50,lat=500", 1, 1302.03, 1282.0, 1.0),
    ("2-D torus 16x16", "torus:16x16@bw=50,lat=500", 4, 1378.0, 1372.6, 22.0),
    ("2-D torus 32x32", "torus:32x32@bw=50,lat=500", 4, None, 5506.6, None),  # TACOS: > 600 s
    ("2-D torus 8x8", "torus:8x8@bw=50,lat=500", 1, 340.53, 320.5, 0.01),
    ("2-D mesh 8x8", "mesh:8x8@bw=50,lat=500", 4, 678.23, 678.23, 0.13),
    ("3-D torus 4x4x4", "torus:4x4x4@bw=50,lat=500", 4, 231.46, 226.08, 0.07),
]
BASELINES = ("ring", "direct", "halving_doubling", "double_binary_tree")


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _sim(alg: Any, topo: str, size: int | None) -> tuple[float, float | None]:
    from hub.sim import simulate

    r = simulate(alg, topo, size=size if not alg.is_bound else None, mode="aware")
    return r.time_us, getattr(r, "busbw_GBps", None)


def run_case(
    coll: str, topo: str, chunks: int, model: str, size: str | None, sim: bool, seeds: int, verify: bool = True
) -> dict[str, Any]:
    """One case in this process; returns the row as a dict."""
    from collhub_tacos import SynthesizeParams, synthesize
    from hub.sim import parse_size
    from hub.topology import load_topology

    n = load_topology(topo).npus
    nbytes = parse_size(size) if size is not None else n * (1 << 20)
    t0, c0 = time.perf_counter(), time.process_time()
    alg = synthesize(
        SynthesizeParams(
            collective=coll,
            network=topo,
            chunks=chunks,
            model=model,
            size=nbytes,
            seeds=seeds,
            verify=False,
            progress=False,
        )
    )
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = _peak_mb()
    e = dict(alg.meta.extra)
    row: dict[str, Any] = {
        "coll": coll,
        "topo": topo,
        "ranks": n,
        "links": e["tacos.links"],
        "chunks": chunks,
        "model": model,
        "size": nbytes,
        "synth_s": wall,
        "cpu_s": cpu,
        "greedy_s": e["tacos.greedy_s"],
        "peak_mb": peak,
        "makespan": e["model_makespan_us"],
        "bound": e["lower_bound_us"],
        "ratio": e["bound_ratio"],
        "nodes": alg.node_count(),
        # switched networks: what tacos.synthesize returned, and both aware times (ns) it compared
        "fallback": (e.get("tacos.fallback"), e.get("tacos.greedy_aware_ns"), e.get("tacos.direct_aware_ns")),
    }
    if verify:
        from hub.verify import verify as run_verify

        t1 = time.perf_counter()
        rep = run_verify(alg)
        row["verify_s"] = time.perf_counter() - t1
        row["verified"] = rep.ok
    if sim:
        from hub.algorithms import make

        row["sim"] = {}
        t1 = time.perf_counter()
        row["sim"]["tacos"] = _sim(alg, topo, None)
        row["sim_s"] = time.perf_counter() - t1
        del alg
        for name in BASELINES:
            try:
                row["sim"][name] = _sim(make(name, coll, n), topo, nbytes)
            except Exception as exc:  # noqa: BLE001 - a built-in may not support the rank count
                row["sim"][name] = (None, f"{type(exc).__name__}")
    row["peak_mb"] = max(row["peak_mb"], _peak_mb())
    return row


def _subprocess(args: list[str], timeout: int = 1800) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _f(x: float | None, fmt: str = ".2f") -> str:
    return "-" if x is None else format(x, fmt)


def print_cases(names: list[str]) -> int:
    hdr = (
        f"{'case':<19} {'ranks':>5} {'links':>6} {'synth s':>8} {'cpu s':>7} {'greedy s':>8} "
        f"{'verify s':>8} {'peak MB':>8} "
        f"{'makespan':>10} {'bound':>10} {'ratio':>6} | sim µs / busbw GB/s: "
        + "  ".join(f"{n:>16}" for n in ("tacos", *BASELINES))
    )
    print(hdr)
    print("-" * len(hdr))
    failures = 0
    for name in names:
        coll, topo, chunks, model, size, sim, seeds = CASES[name]
        big = name == "torus64x64-ag"
        row = _subprocess(["--case", name] + (["--no-verify"] if big else []))
        if "error" in row:
            print(f"{name:<19} error: {row['error']}")
            failures += 1
            continue
        sims = row.get("sim", {})
        cells = []
        for n in ("tacos", *BASELINES):
            t, bw = sims.get(n, (None, None))
            cells.append(f"{_f(t, '.1f'):>8}/{_f(bw if isinstance(bw, float) else None, '.1f'):<7}")
        print(
            f"{name:<19} {row['ranks']:>5} {row['links']:>6} {row['synth_s']:>8.2f} {row['cpu_s']:>7.2f} "
            f"{row['greedy_s']:>8.2f} "
            f"{_f(row.get('verify_s')):>8} {row['peak_mb']:>8.0f} {row['makespan']:>10.2f} {row['bound']:>10.2f} "
            f"{row['ratio']:>6.3f} | " + "  ".join(cells),
            flush=True,
        )
        used, greedy_ns, direct_ns = row.get("fallback") or (None, None, None)
        if used is not None:  # the greedy's makespan above is its own; `tacos` sim is what it returned
            print(
                f"{'':<19} fallback {used}: greedy {greedy_ns / 1e3:.1f} µs vs hub.direct "
                f"{direct_ns / 1e3:.1f} µs aware"
            )
    return failures


def run_tacos_row(topo: str, chunks: int) -> dict[str, Any]:
    from collhub_tacos import SynthesizeParams, synthesize_schedule

    t0, c0 = time.perf_counter(), time.process_time()
    syn = synthesize_schedule(
        SynthesizeParams(collective="allgather", network=topo, chunks=chunks, model="tacos", seeds=3, progress=False)
    )
    return {
        "makespan": syn.makespan_us,
        "bound": syn.bound_us,
        "wall": time.perf_counter() - t0,
        "cpu": time.process_time() - c0,
        "seed": syn.seed,
        "peak_mb": _peak_mb(),
    }


def print_tacos() -> int:
    print(
        "\nAgainst TACOS (astra-sim/tacos 1811f1f on this machine), all-gather, TACOS's cost model, 1 MiB/NPU, "
        "best of <= 3 seeds (stops at the bound)"
    )
    hdr = (
        f"{'topology':<17} {'chunks':>6} {'TACOS µs':>9} {'ours µs':>9} {'bound µs':>9} {'ours/TACOS':>10} "
        f"{'ours/bound':>10} {'TACOS s':>8} {'ours s':>7} {'cpu s':>6} {'speedup':>8} {'peak MB':>8}"
    )
    print(hdr)
    print("-" * len(hdr))
    failures = 0
    for label, topo, chunks, theirs, _bound, their_s in TACOS_ROWS:
        r = _subprocess(["--tacos-row", topo, str(chunks)])
        if "error" in r:
            print(f"{label:<17} error: {r['error']}")
            failures += 1
            continue
        worse = theirs is not None and r["makespan"] > theirs + 0.005
        failures += worse
        speed = f"{their_s / r['wall']:.1f}x" if their_s else ">" + f"{600 / r['wall']:.0f}x"
        print(
            f"{label:<17} {chunks:>6} {_f(theirs):>9} {r['makespan']:>9.2f} {r['bound']:>9.2f} "
            f"{_f(r['makespan'] / theirs if theirs else None, '.4f'):>10} {r['makespan'] / r['bound']:>10.4f} "
            f"{_f(their_s) if their_s else '>600':>8} {r['wall']:>7.2f} {r['cpu']:>6.2f} {speed:>8} "
            f"{r['peak_mb']:>8.0f}" + ("  WORSE" if worse else ""),
            flush=True,
        )
    return failures


def main(argv: list[str]) -> int:
    if argv[:1] == ["--case"]:
        coll, topo, chunks, model, size, sim, seeds = CASES[argv[1]]
        print(json.dumps(run_case(coll, topo, chunks, model, size, sim, seeds, verify="--no-verify" not in argv)))
        return 0
    if argv[:1] == ["--tacos-row"]:
        print(json.dumps(run_tacos_row(argv[1], int(argv[2]))))
        return 0
    failures = 0
    if "--tacos" not in argv:
        names = QUICK if "--quick" in argv else DEFAULT + (["torus64x64-ag"] if "--big" in argv else [])
        failures += print_cases(names)
    if "--quick" not in argv:
        failures += print_tacos()
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
