"""Workload timelines: when each rank computed and communicated, for comparing runs side by side.

``node_spans`` lists a workload simulation's workload-level nodes with their [start, end] times;
``write_timeline`` draws several runs of the same workload (e.g. before and after ``hub.overlap``)
one above the other on one time axis, each rank a row: COMP nodes in the lower half (chosen ones
highlighted, e.g. a producer's pieces), SENDs (issue to arrival: the data in flight) and COMM_COLL
nodes in the upper half; RECVs are left out (posted early, they mostly wait). matplotlib is
imported only when drawing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from ...atomic import output_path
from ...errors import UsageError
from .._engine.program import K_COMP, K_END, K_RECV, K_SEND, K_START
from .result import SimulationResult

__all__ = ["node_spans", "write_timeline"]


def node_spans(res: SimulationResult, rank: int) -> list[tuple[int, str, int, int]]:
    """``(node id, kind, start ns, end ns)`` of ``rank``'s workload-level nodes (kind COMP, SEND,
    RECV or COLL; a COMM_COLL from its START to its END), in start order."""
    prog, st = res._program, res._engine
    if prog is None or st is None or prog.acq is None:
        raise UsageError("node_spans needs the result of simulating a workload")
    kind = prog.kind_array()
    ranks = np.frombuffer(prog.rank, dtype=np.int32)
    inst = np.frombuffer(prog.inst, dtype=np.int32)
    lid = np.frombuffer(prog.local_id, dtype=np.int64)
    mine = ranks == rank
    out: list[tuple[int, str, int, int]] = []
    names = {K_COMP: "COMP", K_SEND: "SEND", K_RECV: "RECV"}
    for g in np.flatnonzero(mine & (inst == 0) & np.isin(kind, list(names))).tolist():
        out.append((int(lid[g]), names[int(kind[g])], int(st.start[g]), int(st.fin[g])))
    ends = {int(inst[g]): g for g in np.flatnonzero(mine & (kind == K_END)).tolist()}
    for g in np.flatnonzero(mine & (kind == K_START)).tolist():
        out.append((int(lid[g]), "COLL", int(st.start[g]), int(st.fin[ends[int(inst[g])]])))
    return sorted(out, key=lambda s: (s[2], s[0]))


def write_timeline(
    runs: Mapping[str, SimulationResult],
    path: str | Path,
    *,
    window_ns: tuple[int, int] | None = None,
    ranks: Sequence[int] | None = None,
    highlight: Mapping[str, Mapping[int, set[int]]] | None = None,
) -> Path:
    """A PNG with one panel per run (its label and step time as title), ranks as rows, over
    ``window_ns`` (default: the whole longest run); ``highlight[label][rank]``: COMP node ids
    drawn in another colour."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not runs:
        raise UsageError("write_timeline needs at least one run")
    first = next(iter(runs.values()))
    rows = list(ranks) if ranks is not None else list(range(first.ranks))
    lo, hi = window_ns if window_ns is not None else (0, max(r.time_ns for r in runs.values()))
    fig, axes = plt.subplots(len(runs), 1, figsize=(12, 1.2 + 0.45 * len(rows) * len(runs)), sharex=True, squeeze=False)
    colors = {"COMP": "tab:blue", "highlighted COMP": "tab:purple", "SEND": "tab:orange", "COLL": "tab:red"}
    for ax, (label, res) in zip(axes[:, 0], runs.items(), strict=True):
        marked = (highlight or {}).get(label, {})
        for y, r in enumerate(rows):
            for node, kind, s, e in node_spans(res, r):
                if e < lo or s > hi or kind == "RECV":
                    continue
                color = colors["highlighted COMP" if kind == "COMP" and node in marked.get(r, ()) else kind]
                base = y + (0.05 if kind == "COMP" else 0.5)
                # a thin edge in the face colour keeps back-to-back nodes apart
                ax.broken_barh(
                    [(s / 1000, max(e - s, 1) / 1000)], (base, 0.42), facecolor=color, edgecolor="white", linewidth=0.5
                )
        ax.set_yticks([y + 0.5 for y in range(len(rows))], [f"rank {r}" for r in rows])
        ax.set_ylim(0, len(rows))
        ax.set_title(f"{label}: step {res.time_ns / 1e6:.6f} ms", fontsize="medium")
    axes[-1, 0].set_xlim(lo / 1000, hi / 1000)
    axes[-1, 0].set_xlabel("time (µs); per rank: compute below, communication above")
    handles = [matplotlib.patches.Patch(color=c, label=k) for k, c in colors.items()]
    # above the first panel, never over a bar
    axes[0, 0].legend(
        handles=handles, loc="lower right", bbox_to_anchor=(1.0, 1.08), fontsize="small", ncol=4, frameon=False
    )
    fig.tight_layout()
    target = Path(path)
    try:
        with output_path(target) as tmp:
            fig.savefig(tmp, dpi=90, format="png")
    finally:
        plt.close(fig)
    return target
