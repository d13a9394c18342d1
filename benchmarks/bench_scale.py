"""Scale: the 1024-rank ring all-reduce end to end, as a user runs it (whole processes, files on disk).

Run alone: ``python benchmarks/bench_scale.py [--ranks 1024] [--big]`` (``--big``: also the
4096/8192-rank rows of ``scale_big.py``; minutes and several GiB, never run by CI). Prints one table: step, wall
time, CPU time, peak memory (max RSS of the process that ran the step) and the ratio against
the step's reference. Whole-process rows run ``collhub`` (or ``python -c``) as a subprocess;
the node-rate rows run in this process against MLCommons' ``encodeMessage``/``decodeMessage``
loop, measured in the same run (see bench_chakra.py). On a shared machine wall times are noisy;
CPU time is the steadier figure.

The table is a list of row functions (``ROWS``): each takes the shared :class:`Scale` state and
returns rows; add a step by appending a function.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import scale_sim  # noqa: E402  (hub.simulate rows; needs the path above)
import scale_tacos  # noqa: E402  (the TACOS-style greedy rows)
import scale_workload  # noqa: E402  (the workload trace rows)
from _rusage import measure  # noqa: E402

#: recorded figures of the code before this benchmark existed (issue #19, same machine kind)
PRODUCE_1024_BEFORE_S = 8.9
READ_BEFORE_NODES_PER_S = 1.1e6


@dataclass
class Row:
    step: str
    wall_s: float | None
    cpu_s: float | None
    peak_mib: float | None
    ratio: float | None
    reference: str


@dataclass
class Scale:
    """What the rows share: the rank count, a work directory and what earlier rows produced."""

    ranks: int
    workdir: Path
    collhub: Path
    facts: dict[str, float] = field(default_factory=dict)
    big_ring: int = 4096
    big_hier: int = 8192
    big_tacos: str = "torus:64x64"
    big_only: list[str] = field(default_factory=list)
    big_level: str = "semantics"
    big_local: int = 8


def row_produce(s: Scale) -> list[Row]:
    """``collhub produce hub.ring`` for the whole ring: build the algorithm, write every rank file."""
    prefix = s.workdir / "produce" / "ring"
    wall, cpu, peak, _out = measure(
        [
            str(s.collhub),
            "produce",
            "hub.ring",
            "-s",
            f"ranks={s.ranks}",
            "-s",
            "collective=allreduce",
            "--out",
            str(prefix),
        ]
    )
    s.facts["nodes"] = float(_node_count(prefix))
    ratio = PRODUCE_1024_BEFORE_S / wall if s.ranks == 1024 else None
    return [
        Row(
            f"produce + write, {s.ranks} ranks ({int(s.facts['nodes']):,} nodes)",
            wall,
            cpu,
            peak,
            ratio,
            f"before: {PRODUCE_1024_BEFORE_S} s (recorded)",
        )
    ]


def _node_count(prefix: Path) -> int:
    from hub.chakra import read_algorithm

    return read_algorithm(prefix).node_count()


def row_read(s: Scale) -> list[Row]:
    """Read the produced set back into RankGraphs in a fresh process (imports included)."""
    prefix = s.workdir / "produce" / "ring"
    code = f"from hub.chakra import read_algorithm; read_algorithm({str(prefix)!r})"
    wall, cpu, peak, _out = measure([sys.executable, "-c", code])
    s.facts["read_peak_mib"] = peak
    nodes = s.facts["nodes"]
    before = nodes / READ_BEFORE_NODES_PER_S
    return [
        Row(
            f"read -> RankGraphs, {s.ranks} ranks",
            wall,
            cpu,
            peak,
            before / wall,
            f"before: {READ_BEFORE_NODES_PER_S / 1e6:.1f}M nodes/s = {before:.1f} s (recorded)",
        )
    ]


def row_stream(s: Scale) -> list[Row]:
    """Stream the same set rank by rank (``iter_ranks``: count its nodes and messages) in a fresh
    process: the peak memory of a consumer that does not hold every graph."""
    prefix = s.workdir / "produce" / "ring"
    code = (
        "from hub.chakra import NodeType, iter_ranks\n"
        f"n = m = 0\nfor g in iter_ranks({str(prefix)!r}):\n"
        "    n += len(g); m += int((g.kind == NodeType.SEND).sum())\nprint(n, m)"
    )
    wall, cpu, peak, out = measure([sys.executable, "-c", code])
    nodes = int(out.split()[0])
    assert nodes == int(s.facts["nodes"]), out
    return [
        Row(
            f"stream (iter_ranks) {s.ranks} ranks",
            wall,
            cpu,
            peak,
            s.facts.get("read_peak_mib", peak) / peak,
            "peak vs read_algorithm's (the row above)",
        )
    ]


def row_rates(s: Scale) -> list[Row]:
    """In-process node rates of the codec against MLCommons' own loop, measured in this run."""
    import numpy as np  # noqa: F401  (bench_chakra needs it)
    from bench_chakra import _mlc_rates, _timed, ring_allreduce

    from hub.chakra import read_algorithm, write_algorithm

    alg = ring_allreduce(s.ranks)
    nodes = alg.node_count()
    d = s.workdir / "rates"
    d.mkdir()
    _p, ww, wc = _timed(lambda: write_algorithm(alg, d / "ring"))
    _a, rw, rc = _timed(lambda: read_algorithm(d / "ring"))
    mlc = _mlc_rates(alg, list(range(min(8, s.ranks))), d)
    rows = []
    for what, wall, cpu, key in (("write", ww, wc, "write"), ("read", rw, rc, "read")):
        rate = nodes / wall
        ratio = rate / mlc[f"{key}_wall"] if mlc else None
        ref = (
            f"mlc-chakra {mlc[f'{key}_wall'] / 1e6:.2f}M nodes/s (same run; by CPU time "
            f"{nodes / cpu / mlc[f'{key}_cpu']:.1f}x)"
            if mlc
            else "mlc-chakra not installed"
        )
        rows.append(
            Row(f"{what} rate: {rate / 1e6:.1f}M nodes/s (CPU {nodes / cpu / 1e6:.1f}M)", wall, cpu, None, ratio, ref)
        )
    return rows


