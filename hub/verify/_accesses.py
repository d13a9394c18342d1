"""The chunk accesses of the race check (:mod:`._races`), batch by batch of ranks.

A node only touches its own rank's memory (a SEND reads, a RECV writes, a COMP does both on its
rank), so rank r's addresses ``r * M + x`` are touched by rank r's nodes alone, and the nodes of
ranks ``[r0, r1)`` are the contiguous global indices ``offsets[r0] .. offsets[r1]``. The race
check therefore sorts the accesses of one batch of ranks at a time (:func:`batches` bounds a
batch by :data:`BATCH_ACCESSES`): its memory is that of a batch, not of every access at once
(268M accesses, ~30 bytes each, for the 7.8M-node 8192-rank hierarchical all-reduce).

An access is a *range* of chunks, not one chunk: a node names its chunks as (offset, count), so
each rank's memory is cut at the ends of the ranges its nodes touch into elementary segments
(maximal runs of chunks that every access covers wholly or not at all), and an access is one
entry per segment it covers. Two accesses share a chunk exactly when they share a segment, and
all chunks of a segment see the same accesses, so the races are those of the per-chunk check;
``span`` carries each segment's length for the counts in the report. A halving-doubling step
touches nested windows around the rank's own block, so a rank has O(log n) segments and the
check costs O(nodes log n) instead of O(n) chunk accesses per rank: 1.07G accesses for the
16,384-rank all-reduce, where the segments need a few million.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..chakra import NodeType, Op
from ._flat import Flat, ragged_arange

__all__ = ["BATCH_ACCESSES", "Accesses", "accesses", "all_pair_queries", "batches", "index_type", "neighbour_queries"]

_SEND, _RECV, _COMP = int(NodeType.SEND), int(NodeType.RECV), int(NodeType.COMP)
_COPY, _REDUCE = int(Op.COPY), int(Op.REDUCE)

#: accesses (chunk x node) of one batch of ranks, about 40 bytes each while a batch is sorted and
#: queried; a rank with more accesses forms a batch of its own
BATCH_ACCESSES = 1 << 22
#: nodes whose access counts are summed at once (bounds the temporaries of :func:`batches`)
_COUNT_BLOCK = 1 << 22
#: a group of accesses to one chunk is checked pair by pair (every race named) up to this size,
#: and up to this many pairs in all
ALL_PAIRS_GROUP = 64
ALL_PAIRS_TOTAL = 100_000


def index_type(n: int) -> type[np.signedinteger]:
    """int32 for indices below 2^31, else int64."""
    return np.int32 if n < 2**31 else np.int64


def _sides(f: Flat, a: int, b: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, bool]]:
    """Per side (reads, writes) of nodes a..b: the local node indices, their buffer, offset and
    chunk count (> 0), and whether the side writes."""
    kind, op = f.kind[a:b], f.op[a:b]
    cnt = f.count[a:b]
    data_comp = (kind == _COMP) & ((op == _COPY) | (op == _REDUCE))
    out = []
    for mask, buf, off, w in (
        ((kind == _SEND) | data_comp, f.src_buf, f.src_off, False),
        ((kind == _RECV) | data_comp, f.dst_buf, f.dst_off, True),
    ):
        v = np.flatnonzero(mask & (cnt > 0))
        out.append((v, buf[a:b][v], off[a:b][v], cnt[v], w))
    return out


def batches(f: Flat, limit: int | None = None) -> list[tuple[int, int]]:
    """Consecutive rank ranges [r0, r1) of at most ``limit`` (default :data:`BATCH_ACCESSES`)
    accesses each (a single larger rank alone), covering every rank."""
    limit = BATCH_ACCESSES if limit is None else limit
    R = int(f.offsets.shape[0]) - 1
    per_rank = np.zeros(R, dtype=np.int64)
    for a in range(0, f.n, _COUNT_BLOCK):
        b = min(f.n, a + _COUNT_BLOCK)
        for v, _, _, c, _ in _sides(f, a, b):
            # bincount sums in float64: exact below 2^53 accesses
            per_rank += np.bincount(f.rank[a:b][v], weights=c, minlength=R).astype(np.int64)
    out: list[tuple[int, int]] = []
    r0, total = 0, 0
    for r, k in enumerate(per_rank.tolist()):
        if total and total + k > limit:
            out.append((r0, r))
            r0, total = r, 0
        total += k
    if R:
        out.append((r0, R))
    return out


@dataclass
class Accesses:
    """Accesses of one batch, one per node and segment (see the module docstring), sorted by
    (address, level, node); a node touches a segment once (a node that reads and writes it counts
    as writing it). ``node`` and ``addr`` are global (node index, ``rank * M + flat address`` of
    the segment's first chunk)."""

    node: np.ndarray
    addr: np.ndarray
    write: np.ndarray  # bool
    group: np.ndarray  # index of the first access of the same segment
    span: np.ndarray  # chunks of the segment


def accesses(f: Flat, base: np.ndarray, level: np.ndarray, M: int, r0: int, r1: int) -> Accesses:
    """The accesses of ranks [r0, r1) (rank r's chunk at flat address x is the global address
    ``r * M + x``); sorted with local node indices and addresses, which keeps the sort key narrow."""
    a, b = int(f.offsets[r0]), int(f.offsets[r1])
    lo_addr = r0 * M
    sides = []  # per side: (local nodes, first local address, chunk count, writes)
    for v, buf, off, c, w in _sides(f, a, b):
        rk = f.rank[a:b][v].astype(np.int64)
        start = (rk - r0) * M + base[rk, np.clip(buf.astype(np.int64), 0, 2)] + off.astype(np.int64)
        sides.append((v, start, c.astype(np.int64), w))
    bounds, sides = _segments(sides)
    node, seg, write = _sorted(sides, level[a:b], b - a)
    keep = np.ones(node.shape[0], dtype=bool)
    keep[1:] = (seg[1:] != seg[:-1]) | (node[1:] != node[:-1])  # the write sorts first
    node, seg, write = node[keep], seg[keep], write[keep]
    del keep
    it = index_type(max(f.n, 1))
    node = node.astype(it) + it(a)
    seg = seg.astype(np.int64)
    addr = bounds[seg] + lo_addr
    span = (bounds[seg + 1] - bounds[seg]).astype(index_type(max(M, 1)))
    del seg
    idx = np.arange(node.shape[0], dtype=index_type(node.shape[0]))
    new = np.ones(node.shape[0], dtype=bool)
    new[1:] = addr[1:] != addr[:-1]
    group = np.maximum.accumulate(np.where(new, idx, 0)) if idx.shape[0] else idx
    return Accesses(node, addr, write, group, span)


def _segments(
    sides: list[tuple[np.ndarray, np.ndarray, np.ndarray, bool]],
) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray, np.ndarray, bool]]]:
    """The elementary segments of the sides' chunk ranges (see the module docstring): their
    sorted boundaries, and the sides with each range as (first segment, segments covered)."""
    ends = [s for _, s, _, _ in sides] + [s + c for _, s, c, _ in sides]
    bounds = np.unique(np.concatenate(ends)) if ends else np.zeros(0, np.int64)
    out = []
    for v, s, c, w in sides:
        first = np.searchsorted(bounds, s)
        out.append((v, first, np.searchsorted(bounds, s + c) - first, w))
    return bounds.astype(np.int64), out


