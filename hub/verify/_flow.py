"""Level "semantics" at scale: the data moves of a race-free algorithm, level by level in numpy.

The walk (:mod:`._walk`) moves symbolic values one node at a time in Python, which costs a few
microseconds per node. Once the race analysis (:mod:`._races`) has shown that every two
conflicting accesses are ordered by happens-before (HB) and that the static message pairing is
the one any run takes (no unordered consecutive messages on one key), every schedule that
respects HB computes the same memory. Executing the nodes level by level (HB's longest-path
levels) is such a schedule, and inside one level no two nodes touch a common chunk where one of
them writes, so a whole level moves at once with numpy gathers and scatters.

A value here is the pair (input chunk index, set of contributing ranks); the set is a bitset of
``ceil(ranks / 64)`` uint64 words, so the check stays exact (the walk's Python ints hold the same
pair). This pass only proves the good case: on the first data error it gives up (returns None)
and the caller runs the walk, which names every error exactly as before.
"""

from __future__ import annotations

import numpy as np

from ..chakra import AlgorithmMeta, NodeType, Op
from ._flat import Flat, ragged_arange
from ._layout import layout_of
from ._values import Codec

__all__ = ["MAX_FLOW_BYTES", "flow_memory"]

_SEND, _RECV, _COMP = int(NodeType.SEND), int(NodeType.RECV), int(NodeType.COMP)
_COPY, _REDUCE = int(Op.COPY), int(Op.REDUCE)
_UNINIT = -1  # index of a slot that holds nothing yet

#: bitsets beyond this many bytes (memories plus message payloads) are not built; the walk runs
MAX_FLOW_BYTES = 1 << 30


class _State:
    """Every rank's memory as one table of slots (rank r's flat address x is slot r * M + x)."""

    def __init__(self, meta: AlgorithmMeta, M: int, words: int) -> None:
        R = meta.ranks
        self.index = np.full(R * M, _UNINIT, dtype=np.int32)
        self.mask = np.zeros((R * M, words), dtype=np.uint64)
        for r in range(R):  # input chunk i of rank r holds in[r][i], after aliasing
            a = r * M + layout_of(meta, r).in_base
            self.index[a : a + meta.in_chunks] = np.arange(meta.in_chunks, dtype=np.int32)
            self.mask[a : a + meta.in_chunks, r >> 6] = np.uint64(1) << np.uint64(r & 63)


def _slots(f: Flat, v: np.ndarray, buf: np.ndarray, off: np.ndarray, base: np.ndarray, M: int) -> np.ndarray:
    """The slots of nodes v's chunks (all of node v[0]'s, then v[1]'s, ...)."""
    rk = f.rank[v]
    start = rk * M + base[rk, np.clip(buf[v].astype(np.int64), 0, 2)] + off[v].astype(np.int64)
    return ragged_arange(start, f.count[v].astype(np.int64))


def flow_memory(
    f: Flat, meta: AlgorithmMeta, base: np.ndarray, level: np.ndarray, match: np.ndarray, codec: Codec
) -> list[list[int]] | None:
    """Per-rank memories after running ``f`` (as :func:`._semantics.initial_memory` lays them
    out, values packed by ``codec``), or None when a data error occurs or the bitsets would
    exceed :data:`MAX_FLOW_BYTES`.

    Preconditions, which the caller has established: no races, no unordered consecutive
    messages, every node levelled; ``match`` pairs each RECV with its SEND.
    """
    R = meta.ranks
    M = max(layout_of(meta, r).size for r in range(R)) if R else 0
    words = max(1, (R + 63) // 64)
    kind = f.kind
    cnt = np.maximum(f.count.astype(np.int64), 0)
    sends = np.flatnonzero(kind == _SEND)
    if (R * M + int(cnt[sends].sum())) * (words * 8 + 4) > MAX_FLOW_BYTES:
        return None
    st = _State(meta, M, words)
    # each SEND's snapshot lives in a payload table, at its own run of rows
    pay_ptr = np.zeros(f.n + 1, dtype=np.int64)
    pay_ptr[sends + 1] = cnt[sends]
    np.cumsum(pay_ptr, out=pay_ptr)
    pay_index = np.empty(int(pay_ptr[-1]), dtype=np.int32)
    pay_mask = np.empty((int(pay_ptr[-1]), words), dtype=np.uint64)
    op = f.op
    moving = ((kind == _SEND) | (kind == _RECV) | ((kind == _COMP) & ((op == _COPY) | (op == _REDUCE)))) & (cnt > 0)
    v_all = np.flatnonzero(moving)
    v_all = v_all[np.argsort(level[v_all], kind="stable")]
    lv = level[v_all]
    cuts = np.flatnonzero(np.diff(lv)) + 1
    for v in np.split(v_all, cuts):
        if not _step(f, st, v, base, M, match, pay_ptr, pay_index, pay_mask):
            return None
    return _unpack(st, R, M, codec)


def _step(
    f: Flat,
    st: _State,
    v: np.ndarray,
    base: np.ndarray,
    M: int,
    match: np.ndarray,
    pay_ptr: np.ndarray,
    pay_index: np.ndarray,
    pay_mask: np.ndarray,
) -> bool:
    """Run the moving nodes ``v`` of one level; False on a data error."""
    kind = f.kind[v]
    s = v[kind == _SEND]
    if s.shape[0]:
        src = _slots(f, s, f.src_buf, f.src_off, base, M)
        if (st.index[src] < 0).any():  # reads an uninitialised chunk
            return False
        rows = ragged_arange(pay_ptr[s], pay_ptr[s + 1] - pay_ptr[s])
        pay_index[rows] = st.index[src]
        pay_mask[rows] = st.mask[src]
    c = v[kind == _COMP]
    r = v[kind == _RECV]
    if not (c.shape[0] or r.shape[0]):
        return True
    # sources: a COMP reads its own memory, a RECV its SEND's snapshot
    csrc = _slots(f, c, f.src_buf, f.src_off, base, M)
    ms = match[r]
    rrows = ragged_arange(pay_ptr[ms], pay_ptr[ms + 1] - pay_ptr[ms])
    x_index = np.concatenate([st.index[csrc], pay_index[rrows]])
    x_mask = np.concatenate([st.mask[csrc], pay_mask[rrows]])
    if (x_index < 0).any():
        return False
    nodes = np.concatenate([c, r])
    dst = _slots(f, nodes, f.dst_buf, f.dst_off, base, M)
    red = np.repeat(f.op[nodes] == _REDUCE, f.count[nodes].astype(np.int64))
    d = dst[red]
    if d.shape[0]:
        d_index, d_mask, xm = st.index[d], st.mask[d], x_mask[red]
        # a valid combination: same chunk index, disjoint contributors (as the walk's Codec rule)
        if (d_index != x_index[red]).any() or (d_index < 0).any() or (d_mask & xm).any():
            return False
        st.mask[d] = d_mask | xm
    cp = ~red
    st.index[dst[cp]] = x_index[cp]
    st.mask[dst[cp]] = x_mask[cp]
    return True


def _unpack(st: _State, R: int, M: int, codec: Codec) -> list[list[int]]:
    """The walk's packed ints ``(mask << W) | index`` (0 where uninitialised), per rank."""
    raw = st.mask.tobytes()
    width = st.mask.shape[1] * 8
    index = st.index.tolist()
    W = codec.W
    frm = int.from_bytes
    flat = [(frm(raw[i * width : (i + 1) * width], "little") << W) | x if x >= 0 else 0 for i, x in enumerate(index)]
    return [flat[r * M : (r + 1) * M] for r in range(R)]
