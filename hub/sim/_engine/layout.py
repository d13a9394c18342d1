"""The engine's memory layout of a program: compact numpy node columns, renumbered.

The engine touches a handful of per-node columns for every node it walks. Program nodes are
numbered rank-major, but a collective advances all ranks in lock-step: at any moment the engine
works on the same positions of every rank, which rank-major numbering scatters across memory
(one cache miss per column per node). The layout renumbers nodes position-major (engine node
``e`` = position ``p`` of rank ``r`` in (p, r) order), so the nodes of one step sit together.
Successor lists are in the order of the feeder's child sets and the initially ready nodes in
its issue order (ranks ascending), both from :mod:`hub.sim._engine.feeder`; the renumbering changes no
result; results are mapped back with :meth:`Layout.to_program`.

One virtual node is appended (engine node ``n``, a zero-time no-op): the start of the walk. Its
successors are the dependency-free nodes in issue order, so the engine starts by completing it
and needs no separate code path for the initial issue.

Every column is a C-contiguous numpy array of the dtype the native engine reads
(``hub/_native/_sim.c``): int8 kinds, int32 node ids, channels and ranks, int64 times; about 37
bytes per node (COMP durations only touch memory where there are COMPs). What a message channel
fixes (its unaware delay, and the aware model's size and route) is stored per channel. The
gathering is one C pass (``_sim.layout``, in ``hub/_native/_sim_prep.c``).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .feeder import feeder_program
from .program import BLOCK, K_SEND, Program, channels

__all__ = ["DelayFn", "Layout", "channel_pairs", "layout"]

#: the unaware model: per message (src, dst, size arrays) its delay in ns
DelayFn = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


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
    chan_first: np.ndarray | None = None  # int32 per channel: its first program node (stands for its key)
    fkey: np.ndarray | None = None  # workloads: per engine node its feeder (Program.fkey), -1: none

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


def _renumbering(rank: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(perm, inv), int32: the position-major permutation and its inverse. Ranks of equal length
    (rank-major program): both in closed form, written in order (``inv[r, p] = p * nranks + r``),
    instead of an int64 permutation, its int32 copy and a scatter."""
    n, nranks = rank.size, counts.size
    if n and int(counts.min()) == int(counts.max()) and n < 1 << 31 and _ascending(rank):
        length = int(counts[0])
        pm = np.empty((length, nranks), dtype=np.int32)
        np.add(
            np.arange(length, dtype=np.int32)[:, None], (np.arange(nranks, dtype=np.int32) * length)[None, :], out=pm
        )
        im = np.empty((nranks, length), dtype=np.int32)
        np.add(np.arange(length, dtype=np.int32)[None, :] * nranks, np.arange(nranks, dtype=np.int32)[:, None], out=im)
        return pm.ravel(), im.ravel()
    perm = _position_major(rank, counts).astype(np.int32)  # node ids fit int32 (checked by the engine)
    inv = np.empty(n, dtype=np.int32)
    inv[perm] = np.arange(n, dtype=np.int32)
    return perm, inv


def _ascending(rank: np.ndarray) -> bool:
    """Whether ``rank`` never decreases (scanned block by block)."""
    last = rank.size - 1
    return all(
        bool((rank[lo + 1 : min(lo + BLOCK, last) + 1] >= rank[lo : min(lo + BLOCK, last)]).all())
        for lo in range(0, last, BLOCK)
    )


