"""The engine's memory layout of a program: compact numpy node columns, renumbered.

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

Every column is a C-contiguous numpy array of the dtype the native engine reads
(``hub/_native/_sim.c``): int8 kinds, int32 node ids, channels and ranks, int64 times and keys;
about 40 bytes per node.
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
    """Engine-ordered columns (numpy, with the start node last) and the renumbering
    (``perm[e]`` = program node of engine node ``e``)."""

    perm: np.ndarray  # int32
    inv: np.ndarray  # int32: inv[g] = engine node of program node g
    kind: np.ndarray  # int8
    chan: np.ndarray  # int32 message channel (dense (tag, src, dst, size) id), -1 for other nodes
    nchan: int
    dur: np.ndarray  # int64 COMP duration (ns), 0 for other nodes
    chan_delay: np.ndarray  # int64 unaware message delay (ns) per channel
    succ_ptr: np.ndarray  # int64, n + 2
    succ_idx: np.ndarray  # int32
    indeg: np.ndarray  # int32 (the engine counts it down)
    start: int  # the virtual start node (= n)
    rank: np.ndarray  # int32 NPU per engine node (the start node: 0)
    nranks: int
    free0: list[tuple[int, int]]  # per NPU: its free set's (buckets, next resize) after the roots
    feeder: bool  # successor and root lists are in the feeder's order (see _feeder.py)
    acq: np.ndarray | None  # int8 resource class taken at issue (workloads), else None
    rel: np.ndarray | None  # int8 resource class freed at completion

    def to_program(self, values: Any, *, nodes: bool = False) -> array:
        """An engine-ordered per-node column as a program-ordered ``array('q')``; ``nodes``: the
        values are engine node ids (or -1) to be mapped back too."""
        a = np.asarray(values, dtype=np.int64)[: self.start][self.inv]
        if nodes:
            a = np.where((a >= 0) & (a < self.start), self.perm[np.clip(a, 0, self.start - 1)], -1)
        return array("q", a.astype(np.int64, copy=False).tobytes())

    def node(self, e: int) -> int:
        """Program node of engine node ``e``."""
        return int(self.perm[e]) if 0 <= e < self.start else -1


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


#: engine nodes per block of the successor renumbering
_BLOCK = 1 << 20


def _append(a: np.ndarray, value: int, dtype: Any) -> np.ndarray:
    """``a`` as ``dtype`` with one more element (the start node's) at the end."""
    out = np.empty(a.size + 1, dtype=dtype)
    out[:-1] = a
    out[-1] = value
    return out


def layout(prog: Program, delays: Any = None) -> Layout:
    """Lay ``prog`` out for the engine (``delays``: unaware message delay per SEND node in program
    order, or None)."""
    n = prog.n
    rank = np.frombuffer(prog.rank, dtype=np.int32)
    nranks = max(prog.ranks, int(rank.max()) + 1 if n else 0)
    perm = _position_major(rank, nranks).astype(np.int32)  # node ids fit int32 (checked by the engine)
    inv = np.empty(n, dtype=np.int32)
    inv[perm] = np.arange(n, dtype=np.int32)

    kinds = prog.kind_array()
    chan, nchan = channels(prog)
    # an unaware message's delay depends on (src, dst, size) only, so it is a property of its channel
    chan_delay = np.zeros(nchan, dtype=np.int64)
    if delays is not None and nchan:
        sends = np.flatnonzero(kinds == K_SEND)
        chan_delay[chan[sends]] = np.asarray(delays, dtype=np.int64)
    chan = chan.astype(np.int32)  # held to the end: narrowed now (channel ids < node count < 2^31)
    # the feeder's view: distinct parents, children in child-set order, roots in issue order
    feeder = prog.acq is None  # workloads (ASTRA-sim's Workload layer) keep file order
    if feeder:
        sp, si, indeg, roots_p, free0 = feeder_program(prog)
    else:
        sp = np.asarray(prog.succ_ptr, dtype=np.int64)
        si = np.asarray(prog.succ_idx)
        indeg = np.asarray(prog.indeg)
        roots_p = np.flatnonzero(indeg == 0)
        free0 = []
    roots = inv[roots_p]  # ranks ascending, each in its free set's order
    indeg_e = _append(indeg[perm], 0, np.int32)
    indeg_e[roots] = 1  # they wait for the virtual start node

    # successors: engine node e's list is its program node's list, renumbered, same order;
    # the start node's list (last) is the roots
    cnt = np.diff(sp).astype(np.int32)[perm]  # successors per node: int32 like the node ids
    new_sp = np.zeros(n + 2, dtype=np.int64)
    np.cumsum(cnt, out=new_sp[1:-1])
    nedges = int(new_sp[n])
    new_sp[n + 1] = nedges + roots.size
    new_si = np.empty(nedges + roots.size, dtype=np.int32)
    # a block of engine nodes at a time: the int64 gather index then costs a block, not 16 bytes
    # an edge on top of everything else (it was the peak of a whole simulation; issue #19)
    for b in range(0, n, _BLOCK):
        e = min(b + _BLOCK, n)
        lo, hi = int(new_sp[b]), int(new_sp[e])
        if hi > lo:
            gather = np.repeat(sp[:-1][perm[b:e]] - new_sp[b:e], cnt[b:e])
            gather += np.arange(lo, hi, dtype=np.int64)
            new_si[lo:hi] = inv[si[gather]]
    del cnt, sp, si, indeg  # the feeder's program-ordered copies: the engine's are built
    new_si[nedges:] = roots

    kind_e = _append(kinds[perm], K_NOP, np.int8)
    dur_e = np.zeros(n + 1, dtype=np.int64)
    np.take(np.frombuffer(prog.dur, dtype=np.int64), perm, out=dur_e[:n])
    dur_e[kind_e != K_COMP] = 0
    res = prog.acq is not None and prog.rel is not None
    return Layout(
        perm=perm,
        inv=inv,
        kind=kind_e,
        chan=_append(chan[perm], -1, np.int32),
        nchan=nchan,
        dur=dur_e,
        chan_delay=chan_delay,
        succ_ptr=new_sp,
        succ_idx=new_si,
        indeg=indeg_e,
        start=n,
        rank=_append(rank[perm], 0, np.int32),
        nranks=nranks,
        free0=free0,
        feeder=feeder,
        acq=_append(np.asarray(prog.acq, dtype=np.int8)[perm], 0, np.int8) if res else None,
        rel=_append(np.asarray(prog.rel, dtype=np.int8)[perm], 0, np.int8) if res else None,
    )