def _sorted(
    sides: list[tuple[np.ndarray, np.ndarray, np.ndarray, bool]], level: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The accesses of ``sides`` (per side: nodes, first address, address count, whether they
    write; the addresses are segment indices) one per address, sorted by (address, level, node,
    write first). The four fit one int64 key whenever their bit widths sum to at most 63 (a
    1024-rank ring needs 58); one sort of that key, built side by side, costs a fraction of a
    four-key lexsort and of its index arrays."""
    top = max((int((s + c).max()) for _, s, c, _ in sides if s.shape[0]), default=0)
    wa, wl, wn = (max(x, 1).bit_length() for x in (top, int(level.max(initial=0)), n - 1))
    if wa + wl + wn + 1 > 63:
        node = np.concatenate([np.repeat(v, c) for v, _, c, _ in sides])
        addr = np.concatenate([ragged_arange(s, c) for _, s, c, _ in sides])
        write = np.concatenate([np.full(int(c.sum()), w) for _, _, c, w in sides])
        o = np.lexsort((~write, node, level[node], addr))
        return node[o], addr[o], write[o]
    keys = []
    while sides:
        v, start, c, w = sides.pop(0)  # each side's tables go as soon as its keys are built
        nodes = np.repeat(v.astype(np.int64), c)
        key = ragged_arange(start, c)
        del v, start, c
        key <<= wl + wn + 1
        key |= level[nodes].astype(np.int64) << (wn + 1)
        key |= nodes << 1
        del nodes
        if not w:
            key |= 1  # a write (0) sorts before a read (1) of the same node
        keys.append(key)
        del key
    key = np.concatenate(keys) if keys else np.zeros(0, np.int64)
    del keys
    key.sort()
    write = (key & 1) == 0
    it = index_type(max(n, 1 << wa))
    node = ((key >> 1) & ((1 << wn) - 1)).astype(it)
    addr = (key >> (wl + wn + 1)).astype(it)
    return node, addr, write


def neighbour_queries(acc: Accesses) -> tuple[np.ndarray, np.ndarray]:
    """Access index pairs (i, j), i before j, whose order implies the order of all conflicts:
    every access after the previous write, and every read before the next write."""
    A = acc.node.shape[0]
    if A == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    it = index_type(A + 1)  # access indices (and A) in 32 bits when they fit: half the memory
    idx = np.arange(A, dtype=it)
    starts = np.flatnonzero(acc.group == idx).astype(it)
    end = np.repeat(np.append(starts[1:], it(A)), np.diff(np.append(starts, it(A))))  # group's end
    del starts
    pw = np.empty(A, dtype=it)  # the previous write before each access (-1: none)
    pw[0] = -1
    pw[1:] = np.maximum.accumulate(np.where(acc.write, idx, it(-1)))[:-1]
    a1 = np.flatnonzero(pw >= acc.group).astype(it)
    qi1 = pw[a1]
    del pw
    nw = np.empty(A, dtype=it)  # the next write after each access (A: none)
    nw[-1] = A
    nw[:-1] = np.minimum.accumulate(np.where(acc.write, idx, it(A))[::-1])[::-1][1:]
    del idx
    a2 = np.flatnonzero(~acc.write & (nw < end)).astype(it)
    return np.concatenate([qi1, a2]), np.concatenate([a1, nw[a2]])


def all_pair_queries(acc: Accesses, groups: np.ndarray, used: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Every conflicting pair inside the given address groups (first access indices), for
    groups of at most :data:`ALL_PAIRS_GROUP` accesses and :data:`ALL_PAIRS_TOTAL` pairs in all,
    ``used`` of them taken by earlier batches (beyond that the neighbouring pairs already name
    every racing access)."""
    qi: list[int] = []
    qj: list[int] = []
    ends = np.searchsorted(acc.group, groups, side="right").tolist()
    write = acc.write
    for g, e in zip(groups.tolist(), ends, strict=False):
        if e - g > ALL_PAIRS_GROUP:
            continue
        if used + len(qi) > ALL_PAIRS_TOTAL:
            break
        w = write[g:e].tolist()
        for i in range(e - g):
            for j in range(i + 1, e - g):
                if w[i] or w[j]:
                    qi.append(g + i)
                    qj.append(g + j)
    return np.asarray(qi, dtype=np.int64), np.asarray(qj, dtype=np.int64)