def _position_major(rank: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Permutation listing nodes by (position within their rank, rank); ``counts``: nodes per rank."""
    n, nranks = rank.size, counts.size
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


def _i32(a: Any) -> np.ndarray:
    """``a`` as a contiguous int32 numpy array (no copy when it already is one)."""
    return np.ascontiguousarray(np.asarray(a), dtype=np.int32)


def _append(a: np.ndarray, value: int, dtype: Any) -> np.ndarray:
    """``a`` as ``dtype`` with one more element (the start node's) at the end."""
    out = np.empty(a.size + 1, dtype=dtype)
    out[:-1] = a
    out[-1] = value
    return out


def channel_pairs(prog: Program, chan_first: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(src, dst) NPU of each channel (int32), from the channel's first node."""
    send = prog.kind_array()[chan_first] == K_SEND  # a RECV's key names its peer as the source
    rank = np.frombuffer(prog.rank, dtype=np.int32)[chan_first]
    peer = np.frombuffer(prog.peer, dtype=np.int32)[chan_first]
    return np.where(send, rank, peer), np.where(send, peer, rank)


def _channel_delays(prog: Program, chan_first: np.ndarray, delay: DelayFn | None) -> np.ndarray:
    """Unaware message delay (ns) per channel: it depends on (src, dst, size) only, all three part of
    the channel's key, so it is computed once per channel from the channel's first node."""
    if delay is None or not chan_first.size:
        return np.zeros(chan_first.size, dtype=np.int64)
    src, dst = channel_pairs(prog, chan_first)
    return np.ascontiguousarray(delay(src, dst, np.frombuffer(prog.size, dtype=np.int64)[chan_first]), np.int64)


def layout(prog: Program, delay: DelayFn | None = None) -> Layout:
    """Lay ``prog`` out for the engine (``delay``: the unaware model's delay in ns of messages
    (src, dst, size), arrays in, or None)."""
    from ..._native import load_sim

    if prog.succ_ptr is None:
        raise RuntimeError("this program was run already (the engine consumes its dependencies); build it again")
    n = prog.n
    rank = np.frombuffer(prog.rank, dtype=np.int32)
    nranks = max(prog.ranks, int(rank.max()) + 1 if n else 0)
    counts = np.bincount(rank, minlength=nranks)
    perm, inv = _renumbering(rank, counts)
    offsets = np.zeros(nranks + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    chan, nchan, chan_first = channels(prog)
    chan_delay = _channel_delays(prog, chan_first, delay)
    # the feeder's view: distinct parents, children in child-set order, roots in issue order
    feeder = prog.acq is None  # workloads (ASTRA-sim's Workload layer) keep file order
    if feeder:
        sp, si, indeg, roots_p, free0 = feeder_program(prog, counts)
    else:
        sp = np.asarray(prog.succ_ptr, dtype=np.int64)
        si = np.asarray(prog.succ_idx)
        indeg = np.asarray(prog.indeg)
        roots_p = np.flatnonzero(indeg == 0)
        free0 = []
    # one pass in C: every column gathered into engine order, successor lists renumbered; the
    # start node's list (last) is the roots (ranks ascending, each in its free set's order)
    nedges = int(sp[n])
    kind_e = np.empty(n + 1, dtype=np.int8)
    chan_e = np.empty(n + 1, dtype=np.int32)
    dur_e = np.zeros(n + 1, dtype=np.int64)  # calloc'd: only COMPs' pages are ever touched
    rank_e = np.empty(n + 1, dtype=np.int32)
    indeg_e = np.empty(n + 1, dtype=np.int32)
    sp_e = np.empty(n + 2, dtype=np.int64)
    si_e = np.empty(nedges + len(roots_p), dtype=np.int32)
    load_sim().layout(
        offsets,
        inv,
        _i32(prog.kind_array()),
        chan,
        np.frombuffer(prog.dur, dtype=np.int64),
        rank,
        np.ascontiguousarray(sp, dtype=np.int64),
        _i32(si),
        _i32(indeg),
        np.ascontiguousarray(roots_p, dtype=np.int64),
        kind_e,
        chan_e,
        dur_e,
        rank_e,
        indeg_e,
        sp_e,
        si_e,
        feeder or prog.fkey is not None,  # lists of two children in the feeder's order: reversed
    )
    del chan, sp, si, indeg  # the program-order copies: freed before the walk
    res = prog.acq is not None and prog.rel is not None
    return Layout(
        perm=perm,
        inv=inv,
        kind=kind_e,
        chan=chan_e,
        nchan=nchan,
        dur=dur_e,
        chan_delay=chan_delay,
        succ_ptr=sp_e,
        succ_idx=si_e,
        indeg=indeg_e,
        start=n,
        rank=rank_e,
        nranks=nranks,
        free0=free0,
        feeder=feeder or prog.fkey is not None,
        fkey=_append(np.asarray(prog.fkey, dtype=np.int32)[perm], -1, np.int32) if prog.fkey is not None else None,
        acq=_append(np.asarray(prog.acq, dtype=np.int8)[perm], 0, np.int8) if res else None,
        rel=_append(np.asarray(prog.rel, dtype=np.int8)[perm], 0, np.int8) if res else None,
        chan_first=chan_first,
    )
