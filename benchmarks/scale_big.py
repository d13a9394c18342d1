"""The big rows of the scale table (issue #19, "4096-rank" and "Larger machines"): whole processes.

    python benchmarks/bench_scale.py --big           # the scale table with these rows (10-30 minutes)
    python benchmarks/scale_big.py [--ring N] [--hier N] [--tacos TOPO] [--only ROW ...]

Not run by ``make bench`` or CI: they need minutes and several GiB. On a shared machine run them
one at a time, niced and under a memory cap (``ulimit -v``); a step that dies of the cap prints
FAILED with the signal instead of a figure.

* ring all-reduce on ``--ring`` ranks (default 4096, ~84M nodes): ``collhub produce hub.ring``,
  ``collhub trace show`` (streamed rank by rank) against the whole-set read it replaced
  (``read_algorithm`` + ``summarize``, measured in the same run), and ``collhub consume
  hub.simulate`` unaware on the bench_sim ring of 64 MiB (checked against the closed form);
* hierarchical all-reduce on ``--hier`` ranks (default 8192, ``--local`` 8 per node,
  ``fused=true``: 42M nodes; unfused it would be 335M; 64 per node: 7.8M): produce, ``trace
  verify`` (to ``--level``), simulate unaware on ``ring:L,ring:N/L``;
* TACOS-style all-gather on ``--tacos`` (default ``torus:64x64``, 4096 NPUs, 33.5M nodes):
  ``produce tacos.synthesize`` (greedy + build + write, ``verify=false``), ``trace verify`` of
  the written files (to ``--level``), simulate unaware.

Verification runs all levels by default (``--level semantics``, races included): the race check
sorts its chunk accesses one batch of ranks at a time, and the C walk keeps one rank id per chunk
slot when nothing reduces, so every level fits a 14 GB cap (measured Dec 2026 on the shared
machine, whole ``collhub trace verify`` process): TACOS 64x64 all-gather (33.5M nodes) 7.0 GB, every
level proven; hierarchical 8192/8 fused (42.2M nodes) 6.7 GB, with two parts reported as not
checked in its verdict: the races (their happens-before queries need a clock column for nearly
every rank's chain, 8048+ over 42M nodes) and the data (sets of 8192 ranks in 67M chunk slots,
64 GiB). ``--level structure`` or ``progress`` remain for quicker rows.

The reference of every row is the issue's memory budget, 24 GiB (ratio = 24 GiB / peak); the
node rate and, where one exists, the same-run reference are in the note.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from _rusage import measure  # noqa: E402
from scale_sim import SIZE, Row, _collhub, _write_ring  # noqa: E402

BUDGET_MIB = 24 * 1024.0


@dataclass
class Big:
    """The sizes of the big rows and a work directory."""

    ring: int = 4096
    hier: int = 8192
    tacos: str = "torus:64x64"
    work: Path = Path(".")
    #: deepest verify level of the verify rows (semantics includes the race check, streamed
    #: batch by batch of ranks: about 200 bytes a node whole process at 33-42M nodes)
    level: str = "semantics"
    local: int = 8  # ranks per node of the hierarchical rows


def _row(name: str, fig: tuple[float, float, float, str], note: str, ref: str = "24 GiB budget") -> Row:
    wall, cpu, mib, _out = fig
    return Row(name, wall, cpu, mib, ref, BUDGET_MIB / mib, mib <= BUDGET_MIB, note)


def _nodes(text: str) -> int:
    return int(json.loads(text)["summary"]["nodes"])


def _show(prefix: Path) -> tuple[float, float, float, str]:
    return measure([_collhub(), "trace", "show", str(prefix), "-f", "json"])


def ring_rows(b: Big) -> list[Row]:
    """produce hub.ring, trace show (vs the whole-set read), simulate unaware (bench_sim ring)."""
    n = b.ring
    prefix = b.work / "ring" / "ring"
    prefix.parent.mkdir()
    made = measure(
        [_collhub(), "produce", "hub.ring", "-s", f"ranks={n}", "-s", f"max_ranks={n}"]
        + ["-s", "collective=allreduce", "--out", str(prefix)]
    )
    shown = _show(prefix)
    nodes = _nodes(shown[3])
    whole = measure(
        [sys.executable, "-c", "import sys; from hub.chakra import read_algorithm, summarize; "
         "print(summarize(read_algorithm(sys.argv[1])))", str(prefix)]
    )  # fmt: skip
    rows = [
        _row(f"produce hub.ring {n}", made, f"{nodes:,} nodes, {nodes / made[1] / 1e6:.1f}M nodes/s CPU"),
        Row(
            f"trace show {n} (streamed)",
            shown[0],
            shown[1],
            shown[2],
            f"whole-set read {whole[1]:.1f} s / {whole[2]:.0f} MiB",
            whole[2] / shown[2],
            shown[2] <= BUDGET_MIB,
            f"ratio = peak of the whole-set read / ours; {nodes / shown[1] / 1e6:.1f}M nodes/s CPU",
        ),
    ]
    shutil.rmtree(prefix.parent)
    rows.append(_simulate_ring(b, n))
    return rows


def _simulate_ring(b: Big, n: int) -> Row:
    from bench_sim import expected_ns

    prefix = b.work / "simring" / "ring"
    prefix.parent.mkdir()
    _write_ring(n, prefix)
    fig = _sim(prefix, f"ring:{n}", None)
    ns = int(json.loads(fig[3])["metrics"]["time_ns"])
    exact = ns == expected_ns(n, SIZE)
    shutil.rmtree(prefix.parent)
    row = _row(f"simulate {n} ring unaware", fig, f"{ns} ns{'' if exact else ' NOT the closed form'}")
    row.ok = bool(row.ok) and exact
    return row


def _sim(prefix: Path, network: str, size: str | None) -> tuple[float, float, float, str]:
    extra = ["-s", f"size={size}"] if size else []
    return measure(
        [_collhub(), "consume", "hub.simulate", str(prefix), "-s", f"network={network}", "-s", "mode=unaware"]
        + [*extra, "-f", "json"]
    )


def _verify(prefix: Path, level: str) -> tuple[float, float, float, str]:
    return measure([_collhub(), "trace", "verify", str(prefix), "--level", level, "-f", "json"])


def _verified(fig: tuple[float, float, float, str]) -> str:
    r = json.loads(fig[3])
    if not r["ok"]:
        return f"NOT ok: {r['problem_count']} problems"
    unproven = "".join(f"; {what} not checked" for what in r.get("not_checked", {}))  # e.g. over the clock budget
    return f"ok, levels {'/'.join(r['levels_checked'])}{unproven}"


def hier_rows(b: Big) -> list[Row]:
    """produce hub.hierarchical (``local`` ranks per node, fused: ~5(N+L) nodes per rank), trace
    verify, simulate unaware on ``ring:L,ring:N``."""
    n = b.hier
    prefix = b.work / "hier" / "h"
    prefix.parent.mkdir()
    made = measure(
        [_collhub(), "produce", "hub.hierarchical", "-s", f"ranks={n}", "-s", f"max_ranks={n}"]
        + ["-s", f"local_size={b.local}", "-s", "fused=true", "-s", "collective=allreduce", "-f", "json"]
        + ["--out", str(prefix)]
    )
    nodes = _nodes(_show(prefix)[3])
    checked = _verify(prefix, b.level)
    net = f"ring:{b.local},ring:{n // b.local}"
    sim = _sim(prefix, net, "64MiB")
    ns = int(json.loads(sim[3])["metrics"]["time_ns"])
    shutil.rmtree(prefix.parent)
    return [
        _row(f"produce hierarchical {n}/{b.local}", made, f"{nodes:,} nodes, {nodes / made[1] / 1e6:.1f}M nodes/s CPU"),
        _row(f"trace verify hierarchical {n}/{b.local}", checked, _verified(checked)),
        _row(f"simulate hierarchical {n}/{b.local}", sim, f"unaware, {net}, 64 MiB: {ns} ns"),
    ]


def tacos_rows(b: Big) -> list[Row]:
    """produce tacos.synthesize all-gather (greedy + build + write; verify=false: the next row
    verifies the written files, all levels), trace verify, simulate unaware."""
    topo = b.tacos
    prefix = b.work / "tacos" / "t"
    prefix.parent.mkdir()
    made = measure(
        [_collhub(), "produce", "tacos.synthesize", "-s", "collective=allgather", "-s", f"network={topo}"]
        + ["-s", "seeds=1", "-s", "progress=false", "-s", "verify=false", "-f", "json", "--out", str(prefix)]
    )
    shown = json.loads(_show(prefix)[3])["summary"]
    extra = shown.get("metadata", {})
    checked = _verify(prefix, b.level)
    sim = _sim(prefix, topo, "64MiB")
    ns = int(json.loads(sim[3])["metrics"]["time_ns"])
    shutil.rmtree(prefix.parent)
    return [
        _row(
            f"produce tacos all-gather {topo.split(':')[-1]}",
            made,
            f"{shown['nodes']:,} nodes; greedy {extra.get('tacos.greedy_s')} s, {extra.get('tacos.events')} events"
            f", build {float(extra.get('synthesis_s', 0)) - float(extra.get('tacos.greedy_s', 0)):.1f} s"
            f", bound ratio {extra.get('bound_ratio')}",
        ),
        _row(f"trace verify tacos {topo.split(':')[-1]}", checked, _verified(checked)),
        _row(f"simulate tacos {topo.split(':')[-1]}", sim, f"unaware, 64 MiB: {ns} ns"),
    ]


ROWS: dict[str, Callable[[Big], list[Row]]] = {"ring": ring_rows, "hier": hier_rows, "tacos": tacos_rows}


def run(b: Big, only: list[str] | None = None, show: Callable[[Row], None] | None = None) -> list[Row]:
    """The big rows (those of ``only``, default all), each also handed to ``show`` as soon as its
    group is done; a failing group gives one FAILED row (its reason) instead of its figures."""
    rows: list[Row] = []
    for name, fn in ROWS.items():
        if only and name not in only:
            continue
        with tempfile.TemporaryDirectory(prefix=f"bench-big-{name}-") as tmp:
            try:
                got = fn(Big(b.ring, b.hier, b.tacos, Path(tmp), b.level, b.local))
            except Exception as exc:  # one group that does not fit must not hide the others
                nan = float("nan")
                got = [Row(f"{name}: FAILED", nan, nan, nan, str(exc)[-200:], 0.0, False)]
        for r in got:
            if show is not None:
                show(r)
        rows.extend(got)
    return rows


def _print(r: Row) -> None:
    print(
        f"{r.name:<34} {r.wall:>8.1f} {r.cpu:>8.1f} {r.mib:>9.0f} {r.ratio:>6.1f}x  {r.reference:<34} {r.note}",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ring", type=int, default=4096)
    ap.add_argument("--hier", type=int, default=8192)
    ap.add_argument("--tacos", default="torus:64x64")
    ap.add_argument("--level", default="semantics", choices=["structure", "progress", "semantics"])
    ap.add_argument("--local", type=int, default=8, help="ranks per node of the hierarchical rows")
    ap.add_argument("--only", nargs="*", choices=list(ROWS))
    a = ap.parse_args(argv)
    print(f"{'row':<34} {'wall s':>8} {'cpu s':>8} {'peak MiB':>9} {'ratio':>7}  {'reference':<34} note", flush=True)
    rows = run(Big(a.ring, a.hier, a.tacos, Path("."), a.level, a.local), a.only, _print)
    return 0 if all(r.ok is not False for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
