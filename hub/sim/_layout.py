"""The engine's memory layout of a program: node columns as flat Python lists, renumbered.

The engine touches a handful of per-node columns for every node it walks. Program nodes are
numbered rank-major, but a collective advances all ranks in lock-step: at any moment the engine
works on the same positions of every rank, which rank-major numbering scatters across memory
(one cache miss per column per node). The layout renumbers nodes position-major (engine node
``e`` = position ``p`` of rank ``r`` in (p, r) order), so the nodes of one step sit together.
Successor lists are in the order of the feeder's child sets and the initially ready nodes in
its issue order (ranks ascending), both from :mod:`._feeder`; the renumbering changes no
result; results are mapped back with :meth:`Layout.to_program`.

One virtual node is appended (engine node ``n``, a zero-time no-op): the start of the walk. Its
successors are the dependency-free nodes in issue order, so the engine starts by completing it
and needs no separate code path for the initial issue.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._feeder import feeder_program
from ._program import K_COMP, K_NOP, K_SEND, Program, channels

__all__ = ["Layout", "layout"]


@dataclass
class Layout:
    """Engine-ordered columns (lists, with the start node last) and the renumbering
    (``perm[e]`` = program node of engine node ``e``)."""

    perm: np.ndarray
    inv: np.ndarray  # inv[g] = engine node of program node g
    kind: list[int]
    chan: list[int]  # message channel (dense (tag, src, dst, size) id), -1 for other nodes
    nchan: int
    dur: list[int]  # COMP duration (ns), 0 for other nodes
    chan_delay: list[int]  # unaware message delay (ns) per channel
    succ_ptr: list[int]
    succ_idx: list[int]
    indeg: list[int]
    start: int  # the virtual start node (= n)
    rank: array  # NPU per engine node (the start node: 0)
    nranks: int
    fkey: array  # Chakra node id per engine node: the feeder's hash key
    free0: list[tuple[int, int]]  # per NPU: its free set's (buckets, next resize) after the roots
    feeder: bool  # successor and root lists are in the feeder's order (see _feeder.py)
    rank_array: np.ndarray  # NPU per engine node
    acq: list[int] | None
    rel: list[int] | None

    def to_program(self, values: list[int], *, nodes: bool = False) -> array:
        """An engine-ordered per-node list as a program-ordered ``array('q')``; ``nodes``: the
        values are engine node ids (or -1) to be mapped back too."""
        a = np.fromiter(values, dtype=np.int64, count=len(values))[self.inv]
        if nodes:
            a = np.where((a >= 0) & (a < self.start), self.perm[np.clip(a, 0, self.start - 1)], -1)
        return array("q", a.tobytes())

    def node(self, e: int) -> int:
        """Program node of engine node ``e``."""
        return int(self.perm[e]) if 0 <= e < self.start else -1


def _shared(values: np.ndarray) -> list[int]:
    """``values.tolist()`` with one int object per distinct value: far less memory when a few
    large values repeat over millions of nodes (durations)."""
    uniq, inv = np.unique(values, return_inverse=True)
    objs = uniq.tolist()
    return list(map(objs.__getitem__, inv.tolist()))


def _position_major(rank: np.ndarray, nranks: int) -> np.ndarray:
    """Permutation listing nodes by (position within their rank, rank)."""
    n = rank.size
    counts = np.bincount(rank, minlength=nranks)
    first = np.cumsum(counts) - counts
    sorted_ = bool(np.all(rank[1:] >= rank[:-1]))
    if sorted_ and n and int(counts.min()) == int(counts.max()):  # equal lengths: no sort needed
        return (np.arange(int(counts[0]), dtype=np.int64)[:, None] + first[None, :]).ravel()
    if sorted_:
        pos = np.arange(n, dtype=np.int64) - first[rank]
    else:
        order = np.argsort(rank, kind="stable")
        pos = np.empty(n, dtype=np.int64)
        pos[order] = np.arange(n, dtype=np.int64) - first[rank[order]]
    return np.argsort(pos * nranks + rank, kind="stable")


def layout(prog: Program, delays: Any = None) -> Layout:
    """Lay ``prog`` out for the engine (``delays``: per-node unaware message delays, or None)."""
    n = prog.n
    rank = np.frombuffer(prog.rank, dtype=np.int32).astype(np.int64)
    nranks = max(prog.ranks, int(rank.max()) + 1 if n else 0)
    perm = _position_major(rank, nranks)
    inv = np.empty(n, dtype=np.int64)
    inv[perm] = np.arange(n, dtype=np.int64)

    kinds = prog.kind_array()
    chan, nchan = channels(prog)
    dur = np.where(kinds == K_COMP, np.frombuffer(prog.dur, dtype=np.int64), 0)
    # an unaware message's delay depends on (src, dst, size) only, so it is a property of its channel
    chan_delay = np.zeros(nchan, dtype=np.int64)
    if delays is not None and nchan:
        sends = np.flatnonzero(kinds == K_SEND)
        chan_delay[chan[sends]] = np.asarray(delays, dtype=np.int64)[sends]
    # the feeder's view: distinct parents, children in child-set order, roots in issue order
    feeder = prog.acq is None  # workloads (ASTRA-sim's Workload layer) keep file order
    if feeder:
        sp, si, indeg, roots_p, free0 = feeder_program(prog)
    else:
        sp = np.frombuffer(prog.succ_ptr, dtype=np.int64)
        si = np.frombuffer(prog.succ_idx, dtype=np.int64)
        indeg = np.asarray(prog.indeg, dtype=np.int64)
        roots_p = np.flatnonzero(indeg == 0)
        free0 = []
    roots = inv[roots_p]  # ranks ascending, each in its free set's order
    indeg = indeg[perm]
    indeg[roots] = 1  # they wait for the virtual start node

    # successors: engine node e's list is its program node's list, renumbered, same order;
    # the start node's list (last) is the roots
    cnt = np.diff(sp)[perm]
    new_sp = np.zeros(n + 2, dtype=np.int64)
    np.cumsum(cnt, out=new_sp[1:-1])
    nedges = int(new_sp[n])
    new_sp[n + 1] = nedges + roots.size
    gather = np.repeat(sp[:-1][perm] - new_sp[:-2], cnt) + np.arange(nedges, dtype=np.int64)
    new_si = np.concatenate([inv[si[gather]], roots])

    acq = prog.acq
    rel = prog.rel
    kind = kinds[perm].tolist()  # small ints: shared by Python already
    kind.append(K_NOP)
    chan_l = chan[perm].tolist()
    chan_l.append(-1)
    dur_l = _shared(dur[perm]) if bool((dur > 256).any()) else dur[perm].tolist()
    dur_l.append(0)
    indeg_l = indeg.tolist()
    indeg_l.append(0)
    res = acq is not None and rel is not None
    # NPU per node as array('i'): built without a Python int per node; the engine reads it only on
    # the rarer paths (COMP batches, three or more released nodes, workload resources)
    rank_l = array("i", np.append(rank[perm], 0).astype(np.int32).tobytes())
    fkey = array("q", np.append(np.frombuffer(prog.local_id, dtype=np.int64)[perm], 0).tobytes())
    return Layout(
        perm=perm,
        inv=inv,
        kind=kind,
        chan=chan_l,
        nchan=nchan,
        dur=dur_l,
        chan_delay=chan_delay.tolist(),
        succ_ptr=new_sp.tolist(),
        succ_idx=new_si.tolist(),
        indeg=indeg_l,
        start=n,
        rank=rank_l,
        nranks=nranks,
        fkey=fkey,
        free0=free0,
        feeder=feeder,
        rank_array=rank[perm],
        acq=np.append(np.asarray(acq, dtype=np.int64)[perm], 0).tolist() if res else None,
        rel=np.append(np.asarray(rel, dtype=np.int64)[perm], 0).tolist() if res else None,
    )
