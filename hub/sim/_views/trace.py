"""Views of a simulation: Chrome/Perfetto trace JSON and a PNG timeline (matplotlib, lazily)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ...atomic import output_path
from ...topology._base import atomic_write_text
from .._engine.program import K_COMP, K_RECV, K_SEND
from .result import SimulationResult
from .tracks import assign_tracks, match_messages

__all__ = ["trace_events", "write_plot", "write_trace"]

_NAMES = {K_COMP: "COMP", K_SEND: "SEND", K_RECV: "RECV"}
_MAX_EVENTS = 2_000_000


def trace_events(res: SimulationResult) -> list[dict[str, Any]]:
    """Chrome trace events, ts and dur in µs: one process per rank, one track per stream lane
    (``comp``, ``send → 3``, ``recv ← 2``, ``send → 3 #2`` for a second concurrent lane; slices on
    a track never overlap), and a flow arrow (``ph`` s/f, ``cat`` "msg") from each send to its receive."""
    prog, st = res._program, res._engine
    if prog is None or st is None:
        return []
    start, fin = st.start, st.fin
    nodes = [g for g in range(prog.n) if prog.kind[g] in _NAMES][: _MAX_EVENTS // 3]
    tracks = assign_tracks(prog, start, fin, nodes)
    ev: list[dict[str, Any]] = []
    for r in range(prog.ranks):
        ev.append({"ph": "M", "name": "process_name", "pid": r, "tid": 0, "args": {"name": f"rank {r}"}})
        ev.append({"ph": "M", "name": "process_sort_index", "pid": r, "tid": 0, "args": {"sort_index": r}})
    for (r, tid), label in sorted(tracks.names.items()):
        ev.append({"ph": "M", "name": "thread_name", "pid": r, "tid": tid, "args": {"name": label}})
        ev.append({"ph": "M", "name": "thread_sort_index", "pid": r, "tid": tid, "args": {"sort_index": tid}})
    for g in nodes:  # int(): program columns may be numpy arrays, whose scalars JSON refuses
        k = int(prog.kind[g])
        args: dict[str, Any] = {"node": int(prog.local_id[g])}
        if k != K_COMP:
            args.update(peer=int(prog.peer[g]), bytes=int(prog.size[g]), tag=int(prog.tagx[g]) & 0xFFFFFFFF)
        if prog.inst[g]:
            args["collective"] = prog.labels.get(int(prog.inst[g]), int(prog.inst[g]))
        s, f = start[g], max(fin[g], start[g])
        ev.append(
            {
                "ph": "X",
                "name": f"{_NAMES[k]} {prog.local_id[g]}",
                "cat": _NAMES[k].lower(),
                "pid": int(prog.rank[g]),
                "tid": tracks.tid[g],
                "ts": s / 1000.0,
                "dur": (f - s) / 1000.0,
                "args": args,
            }
        )
    for i, (snd, rcv) in enumerate(match_messages(prog, start, nodes)):
        # The arrow leaves the send where it starts and lands inside the receive (a flow end
        # binds to the slice that encloses its timestamp), at the later of the two starts.
        land = min(max(start[snd], start[rcv]), max(fin[rcv], start[rcv]))
        ev.append(
            {
                "ph": "s",
                "id": i,
                "name": "msg",
                "cat": "msg",
                "pid": int(prog.rank[snd]),
                "tid": tracks.tid[snd],
                "ts": start[snd] / 1000.0,
            }
        )
        ev.append(
            {
                "ph": "f",
                "bp": "e",
                "id": i,
                "name": "msg",
                "cat": "msg",
                "pid": int(prog.rank[rcv]),
                "tid": tracks.tid[rcv],
                "ts": land / 1000.0,
            }
        )
    return ev


def write_trace(res: SimulationResult, path: str | Path) -> Path:
    """Write the Chrome trace (``{"traceEvents": [...]}``) atomically; open it in Perfetto."""
    doc = {
        "traceEvents": trace_events(res),
        "displayTimeUnit": "ns",
        "otherData": {"topology": res.topology, "mode": res.mode, "time_ns": res.time_ns},
    }
    return atomic_write_text(path, json.dumps(doc, separators=(",", ":")))


_GANTT_MAX_RANKS = 32  # above this a bar per operation is unreadable: a heat map instead
_HEAT_BINS = 240


def write_plot(res: SimulationResult, path: str | Path) -> Path:
    """A PNG: a Gantt chart per rank (sends coloured by step, computation as ticks) or, for many
    ranks, a heat map of sends in flight per rank over time; below it, link utilization (aware)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    target = Path(path)
    rows = 2 if res.links else 1
    fig, axes = plt.subplots(
        rows, 1, figsize=(12, 7 if rows == 2 else 4.5), squeeze=False, gridspec_kw={"height_ratios": [3, 1.3][:rows]}
    )
    ax = axes[0][0]
    if res.ranks <= _GANTT_MAX_RANKS:
        _gantt(fig, ax, res)
    else:
        _heat_map(fig, ax, res)
    title = f"{res.name or res.collective or 'simulation'} on {res.topology} ({res.mode}): {res.time_us:.3f} µs"
    if res.warnings:  # an impossible number must not look like a result
        title += f"\nWARNING: below the lower bound (time_over_bound {res.bound_ratio:.3g}), see the run's warnings"
    ax.set_title(title, **({"color": "#d62728"} if res.warnings else {}))
    if res.links:
        ax2 = axes[1][0]
        top = sorted(res.links, key=lambda d: -d["busy_ns"])[:40]
        ax2.bar(range(len(top)), [d["utilization"] for d in top], color="tab:purple")
        ax2.set_xticks(range(len(top)), [d["link"] for d in top], rotation=90, fontsize="x-small")
        ax2.set_ylabel("utilization")
        ax2.set_ylim(0, 1)
        ax2.set_title(f"busiest {len(top)} of {len(res.links)} links (busy time / total time)", fontsize="small")
    fig.tight_layout()
    try:
        with output_path(target) as tmp:
            fig.savefig(tmp, dpi=100, format="png")
    finally:
        plt.close(fig)
    return target


