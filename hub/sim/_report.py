"""Views of a simulation: Chrome/Perfetto trace JSON and a PNG timeline (matplotlib, lazily)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..atomic import output_path
from ..topology._base import atomic_write_text
from ._program import K_COMP, K_RECV, K_SEND
from ._result import SimulationResult

__all__ = ["trace_events", "write_plot", "write_trace"]

_NAMES = {K_COMP: "COMP", K_SEND: "SEND", K_RECV: "RECV"}
_TID = {K_SEND: 0, K_RECV: 1, K_COMP: 2}
_MAX_EVENTS = 2_000_000


def trace_events(res: SimulationResult) -> list[dict[str, Any]]:
    """Chrome trace events: one process per rank, threads send / recv / comp; ts and dur in µs."""
    prog, st = res._program, res._engine
    if prog is None or st is None:
        return []
    ev: list[dict[str, Any]] = []
    for r in range(prog.ranks):
        ev.append({"ph": "M", "name": "process_name", "pid": r, "tid": 0, "args": {"name": f"rank {r}"}})
        for k, tid in _TID.items():
            ev.append({"ph": "M", "name": "thread_name", "pid": r, "tid": tid, "args": {"name": _NAMES[k].lower()}})
    for g in range(prog.n):
        k = prog.kind[g]
        if k not in _TID:
            continue
        if len(ev) >= _MAX_EVENTS:
            break
        args: dict[str, Any] = {"node": prog.local_id[g]}
        if k != K_COMP:
            args.update(peer=prog.peer[g], bytes=prog.size[g], tag=prog.tagx[g] & 0xFFFFFFFF)
        if prog.inst[g]:
            args["collective"] = prog.labels.get(prog.inst[g], prog.inst[g])
        s, f = st.start[g], st.fin[g]
        ev.append({"ph": "X", "name": f"{_NAMES[k]} {prog.local_id[g]}", "cat": _NAMES[k].lower(), "pid": prog.rank[g],
                   "tid": _TID[k], "ts": s / 1000.0, "dur": (f - s) / 1000.0, "args": args})
    return ev


def write_trace(res: SimulationResult, path: str | Path) -> Path:
    """Write the Chrome trace (``{"traceEvents": [...]}``) atomically; open it in Perfetto."""
    doc = {"traceEvents": trace_events(res), "displayTimeUnit": "ns",
           "otherData": {"topology": res.topology, "mode": res.mode, "time_ns": res.time_ns}}
    return atomic_write_text(path, json.dumps(doc, separators=(",", ":")))


def write_plot(res: SimulationResult, path: str | Path) -> Path:
    """A PNG: per-rank timeline of SEND/RECV/COMP intervals and, in aware mode, link utilization."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    prog, st = res._program, res._engine
    target = Path(path)
    rows = 2 if res.links else 1
    fig, axes = plt.subplots(rows, 1, figsize=(10, 3 + 0.25 * min(prog.ranks, 64) + (3 if rows == 2 else 0)),
                             squeeze=False)
    ax = axes[0][0]
    colors = {K_SEND: "tab:blue", K_RECV: "tab:green", K_COMP: "tab:red"}
    for k, color in colors.items():
        bars: dict[int, list[tuple[float, float]]] = {}
        for g in range(prog.n):
            if prog.kind[g] == k and prog.rank[g] < 64:
                bars.setdefault(prog.rank[g], []).append((st.start[g] / 1000, max(st.fin[g] - st.start[g], 1) / 1000))
        for r, spans in bars.items():
            off = {K_SEND: -0.3, K_RECV: 0.0, K_COMP: 0.3}[k]
            ax.broken_barh(spans, (r + off - 0.12, 0.24), facecolors=color, label=None)
        ax.plot([], [], color=color, lw=6, label={K_SEND: "send", K_RECV: "recv", K_COMP: "comp"}[k])
    ax.set_xlabel("time (µs)")
    ax.set_ylabel("rank")
    title = f"{res.name or res.collective or 'simulation'} on {res.topology} ({res.mode}): {res.time_us:.3f} µs"
    if res.warnings:  # an impossible number must not look like a result
        title += f"\nWARNING: below the lower bound (time_over_bound {res.bound_ratio:.3g}), see the run's warnings"
    ax.set_title(title, **({"color": "#d62728"} if res.warnings else {}))
    ax.legend(loc="upper right", fontsize="small")
    if res.links:
        ax2 = axes[1][0]
        top = sorted(res.links, key=lambda d: -d["busy_ns"])[:40]
        ax2.bar(range(len(top)), [d["utilization"] for d in top], color="tab:purple")
        ax2.set_xticks(range(len(top)), [d["link"] for d in top], rotation=90, fontsize="x-small")
        ax2.set_ylabel("utilization")
        ax2.set_title("busiest links (busy time / total time)")
    fig.tight_layout()
    try:
        with output_path(target) as tmp:
            fig.savefig(tmp, dpi=100, format="png")
    finally:
        plt.close(fig)
    return target