def _sim_rows(fn: Callable[[Path], list[Any]]) -> Callable[[Scale], list[Row]]:
    """A row function of ``scale_sim`` (hub.simulate at scale) in this table's shape."""

    def rows(s: Scale) -> list[Row]:
        work = s.workdir / fn.__name__
        work.mkdir()
        out = []
        for r in fn(work):
            verdict = "" if r.ok is None else (" (target met)" if r.ok else " (target NOT met)")
            out.append(Row(r.name, r.wall, r.cpu, r.mib, r.ratio, f"{r.reference}{verdict} {r.note}".strip()))
        return out

    rows.__name__ = fn.__name__
    return rows


ROWS: list[Callable[[Scale], list[Row]]] = [
    row_produce,
    row_read,
    row_stream,
    row_rates,
    *(_sim_rows(fn) for fn in scale_sim.ROWS),
    *(_sim_rows(fn) for fn in scale_workload.ROWS),
    *(_sim_rows(fn) for fn in scale_tacos.ROWS),
]


def row_big(s: Scale) -> list[Row]:
    """``--big``: the 4096-rank ring, 8192-rank hierarchical and 4096-NPU TACOS rows (scale_big.py)."""
    import scale_big

    big = scale_big.Big(s.big_ring, s.big_hier, s.big_tacos, s.workdir, s.big_level, s.big_local)
    out = []
    for r in scale_big.run(big, s.big_only or None):
        verdict = "" if r.ok is None else (" (fits)" if r.ok else " (does NOT fit)")
        out.append(Row(r.name, r.wall, r.cpu, r.mib, r.ratio, f"{r.reference}{verdict} {r.note}".strip()))
    return out


def row_simspeed(s: Scale) -> list[Row]:
    """``--big``: the simulator's own share at 1024-4096 ranks (scale_simspeed.py: nccl.ring, nccl.pat,
    the 4096-rank ring aware), against the figures recorded before."""
    import scale_simspeed

    out = []
    for name in scale_simspeed.BEFORE:
        r = scale_simspeed.measure_row(name, None)
        out.append(Row(f"simulate() {r.name}", None, r.cpu, r.mib, r.ratio, f"{r.minflt:,} faults; {r.note}"))
    return out


def _fmt(v: float | None, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=1024, help="ring size (default 1024: about 4.2M nodes)")
    ap.add_argument(
        "--big", action="store_true", help="also the big rows (scale_big.py: 4096/8192 ranks; minutes, GiBs)"
    )
    ap.add_argument("--big-ring", type=int, default=4096, metavar="N", help="ranks of the big ring rows")
    ap.add_argument("--big-hier", type=int, default=8192, metavar="N", help="ranks of the big hierarchical rows")
    ap.add_argument("--big-tacos", default="torus:64x64", metavar="TOPO", help="network of the big TACOS rows")
    ap.add_argument("--big-only", nargs="*", default=[], help="big rows: only these groups (ring, hier, tacos)")
    ap.add_argument("--big-level", default="semantics", help="deepest level of the big verify rows")
    ap.add_argument("--big-local", type=int, default=8, metavar="L", help="ranks per node of the big hierarchical rows")
    ap.add_argument("--only-big", action="store_true", help="the big rows alone (not the 1024-rank table)")
    args = ap.parse_args(argv)
    collhub = Path(sys.executable).parent / "collhub"
    workdir = Path(tempfile.mkdtemp(prefix="bench_scale_"))
    rows: list[Row] = []
    try:
        state = Scale(
            args.ranks,
            workdir,
            collhub,
            {},
            args.big_ring,
            args.big_hier,
            args.big_tacos,
            args.big_only,
            args.big_level,
        )
        fns = [] if args.only_big else list(ROWS)
        for fn in fns + ([row_big, row_simspeed] if args.big or args.only_big else []):
            rows.extend(fn(state))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    what = "the big rows (scale_big.py)" if args.only_big else f"ring all-reduce, {args.ranks} ranks"
    print(f"Scale: {what}, {os.cpu_count()} CPUs (whole processes, files on disk)")
    print(f"{'step':<52}{'wall s':>9}{'CPU s':>9}{'peak MiB':>10}{'ratio':>9}  reference")
    for r in rows:
        print(
            f"{r.step:<52}{_fmt(r.wall_s, '.2f'):>9}{_fmt(r.cpu_s, '.2f'):>9}{_fmt(r.peak_mib, '.0f'):>10}"
            f"{_fmt(r.ratio, '.1f') + ('x' if r.ratio is not None else ''):>9}  {r.reference}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
