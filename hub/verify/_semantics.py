"""Level "semantics": initial symbolic buffers and the collectives' postconditions."""

from __future__ import annotations

import numpy as np

from ..chakra import AlgorithmMeta, Collective
from ._fast import Slots
from ._layout import comm_order, comm_rank_of, layout_of
from ._report import ProblemSink
from ._values import Codec

__all__ = [
    "buffer_bases",
    "check_postcondition",
    "check_postcondition_slots",
    "expected_output",
    "expected_sources",
    "initial_memory",
]


def initial_memory(meta: AlgorithmMeta, codec: Codec) -> tuple[list[list[int]], np.ndarray]:
    """Per-rank flat memories (input chunk i of rank q holds in[q][i]; everything else is
    uninitialised) and the (ranks, 3) table of buffer base addresses, aliasing applied."""
    mem: list[list[int]] = []
    base = np.zeros((meta.ranks, 3), dtype=np.int64)
    for r in range(meta.ranks):
        lay = layout_of(meta, r)
        m = [0] * lay.size
        hi = codec.make(1 << r, 0)
        m[lay.in_base : lay.in_base + meta.in_chunks] = [hi | i for i in range(meta.in_chunks)]
        mem.append(m)
        base[r] = (lay.in_base, lay.out_base, lay.scratch_base)
    return mem, base


def buffer_bases(meta: AlgorithmMeta) -> np.ndarray:
    """The (ranks, 3) table of buffer base addresses of :func:`initial_memory`, alone."""
    base = np.zeros((meta.ranks, 3), dtype=np.int64)
    for r in range(meta.ranks):
        lay = layout_of(meta, r)
        base[r] = (lay.in_base, lay.out_base, lay.scratch_base)
    return base


