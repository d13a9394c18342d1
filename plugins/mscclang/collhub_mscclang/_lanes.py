"""Concurrency lanes for export: spread concurrent tags of one connection over channels.

In the profile, messages with different tags on one (src, dst) pair are separate FIFOs and can
be in flight at the same time (hub.chunk's pieces, an all-to-all's independent phases). An MSCCL
channel is one connection served by one threadblock, which runs its steps one after the other,
so putting such tags on one channel serializes them. Here the tags of every connection are
grouped into *lanes*: two tags share a lane only if their sends do not overlap in dependency
depth on the sending rank (one stream strictly after the other, like a ring's steps); tags that
overlap get different lanes. Channel = (base channel, lane), numbered densely.

Positional matching stays exact: each (src, dst, channel) sees a subsequence, selected by tag,
of the base channel's sequence, on which sender and receiver already agree.
"""

from __future__ import annotations

import numpy as np

from hub.chakra import Algorithm, NodeType

__all__ = ["split_lanes"]

_SEND, _RECV = int(NodeType.SEND), int(NodeType.RECV)


def _depths(alg: Algorithm) -> list[np.ndarray]:
    """Longest dependency path from a source to every node, across ranks: a RECV also waits for
    the SEND it is matched with (FIFO per (src, dst, tag), in position order). A local-only
    depth would call a ring's consecutive sends concurrent, since locally the second waits only
    for a receive. Level-synchronous Kahn in numpy (one pass per level, O(edges) in all)."""
    offs = np.concatenate([[0], np.cumsum([len(g) for g in alg.graphs])]).astype(np.int64)
    total = int(offs[-1])
    e_to: list[np.ndarray] = []
    e_from: list[np.ndarray] = []
    side: list[list[np.ndarray]] = [[], []]  # rows (src, dst, tag, global id) of SENDs / RECVs
    for r, g in enumerate(alg.graphs):
        o = int(offs[r])
        e_to.append(np.repeat(np.arange(len(g), dtype=np.int64), np.diff(g.dep_ptr)) + o)
        e_from.append(g.dep_pos.astype(np.int64) + o)
        for k, kind in ((0, _SEND), (1, _RECV)):
            m = np.flatnonzero(g.kind == kind)
            me = np.full(m.size, r, dtype=np.int64)
            pr = g.peer[m].astype(np.int64)
            src, dst = (me, pr) if k == 0 else (pr, me)
            side[k].append(np.stack([src, dst, g.tag[m].astype(np.int64), m.astype(np.int64) + o]))
    rows = [np.concatenate(x, axis=1) if x else np.zeros((4, 0), np.int64) for x in side]
    srt = [a[:, np.lexsort((a[3], a[2], a[1], a[0]))] for a in rows]
    if srt[0].shape == srt[1].shape and np.array_equal(srt[0][:3], srt[1][:3]):
        e_from.append(srt[0][3])  # every connection's k-th send meets its k-th receive
        e_to.append(srt[1][3])
    else:  # unmatched messages (a broken algorithm): pair what pairs
        recvs: dict[tuple[int, int, int], list[int]] = {}
        for a, b, t, gid in srt[1].T.tolist():
            recvs.setdefault((a, b, t), []).append(gid)
        seen: dict[tuple[int, int, int], int] = {}
        pf, pt = [], []
        for a, b, t, gid in srt[0].T.tolist():
            k_ = seen.get((a, b, t), 0)
            seen[(a, b, t)] = k_ + 1
            rr = recvs.get((a, b, t), [])
            if k_ < len(rr):
                pf.append(gid)
                pt.append(rr[k_])
        e_from.append(np.asarray(pf, dtype=np.int64))
        e_to.append(np.asarray(pt, dtype=np.int64))
    to = np.concatenate(e_to)
    frm = np.concatenate(e_from)
    indeg = np.bincount(to, minlength=total)
    order = np.argsort(frm, kind="stable")
    succ = to[order]
    ptr = np.zeros(total + 1, dtype=np.int64)
    np.cumsum(np.bincount(frm, minlength=total), out=ptr[1:])
    depth = np.zeros(total, dtype=np.int64)
    frontier = np.flatnonzero(indeg == 0)
    level = 0
    while frontier.size:  # a cycle (a broken algorithm) just leaves its nodes at depth 0
        depth[frontier] = level
        lens = ptr[frontier + 1] - ptr[frontier]
        n_out = int(lens.sum())
        if not n_out:
            break
        idx = np.repeat(ptr[frontier] - np.concatenate([[0], np.cumsum(lens)[:-1]]), lens) + np.arange(n_out)
        w, c = np.unique(succ[idx], return_counts=True)
        indeg[w] -= c
        frontier = w[indeg[w] == 0]
        level += 1
    return [depth[offs[r] : offs[r + 1]] for r in range(len(alg.graphs))]


