"""Level "progress": explain why a walk (see :mod:`._walk`) got stuck."""

from __future__ import annotations

import numpy as np

from ..chakra import NodeType
from ._flat import Flat
from ._report import ProblemSink
from ._walk import WalkResult

__all__ = ["report_deadlock"]


def _describe(f: Flat, v: int) -> str:
    k = int(f.kind[v])
    if k == NodeType.SEND:
        return f"SEND to rank {int(f.peer[v])} tag {int(f.tag[v])}"
    if k == NodeType.RECV:
        return f"RECV from rank {int(f.peer[v])} tag {int(f.tag[v])}"
    return "COMP"


def _blocker(f: Flat, res: WalkResult, v: int) -> str:
    """Why node v was never issued: its first unfinished dependency."""
    for d in f.dep_pos[f.dep_ptr[v] : f.dep_ptr[v + 1]].tolist():
        if not res.done[d]:
            return f"depends on unfinished node {int(f.ids[d])} ({_describe(f, d)})"
    return "was never issued"


def report_deadlock(f: Flat, res: WalkResult, order: np.ndarray, sink: ProblemSink) -> None:
    """One problem per RECV that waits forever (naming the SEND it waits for and what that
    SEND waits for), then one summary line for the nodes stuck behind them."""
    key = res.keys
    # unissued SENDs per key, in issue order, so the k-th waiting RECV names the k-th of them
    sends = np.flatnonzero((f.kind == NodeType.SEND) & ~np.asarray(res.issued, dtype=bool))
    pending: dict[int, list[int]] = {}
    for s in sorted(sends.tolist(), key=lambda s: (int(f.rank[s]), int(order[s]))):
        pending.setdefault(key[s], []).append(s)
    taken: dict[int, int] = {}
    for v in res.waiting:
        r, i = f.where(v)
        src = int(f.peer[v])
        size = int(f.size[v])
        what = f"RECV from rank {src} tag {int(f.tag[v])}" + (f" size {size}" if size >= 0 else "")
        cands = pending.get(key[v], [])
        k = taken.get(key[v], 0)
        taken[key[v]] = k + 1
        if k < len(cands):
            s = cands[k]
            sr, si = f.where(s)
            sink.add(
                f"{what} waits forever: the matching SEND (rank {sr} node {si}) never runs, it {_blocker(f, res, s)}",
                r,
                i,
            )
        else:
            sink.add(
                f"{what} waits forever: no message ever sent on this connection"
                + (" with this size" if size >= 0 else ""),
                r,
                i,
            )
    stuck = [v for v in range(f.n) if not res.done[v] and not res.issued[v]]
    if stuck:
        ranks = sorted({int(f.rank[v]) for v in stuck})
        first = stuck[0]
        r, i = f.where(first)
        sink.add(
            f"{len(stuck)} node(s) on {len(ranks)} rank(s) never run because they depend on "
            f"waiting nodes (first: rank {r} node {i} {_blocker(f, res, first)})"
        )