def expected_sources(meta: AlgorithmMeta, r: int) -> tuple[np.ndarray, np.ndarray] | None:
    """What rank (rank file) r's output buffer must hold, or None if it is unconstrained: per
    output chunk, the input chunk index and the rank file contributing it (-1: the sum over all
    ranks).

    With a communicator order (remap transform), communicator rank q lives in rank file
    ``order[q]``: rank file r plays communicator rank ``inv[r]``, and ``in[q]`` below means the
    input of rank file ``order[q]``.
    """
    n, c = meta.ranks, meta.collective
    order = np.asarray(comm_order(meta) or range(n), dtype=np.int64)
    me = comm_rank_of(meta)[r]
    out = meta.out_chunks
    j = np.arange(out, dtype=np.int64)
    ALL = np.full(out, -1, dtype=np.int64)
    root = int(order[meta.root]) if 0 <= meta.root < n else -1
    if c == Collective.ALLREDUCE or (c == Collective.REDUCE and r == root):
        return j, ALL
    if c == Collective.ALLGATHER or (c == Collective.GATHER and r == root):
        k = meta.in_chunks
        return j % k, order[j // k]
    if c == Collective.REDUCESCATTER:
        return me * out + j, ALL
    if c == Collective.ALLTOALL:
        k = meta.in_chunks // n
        return me * k + j % k, order[j // k]
    if c == Collective.BROADCAST:
        return j, np.full(out, root, dtype=np.int64)
    if c == Collective.SCATTER:
        return me * out + j, np.full(out, root, dtype=np.int64)
    return None


def expected_output(meta: AlgorithmMeta, codec: Codec, r: int) -> list[int] | None:
    """:func:`expected_sources` as the walk's packed values."""
    want = expected_sources(meta, r)
    if want is None:
        return None
    ALL = (1 << meta.ranks) - 1
    mk = codec.make
    return [mk(ALL if w < 0 else 1 << w, i) for i, w in zip(want[0].tolist(), want[1].tolist(), strict=True)]


def check_postcondition(
    meta: AlgorithmMeta, codec: Codec, mem: list[list[int]], base: np.ndarray, sink: ProblemSink
) -> None:
    """Compare every rank's output (the Python walk's memories) with the postcondition."""
    for r in range(meta.ranks):
        want = expected_output(meta, codec, r)
        if want is not None:
            b = int(base[r, 1])
            _report_rank(meta, codec, r, mem[r][b : b + meta.out_chunks], want, sink)


def check_postcondition_slots(
    meta: AlgorithmMeta, codec: Codec, mem: Slots, base: np.ndarray, sink: ProblemSink
) -> None:
    """:func:`check_postcondition` on the C walk's memories, all ranks at once in numpy; a rank
    that differs is unpacked to the walk's values and worded exactly as there."""
    R, out, M = meta.ranks, meta.out_chunks, mem.M
    wants = [(r, expected_sources(meta, r)) for r in range(R)]
    ranks = [r for r, w in wants if w is not None]
    if not ranks or not out:
        return
    idx = np.concatenate([w[0] for _, w in wants if w is not None])
    who = np.concatenate([w[1] for _, w in wants if w is not None])
    rk = np.asarray(ranks, dtype=np.int64)
    slot = np.repeat(rk * M + base[rk, 1], out) + np.tile(np.arange(out, dtype=np.int64), rk.shape[0])
    bad = mem.index[slot] != idx
    if mem.ids:
        _report_ids(meta, codec, mem, base, ranks, slot, who, bad, sink)
        return
    words = mem.mask.shape[1]
    contiguous = slot.shape[0] == mem.index.shape[0] and bool((slot == np.arange(slot.shape[0])).all())
    rows = mem.mask if contiguous else mem.mask[slot]  # whole rows, read in order
    full = np.zeros(words, dtype=np.uint64)  # the bitset of all ranks
    full[: R >> 6] = np.uint64(0xFFFFFFFFFFFFFFFF)
    if R & 63:
        full[R >> 6] = np.uint64((1 << (R & 63)) - 1)
    every = who < 0
    if every.all():
        bad |= ~(rows == full).all(axis=1)
    else:
        bad[every] |= ~(rows[every] == full).all(axis=1)
        one = np.flatnonzero(~every)
        want = np.zeros((one.shape[0], words), dtype=np.uint64)  # one contributor: one bit
        want[np.arange(one.shape[0]), who[one] >> 6] = np.uint64(1) << (who[one] & 63).astype(np.uint64)
        bad[one] |= ~(rows[one] == want).all(axis=1)
    del rows
    if not bad.any():
        return
    width, W, frm = words * 8, codec.W, int.from_bytes
    for i in np.unique(np.flatnonzero(bad) // out).tolist():
        r = ranks[i]
        s = r * M + int(base[r, 1])
        raw = mem.mask[s : s + out].tobytes()
        got = [
            (frm(raw[j * width : (j + 1) * width], "little") << W) | x if x >= 0 else 0
            for j, x in enumerate(mem.index[s : s + out].tolist())
        ]
        _report_rank(meta, codec, r, got, expected_output(meta, codec, r) or [], sink)


def _report_ids(
    meta: AlgorithmMeta,
    codec: Codec,
    mem: Slots,
    base: np.ndarray,
    ranks: list[int],
    slot: np.ndarray,
    who: np.ndarray,
    bad: np.ndarray,
    sink: ProblemSink,
) -> None:
    """:func:`check_postcondition_slots` where each slot holds one rank id (``mem.ids``): a sum
    over all ranks (who -1) is one rank only on a single-rank algorithm."""
    R, out, M = meta.ranks, meta.out_chunks, mem.M
    bad |= mem.mask[slot, 0].astype(np.int64) != np.where(who < 0, 0 if R == 1 else -2, who)
    if not bad.any():
        return
    W = codec.W
    for i in np.unique(np.flatnonzero(bad) // out).tolist():
        r = ranks[i]
        s = r * M + int(base[r, 1])
        got = [
            ((1 << int(c)) << W) | x if x >= 0 else 0
            for x, c in zip(mem.index[s : s + out].tolist(), mem.mask[s : s + out, 0].tolist(), strict=True)
        ]
        _report_rank(meta, codec, r, got, expected_output(meta, codec, r) or [], sink)


def _report_rank(meta: AlgorithmMeta, codec: Codec, r: int, got: list[int], want: list[int], sink: ProblemSink) -> None:
    if got == want:
        return
    for j, (g, w) in enumerate(zip(got, want, strict=False)):
        if g != w:
            if sink.full:  # only count; formatting millions of values would be wasted
                sink.total += 1
            else:
                sink.add(f"output chunk {j} holds {codec.describe(g)}, expected {codec.expected(w)}", r)
