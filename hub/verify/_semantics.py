"""Level "semantics": initial symbolic buffers and the collectives' postconditions."""

from __future__ import annotations

import numpy as np

from ..chakra import AlgorithmMeta, Collective
from ._layout import comm_order, comm_rank_of, layout_of
from ._report import ProblemSink
from ._values import Codec

__all__ = ["buffer_bases", "check_postcondition", "expected_output", "initial_memory"]


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


def expected_output(meta: AlgorithmMeta, codec: Codec, r: int) -> list[int] | None:
    """What rank (rank file) r's output buffer must hold, or None if it is unconstrained.

    With a communicator order (remap transform), communicator rank q lives in rank file
    ``order[q]``: rank file r plays communicator rank ``inv[r]``, and ``in[q]`` below means the
    input of rank file ``order[q]``.
    """
    n, c = meta.ranks, meta.collective
    order = comm_order(meta) or list(range(n))
    me = comm_rank_of(meta)[r]
    ALL = (1 << n) - 1
    out = meta.out_chunks
    mk = codec.make
    root = order[meta.root] if 0 <= meta.root < n else -1
    if c == Collective.ALLREDUCE:
        return [mk(ALL, j) for j in range(out)]
    if c == Collective.ALLGATHER or (c == Collective.GATHER and r == root):
        k = meta.in_chunks
        return [mk(1 << order[x // k], x % k) for x in range(out)]
    if c == Collective.REDUCESCATTER:
        return [mk(ALL, me * out + j) for j in range(out)]
    if c == Collective.ALLTOALL:
        k = meta.in_chunks // n
        return [mk(1 << order[x // k], me * k + x % k) for x in range(out)]
    if c == Collective.BROADCAST:
        return [mk(1 << root, j) for j in range(out)]
    if c == Collective.REDUCE and r == root:
        return [mk(ALL, j) for j in range(out)]
    if c == Collective.SCATTER:
        return [mk(1 << root, me * out + j) for j in range(out)]
    return None


def check_postcondition(
    meta: AlgorithmMeta, codec: Codec, mem: list[list[int]], base: np.ndarray, sink: ProblemSink
) -> None:
    for r in range(meta.ranks):
        want = expected_output(meta, codec, r)
        if want is None:
            continue
        b = int(base[r, 1])
        got = mem[r][b : b + meta.out_chunks]
        if got == want:
            continue
        for j, (g, w) in enumerate(zip(got, want, strict=False)):
            if g != w:
                if sink.full:  # only count; formatting millions of values would be wasted
                    sink.total += 1
                else:
                    sink.add(f"output chunk {j} holds {codec.describe(g)}, expected {codec.expected(w)}", r)
