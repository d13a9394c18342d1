"""The ring schedule built for all ranks at once (numpy), when every rank's node sequence has the
same shape: each primitive call makes the same number of messages on every rank. That holds for
all-gather and reduce-scatter (every rank cuts its part alike) and for all-reduce whenever a
loop's n pieces have equal slice counts (always but for some uneven last loops; the caller falls
back to the per-rank builder then).

On a channel a rank's nodes form one chain (each call waits for the previous one; a SEND for
the RECV of its slice), so the dependency arrays are the same for every rank and shared.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hub.chakra import Buffer, NodeType, Op, RankGraph

__all__ = ["ring_graphs"]


def _calls(coll: str, n: int) -> list[tuple[int, bool, bool, int]]:
    """One loop's calls: (shift, recv, send, op). All-reduce: the piece is (ix + shift) mod n;
    all-gather / reduce-scatter: the data rank is order[(ix - shift) mod n]."""
    if coll == "AllReduce":
        seq = [(n - 1, False, True, int(Op.NONE))]
        seq += [(n - j, True, True, int(Op.REDUCE)) for j in range(2, n)]
        seq += [(0, True, True, int(Op.REDUCE))]
        seq += [(n - j, True, True, int(Op.COPY)) for j in range(1, n - 1)]
        seq += [(1, True, False, int(Op.COPY))]
        return seq
    op = int(Op.COPY) if coll == "AllGather" else int(Op.REDUCE)
    extra = 0 if coll == "AllGather" else 1
    return [(j + extra, j > 0, j < n - 1, op) for j in range(n)]


def ring_graphs(
    coll: str,
    n: int,
    per_part: list[tuple[int, list[list[list[int]]]]],
    rings: list[list[int]],
    starts: np.ndarray,
    sizes: np.ndarray,
    unit: int,
    c: int,
    elem: int,
    buf: Buffer,
) -> list[RankGraph] | None:
    """Every rank's graph, or None when the shapes differ between ranks (see the module doc)."""
    calls = _calls(coll, n)
    off_of = (starts // unit).astype(np.int64)
    cnt_of = (sizes // unit).astype(np.int32)
    templates = []
    for channel, loops in per_part:
        lookups = []
        t_kind: list[int] = []
        t_shift: list[int] = []
        t_op: list[int] = []
        t_loop: list[int] = []
        t_slice: list[int] = []
        for li, pieces in enumerate(loops):
            slices = {len(x) for x in pieces}
            if len(slices) != 1:
                return None
            (s_count,) = slices
            lookups.append(np.asarray(pieces, dtype=np.int64).reshape(len(pieces), s_count))
            for shift, recv, send, op in calls:
                for sl in range(s_count):
                    if recv:
                        t_kind.append(int(NodeType.RECV))
                        t_shift.append(shift)
                        t_op.append(op)
                        t_loop.append(li)
                        t_slice.append(sl)
                    if send:
                        t_kind.append(int(NodeType.SEND))
                        t_shift.append(shift)
                        t_op.append(int(Op.NONE))
                        t_loop.append(li)
                        t_slice.append(sl)
        if t_kind:
            templates.append((channel, lookups, t_kind, t_shift, t_op, t_loop, t_slice))
    total = sum(len(t[2]) for t in templates)
    peer = np.empty((n, total), dtype=np.int32)
    tag = np.empty((n, total), dtype=np.int32)
    count = np.empty((n, total), dtype=np.int32)
    soff = np.empty((n, total), dtype=np.int32)
    doff = np.empty((n, total), dtype=np.int32)
    size = np.empty((n, total), dtype=np.int64)
    kind_row = np.empty(total, dtype=np.int8)
    op_row = np.empty(total, dtype=np.int8)
    chain_starts: list[int] = []
    at = 0
    for channel, lookups, t_kind, t_shift, t_op, t_loop, t_slice in templates:
        m = len(t_kind)
        cols = slice(at, at + m)
        order = np.asarray(rings[channel], dtype=np.int64)
        ix = np.empty(n, dtype=np.int64)
        ix[order] = np.arange(n)
        kind = np.asarray(t_kind, dtype=np.int8)
        shifts = np.asarray(t_shift, dtype=np.int64)
        is_recv = kind == int(NodeType.RECV)
        if coll == "AllReduce":
            piece = (ix[:, None] + shifts[None, :]) % n
            pad = max(x.shape[1] for x in lookups)
            table = np.zeros((len(lookups), n, pad), dtype=np.int64)
            for li, lk in enumerate(lookups):
                table[li, :, : lk.shape[1]] = lk
            rid = table[np.asarray(t_loop)[None, :], piece, np.asarray(t_slice)[None, :]]
            offs = off_of[rid]
            count[:, cols] = cnt_of[rid]
            size[:, cols] = sizes[rid] * elem
        else:
            rid1 = np.asarray([lookups[li][0][sl] for li, sl in zip(t_loop, t_slice, strict=True)], dtype=np.int64)
            offs = order[(ix[:, None] - shifts[None, :]) % n] * c + off_of[rid1][None, :]
            count[:, cols] = cnt_of[rid1][None, :]
            size[:, cols] = (sizes[rid1] * elem)[None, :]
        nxt = order[(ix + 1) % n].astype(np.int32)
        prv = order[(ix - 1) % n].astype(np.int32)
        peer[:, cols] = np.where(is_recv[None, :], prv[:, None], nxt[:, None])
        tag[:, cols] = channel
        soff[:, cols] = np.where(is_recv[None, :], -1, offs)
        doff[:, cols] = np.where(is_recv[None, :], offs, -1)
        kind_row[cols] = kind
        op_row[cols] = np.asarray(t_op, dtype=np.int8)
        chain_starts.append(at)
        at += m
    # dependencies: node i on i - 1, except the first node of each channel's chain
    has_dep = np.ones(total, dtype=bool)
    has_dep[chain_starts] = False
    dep_ptr = np.concatenate([[0], np.cumsum(has_dep)]).astype(np.int64)
    dep_pos = (np.nonzero(has_dep)[0] - 1).astype(np.int32)
    is_send = kind_row == int(NodeType.SEND)
    src_buf = np.where(is_send, int(buf), -1).astype(np.int8)
    dst_buf = np.where(is_send, -1, int(buf)).astype(np.int8)
    # columns every rank shares (read-only views, as the hub's own regular producers share them)
    ids = np.arange(total, dtype=np.int64)
    unset = np.full(total, -1, dtype=np.int64)
    no_tb = np.full(total, -1, dtype=np.int32)
    out: list[RankGraph] = []
    for r in range(n):
        kw: dict[str, Any] = {
            "kind": kind_row,
            "peer": peer[r],
            "tag": tag[r],
            "chan": tag[r],
            "count": count[r],
            "src_buf": src_buf,
            "src_off": soff[r],
            "dst_buf": dst_buf,
            "dst_off": doff[r],
            "op": op_row,
            "size": size[r],
            "ids": ids,
            "duration": unset,
            "tb": no_tb,
        }
        out.append(RankGraph.from_columns(total, dep_ptr=dep_ptr, dep_pos=dep_pos, **kw))
    return out
