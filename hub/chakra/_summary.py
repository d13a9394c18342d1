"""A one-screen text summary of an algorithm or a workload."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from ._model import Algorithm, AlgorithmMeta, NodeType, RankGraph
from ._workload import Workload

__all__ = ["RankTally", "summarize"]


def _bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} B"


def _minmax(values: list[int], fmt=str) -> str:
    return f"{fmt(min(values))} .. {fmt(max(values))}" if values else "-"


def _kind_counts(kind: np.ndarray) -> Counter[int]:
    """Nodes per type value; a count over the small range of types (no sort of the column)."""
    if kind.size == 0:
        return Counter()
    lo = int(kind.min())
    bins = np.bincount(kind.astype(np.int64) - lo)
    return Counter({lo + int(k): int(c) for k, c in enumerate(bins.tolist()) if c})


def summarize(obj: Algorithm | Workload) -> str:
    """Collective, ranks, node counts by type, messages, bytes, dependencies, per-rank min/max."""
    if isinstance(obj, Workload):
        return _summarize_workload(obj)
    tally = RankTally()
    for g in obj.graphs:
        tally.add(g)
    return tally.text(obj.meta)


class RankTally:
    """The figures of :func:`summarize` and :meth:`Algorithm.summary`, gathered one rank graph at
    a time, so that a streaming reader (``collhub trace show``) never holds every rank's graph."""

    def __init__(self) -> None:
        self.per_nodes: list[int] = []
        self.per_msgs: list[int] = []
        self.per_bytes: list[int] = []
        self.per_deps: list[int] = []
        self.kind_counts: Counter[int] = Counter()
        self.unbound = 0

    def add(self, g: RankGraph) -> None:
        """Count the next rank's graph."""
        send = g.kind == NodeType.SEND
        comm = send | (g.kind == NodeType.RECV)
        self.per_nodes.append(len(g))
        self.per_msgs.append(int(send.sum()))
        self.per_bytes.append(int(np.clip(g.size[send], 0, None).sum()))
        self.per_deps.append(int(g.dep_pos.size))
        self.unbound += int((g.size[comm] < 0).sum())
        self.kind_counts += _kind_counts(g.kind)

    def summary(self, m: AlgorithmMeta) -> dict[str, Any]:
        """:meth:`Algorithm.summary` of the ranks counted so far."""
        kinds = {t: self.kind_counts.get(int(k), 0) for t, k in _SUMMARY_KINDS}
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
            "nodes": sum(self.per_nodes),
            **kinds,
            **({"metadata": dict(m.extra)} if m.extra else {}),
        }

    def text(self, m: AlgorithmMeta) -> str:
        """:func:`summarize`'s lines for the ranks counted so far."""
        counts: dict[str, int] = {}
        for k, c in self.kind_counts.items():
            name = NodeType(k).name if k in NodeType._value2member_map_ else str(k)
            counts[name] = counts.get(name, 0) + c
        size = f"{m.size} B ({_bytes(m.size)})" if m.size is not None else "symbolic (unbound)"
        lines = [
            f"algorithm   {m.name or '(unnamed)'}" + (f"  [producer: {m.producer}]" if m.producer else ""),
            f"collective  {m.collective.value}, {m.ranks} ranks"
            + (f", root {m.root}" if m.root else "")
            + (", in-place" if m.inplace else ""),
            f"chunks      input {m.in_chunks}, output {m.out_chunks}, scratch {m.scratch_chunks}",
            f"size        {size}",
            f"nodes       {sum(self.per_nodes)}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())),
            f"messages    {sum(self.per_msgs)}, {_bytes(sum(self.per_bytes))} sent"
            + (f", {self.unbound} SEND/RECV without a size" if self.unbound else ""),
            f"deps        {sum(self.per_deps)} edges",
            f"per rank    nodes {_minmax(self.per_nodes)}, messages {_minmax(self.per_msgs)}, "
            f"bytes sent {_minmax(self.per_bytes, _bytes)}, deps {_minmax(self.per_deps)}",
        ]
        return "\n".join(lines)


#: the node types :meth:`Algorithm.summary` counts, by its keys
_SUMMARY_KINDS = (("send", NodeType.SEND), ("recv", NodeType.RECV), ("comp", NodeType.COMP))


def _summarize_workload(wl: Workload) -> str:
    from ._workload_summary import format_workload_summary, workload_summary

    return format_workload_summary(workload_summary(wl))
