"""A one-screen text summary of an algorithm or a workload."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

import numpy as np

from .._units import format_size
from ._model import Algorithm, AlgorithmMeta, NodeType, RankGraph
from ._stream import RankStream
from ._workload import Workload

__all__ = ["algorithm_summary", "summarize"]


def _reading(n: int) -> str:
    return format_size(n, "reading")


def _minmax(values: list[int], fmt=str) -> str:
    return f"{fmt(min(values))} .. {fmt(max(values))}" if values else "-"


def _kind_counts(kind: np.ndarray) -> Counter[int]:
    """Nodes per type value; a count over the small range of types (no sort of the column)."""
    if kind.size == 0:
        return Counter()
    lo = int(kind.min())
    bins = np.bincount(kind.astype(np.int64) - lo)
    return Counter({lo + int(k): int(c) for k, c in enumerate(bins.tolist()) if c})


def summarize(obj: Algorithm | Workload | RankStream) -> str:
    """Collective, ranks, node counts by type, messages, bytes, dependencies, per-rank min/max.

    A :class:`RankStream` (:func:`hub.chakra.iter_ranks`) is summarized rank by rank, without
    holding every graph: the same text as for the algorithm it reads.
    """
    if isinstance(obj, Workload):
        return _summarize_workload(obj)
    if isinstance(obj, RankStream):
        return _summarize_algorithm(obj.meta, obj)
    return _summarize_algorithm(obj.meta, obj.graphs)


def algorithm_summary(m: AlgorithmMeta, graphs: Iterable[RankGraph]) -> dict[str, Any]:
    """The summary (a dict) of an algorithm: metadata ``m``, graphs taken one at a time (a stream's too)."""
    kinds = {t: 0 for t in ("send", "recv", "comp")}
    nodes = 0
    for g in graphs:
        nodes += len(g)
        kinds["send"] += int(np.count_nonzero(g.kind == NodeType.SEND))
        kinds["recv"] += int(np.count_nonzero(g.kind == NodeType.RECV))
        kinds["comp"] += int(np.count_nonzero(g.kind == NodeType.COMP))
    return {
        "name": m.name,
        "producer": m.producer,
        "collective": str(m.collective),
        "ranks": m.ranks,
        "in_chunks": m.in_chunks,
        "out_chunks": m.out_chunks,
        "scratch_chunks": m.scratch_chunks,
        "inplace": m.inplace,
        "root": m.root,
        "size": m.size,
        "nodes": nodes,
        **kinds,
        # producer provenance (GlobalMetadata attributes beyond the profile's own)
        **({"metadata": dict(m.extra)} if m.extra else {}),
    }


def _summarize_algorithm(m: AlgorithmMeta, graphs: Iterable[RankGraph]) -> str:
    per_nodes, per_msgs, per_bytes, per_deps = [], [], [], []
    counts: dict[str, int] = {}
    kind_counts: Counter[int] = Counter()
    unbound = 0
    for g in graphs:
        send = g.kind == NodeType.SEND
        comm = send | (g.kind == NodeType.RECV)
        per_nodes.append(len(g))
        per_msgs.append(int(send.sum()))
        per_bytes.append(int(np.clip(g.size[send], 0, None).sum()))
        per_deps.append(int(g.dep_pos.size))
        unbound += int((g.size[comm] < 0).sum())
        kind_counts += _kind_counts(g.kind)
    for k, c in kind_counts.items():
        name = NodeType(k).name if k in NodeType._value2member_map_ else str(k)
        counts[name] = counts.get(name, 0) + c
    size = f"{m.size} B ({_reading(m.size)})" if m.size is not None else "symbolic (unbound)"
    lines = [
        f"algorithm   {m.name or '(unnamed)'}" + (f"  [producer: {m.producer}]" if m.producer else ""),
        f"collective  {m.collective.value}, {m.ranks} ranks"
        + (f", root {m.root}" if m.root else "")
        + (", in-place" if m.inplace else ""),
        f"chunks      input {m.in_chunks}, output {m.out_chunks}, scratch {m.scratch_chunks}",
        f"size        {size}",
        f"nodes       {sum(per_nodes)}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())),
        f"messages    {sum(per_msgs)}, {_reading(sum(per_bytes))} sent"
        + (f", {unbound} SEND/RECV without a size" if unbound else ""),
        f"deps        {sum(per_deps)} edges",
        f"per rank    nodes {_minmax(per_nodes)}, messages {_minmax(per_msgs)}, "
        f"bytes sent {_minmax(per_bytes, _reading)}, deps {_minmax(per_deps)}",
        *_bound_lines(dict(m.extra)),
    ]
    return "\n".join(lines)


def _bound_lines(extra: dict[str, Any]) -> list[str]:
    """The certified bound a producer run recorded (``hub.sim._bounds.grade``'s metadata keys) and the
    simulated time against it; nothing when the algorithm carries no bound."""
    bound, net, size = extra.get("bound_ns"), extra.get("bound_network"), extra.get("bound_size")
    if not isinstance(bound, (int, float)) or isinstance(bound, bool):
        return []
    where = f" on {net}" if net else ""
    if isinstance(size, int) and not isinstance(size, bool) and size > 0:
        from .._units import format_size

        where += f" at {format_size(size)}"
    lines = [f"bound       {bound:,.1f} ns ({extra.get('bound_term', '?')}){where}"]
    t, ratio = extra.get("simulated_ns"), extra.get("time_over_bound")
    if isinstance(t, int) and isinstance(ratio, (int, float)):
        from .._units import percent_of_bound

        lines.append(f"simulated   {t:,} ns ({extra.get('simulated_mode', '?')}): {percent_of_bound(ratio)} of bound")
    return lines


def _summarize_workload(wl: Workload) -> str:
    from ._workload_summary import format_workload_summary, workload_summary

    return format_workload_summary(workload_summary(wl))