def _intervals(res: SimulationResult, kind: int) -> tuple[Any, Any, Any]:
    """(rank, start ns, finish ns) arrays of the nodes of one kind, in program order."""
    import numpy as np

    prog, st = res._program, res._engine
    kinds = np.asarray(prog.kind)
    idx = np.nonzero(kinds == kind)[0]
    return (
        np.asarray(prog.rank)[idx],
        np.asarray(st.start, dtype=np.int64)[idx],
        np.asarray(st.fin, dtype=np.int64)[idx],
    )


def _gantt(fig: Any, ax: Any, res: SimulationResult) -> None:
    """One row per rank: each send a bar coloured by its step (its place among the rank's sends)."""
    import matplotlib.pyplot as plt
    import numpy as np

    rank, s, f = _intervals(res, K_SEND)
    order = np.lexsort((s, rank))
    step = np.empty(len(order), dtype=np.int64)
    if len(order):
        first = np.r_[0, np.nonzero(np.diff(rank[order]))[0] + 1]
        runs = np.diff(np.r_[first, len(order)])
        step[order] = np.arange(len(order)) - np.repeat(first, runs)
    norm = plt.Normalize(0, max(int(step.max()) if len(step) else 0, 1))
    cmap = plt.get_cmap("viridis")
    for r in range(res.ranks):
        sel = np.nonzero(rank == r)[0]
        lane = _lanes(s[sel], f[sel])  # concurrent sends get sub-rows instead of hiding each other
        height = 0.5 / max(int(lane.max()) + 1 if len(lane) else 1, 1)
        for k in range(int(lane.max()) + 1 if len(lane) else 0):
            on = sel[lane == k]
            spans = list(zip(s[on] / 1000, np.maximum(f[on] - s[on], 1) / 1000, strict=False))
            ax.broken_barh(
                spans,
                (r - 0.35 + k * height, height),
                facecolors=cmap(norm(step[on])),
                edgecolor="white",
                linewidth=0.2,
            )
    crank, cs, cf = _intervals(res, K_COMP)
    if len(crank):
        ax.broken_barh(list(zip(cs / 1000, np.maximum(cf - cs, 1) / 1000, strict=False)), (0, 0), facecolors="none")
        for r in range(res.ranks):
            sel = crank == r
            ax.broken_barh(
                list(zip(cs[sel] / 1000, np.maximum(cf[sel] - cs[sel], 1) / 1000, strict=False)),
                (r + 0.2, 0.15),
                facecolors="#d62728",
            )
        ax.plot([], [], color="#d62728", lw=4, label="comp")
        # above the axes, never over a bar (rank 0's last send ends at the top right)
        ax.legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), fontsize="small", frameon=False, borderaxespad=0.2)
    fig.colorbar(plt.cm.ScalarMappable(norm=norm, cmap=cmap), ax=ax, label="send step (per rank)", pad=0.01)
    ax.set_yticks(range(res.ranks))
    ax.set_ylim(res.ranks - 0.5, -0.5)
    ax.set_xlim(0, max(res.time_ns, 1) / 1000)
    ax.set_xlabel("time (µs)")
    ax.set_ylabel("rank")


def _heat_map(fig: Any, ax: Any, res: SimulationResult) -> None:
    """Ranks x time bins: how many sends each rank has in flight (time-averaged over the bin)."""
    import numpy as np

    rank, s, f = _intervals(res, K_SEND)
    total = max(res.time_ns, 1)
    edges = np.linspace(0, total, _HEAT_BINS + 1)
    grid = np.zeros((res.ranks, _HEAT_BINS))
    for r in range(res.ranks):
        sel = rank == r
        # Time-integral of "sends in flight" at each bin edge, from sorted starts and finishes
        # (O(n log n), no n x bins matrix): I(e) = sum_{s<e} (e - s) - sum_{f<e} (e - f).
        integral = _integral_at(np.sort(s[sel]), edges) - _integral_at(np.sort(f[sel]), edges)
        grid[r] = np.diff(integral) / (edges[1] - edges[0])
    im = ax.imshow(
        grid,
        aspect="auto",
        interpolation="nearest",
        cmap="magma",
        origin="upper",
        extent=(0, total / 1000, res.ranks - 0.5, -0.5),
    )
    fig.colorbar(im, ax=ax, label="sends in flight", pad=0.01)
    ax.set_xlabel("time (µs)")
    ax.set_ylabel("rank")


def _integral_at(times: Any, edges: Any) -> Any:
    """sum over t in sorted ``times`` with t < e of (e - t), for every e in ``edges``."""
    import numpy as np

    n = np.searchsorted(times, edges, side="left")
    prefix = np.r_[0.0, np.cumsum(times, dtype=np.float64)]
    return n * edges - prefix[n]


def _lanes(start: Any, fin: Any) -> Any:
    """Greedy interval partitioning: a lane per interval so that no two on a lane overlap."""
    import heapq

    import numpy as np

    lane = np.zeros(len(start), dtype=np.int64)
    free: list[tuple[int, int]] = []
    used = 0
    for i in np.lexsort((fin, start)):
        if free and free[0][0] <= start[i]:
            _, k = heapq.heappop(free)
        else:
            k, used = used, used + 1
        lane[i] = k
        heapq.heappush(free, (int(fin[i]), k))
    return lane