def _color(intervals: list[tuple[int, int, int]]) -> dict[int, int]:
    """Greedy interval colouring (by start): tag -> lane; touching intervals conflict."""
    ends: list[int] = []
    lane: dict[int, int] = {}
    for lo, hi, tag in sorted(intervals):
        for k, e in enumerate(ends):
            if e < lo:
                ends[k] = hi
                lane[tag] = k
                break
        else:
            lane[tag] = len(ends)
            ends.append(hi)
    return lane


def split_lanes(alg: Algorithm, chan_of: list[list[int]]) -> list[list[int]] | None:
    """A finer channel map that keeps concurrent tags apart, or None when nothing needs it."""
    lane_of: dict[tuple[int, int, int, int], int] = {}
    nlanes = 1
    depths: list[np.ndarray] | None = None
    for r, g in enumerate(alg.graphs):
        m = np.flatnonzero(g.kind == _SEND)
        if not m.size:
            continue
        base = np.asarray(chan_of[r], dtype=np.int64)[m]
        dst = g.peer[m].astype(np.int64)
        tag = g.tag[m].astype(np.int64)
        trip = np.unique(np.stack([dst, base, tag]), axis=1)
        conn, ntags = np.unique(trip[:2], axis=1, return_counts=True)
        multi = {(int(a), int(b)) for a, b, c in zip(conn[0], conn[1], ntags, strict=False) if c > 1}
        if not multi:
            continue
        if depths is None:
            depths = _depths(alg)
        dep = depths[r][m]
        # depth span of every (dst, base, tag) stream of this rank
        _, inv = np.unique(np.stack([dst, base, tag]), axis=1, return_inverse=True)
        inv = inv.reshape(-1)
        lo = np.full(trip.shape[1], np.iinfo(np.int64).max, dtype=np.int64)
        hi = np.full(trip.shape[1], -1, dtype=np.int64)
        np.minimum.at(lo, inv, dep)
        np.maximum.at(hi, inv, dep)
        spans: dict[tuple[int, int], list[tuple[int, int, int]]] = {}
        for (d_, b_, t_), l_, h_ in zip(trip.T.tolist(), lo.tolist(), hi.tolist(), strict=False):
            if (d_, b_) in multi:
                spans.setdefault((d_, b_), []).append((l_, h_, t_))
        for (d_, b_), iv in spans.items():
            lanes = _color(iv)
            for t_, k in lanes.items():
                lane_of[(r, d_, b_, t_)] = k
            nlanes = max(nlanes, max(lanes.values()) + 1)
    if nlanes == 1:
        return None
    raw: list[list[int]] = []
    for r, g in enumerate(alg.graphs):
        kind = g.kind.tolist()
        peer = g.peer.tolist()
        tag = g.tag.tolist()
        out = []
        for p, b_ in enumerate(chan_of[r]):
            k = kind[p]
            if k == _SEND:
                ln = lane_of.get((r, peer[p], b_, tag[p]), 0)
            elif k == _RECV:
                ln = lane_of.get((peer[p], r, b_, tag[p]), 0)
            else:
                ln = 0
            out.append(b_ * nlanes + ln)
        raw.append(out)
    dense = {v: i for i, v in enumerate(sorted({v for row in raw for v in row}))}
    return [[dense[v] for v in row] for row in raw]
