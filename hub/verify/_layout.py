"""Per-collective buffer facts: shape rules, in-place aliasing and the communicator order.

Shared by the verifier (aliasing, postconditions) and the transforms (which buffers are split
into per-rank blocks). All rules follow docs/CONTRACTS.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from ..chakra import AlgorithmMeta, Buffer, Collective

__all__ = [
    "COMM_ORDER_KEY",
    "Layout",
    "comm_order",
    "comm_rank_of",
    "has_buffer_semantics",
    "layout_of",
    "rank_block",
    "shape_problems",
]

#: ``meta.extra`` key written by the remap transform: comma-separated graph rank of each
#: communicator rank (``order[q]`` = the rank file that plays communicator rank q).
COMM_ORDER_KEY = "comm_order"

_SAME = (Collective.ALLREDUCE, Collective.ALLTOALL, Collective.BROADCAST, Collective.REDUCE)
_GATHERING = (Collective.ALLGATHER, Collective.GATHER)  # input of r aliases output block r
_SCATTERING = (Collective.REDUCESCATTER, Collective.SCATTER)  # output of r aliases input block r
ROOTED = (Collective.BROADCAST, Collective.REDUCE, Collective.GATHER, Collective.SCATTER)


def has_buffer_semantics(meta: AlgorithmMeta) -> bool:
    """False for foreign files that carry no chunk/buffer information (in or out chunks 0)."""
    return meta.in_chunks > 0 and meta.out_chunks > 0


def comm_order(meta: AlgorithmMeta) -> list[int] | None:
    """The communicator order stored by the remap transform, or None for the identity."""
    order = _order(meta.extra, meta.ranks)
    return list(order) if order is not None else None


def comm_rank_of(meta: AlgorithmMeta) -> tuple[int, ...]:
    """``inv[d]``: the communicator rank played by rank file d (identity without an order)."""
    return _inverse(meta.extra, meta.ranks)


@lru_cache(maxsize=16)
def _order(extra: tuple, ranks: int) -> tuple[int, ...] | None:
    for key, value in extra:
        if key == COMM_ORDER_KEY:
            try:
                order = tuple(int(x) for x in str(value).split(","))
            except ValueError:
                return None  # reported by shape_problems
            return order if sorted(order) == list(range(ranks)) else None
    return None


@lru_cache(maxsize=16)
def _inverse(extra: tuple, ranks: int) -> tuple[int, ...]:
    order = _order(extra, ranks)
    if order is None:
        return tuple(range(ranks))
    inv = [0] * ranks
    for q, d in enumerate(order):
        inv[d] = q
    return tuple(inv)


def shape_problems(meta: AlgorithmMeta) -> list[str]:
    """Inconsistencies between the collective and the buffer sizes in ``meta``."""
    out: list[str] = []
    c, n, i, o = meta.collective, meta.ranks, meta.in_chunks, meta.out_chunks
    if c == Collective.CUSTOM or not has_buffer_semantics(meta):
        return out
    need: tuple[str, int, int] | None = None
    if c in (Collective.ALLREDUCE, Collective.BROADCAST, Collective.REDUCE, Collective.ALLTOALL):
        need = ("out_chunks = in_chunks", o, i)
    elif c in _GATHERING:
        need = (f"out_chunks = {n} x in_chunks", o, n * i)
    elif c in _SCATTERING:
        need = (f"in_chunks = {n} x out_chunks", i, n * o)
    if need is not None and need[1] != need[2]:
        out.append(
            f"{c.value} over {n} ranks needs {need[0]} = {need[2]}, but meta has {need[1]} "
            f"(in_chunks={i}, out_chunks={o})"
        )
    if c == Collective.ALLTOALL and i % n:
        out.append(f"alltoall over {n} ranks needs in_chunks divisible by {n}, got {i}")
    if c in ROOTED and not 0 <= meta.root < n:
        out.append(f"root {meta.root} is not a rank of a {n}-rank algorithm")
    for key, value in meta.extra:
        if key == COMM_ORDER_KEY:
            try:
                got = sorted(int(x) for x in str(value).split(","))
            except ValueError:
                got = []
            if got != list(range(n)):
                out.append(f"meta {COMM_ORDER_KEY}={value!r} is not a permutation of 0..{n - 1}")
    return out


def rank_block(meta: AlgorithmMeta, buf: int) -> int | None:
    """Chunks per rank block if buffer ``buf`` is laid out as one block per rank, else None.

    Rank-blocked: all-gather/gather output, reduce-scatter/scatter input, all-to-all input and
    output. Other buffers (and scratch) have no rank structure.
    """
    c, n = meta.collective, meta.ranks
    if buf == Buffer.OUTPUT and c in _GATHERING:
        return meta.in_chunks
    if buf == Buffer.INPUT and c in _SCATTERING:
        return meta.out_chunks
    if c == Collective.ALLTOALL and buf in (Buffer.INPUT, Buffer.OUTPUT) and n:
        return meta.in_chunks // n
    return None


@dataclass(frozen=True)
class Layout:
    """Where each buffer of a rank starts in one flat per-rank memory (aliasing applied)."""

    in_base: int
    out_base: int
    scratch_base: int
    size: int


def layout_of(meta: AlgorithmMeta, rank: int) -> Layout:
    """The flat memory layout of rank file ``rank``; in-place buffers overlap as CONTRACTS.md
    defines, using the rank's *communicator* rank (see :func:`comm_order`) for the block."""
    i, o, s = meta.in_chunks, meta.out_chunks, meta.scratch_chunks
    rank = comm_rank_of(meta)[rank]
    c = meta.collective
    if meta.inplace and c in _SAME:
        m = max(i, o)
        return Layout(0, 0, m, m + s)
    if meta.inplace and c in _GATHERING:
        return Layout(rank * i, 0, o, o + s)
    if meta.inplace and c in _SCATTERING:
        return Layout(0, rank * o, i, i + s)
    return Layout(0, i, i + o, i + o + s)
