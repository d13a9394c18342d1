"""Recursive halving / doubling (``hub.halving_doubling``), Rabenseifner style.

One chunk per rank block (per active rank for a folded all-reduce). Reduce-scatter by recursive halving: at distance
d = n/2, n/4, ..., 1 rank r exchanges with r XOR d, sends the half of its current window that does
not contain block r and reduces the other half; after log2(n) steps it holds the sum of block r.
All-gather by recursive doubling: at distance d = 1, 2, ..., n/2 rank r sends its window of d
blocks to r XOR d and receives the partner's. All-reduce is the one followed by the other.
"""

from __future__ import annotations

from dataclasses import replace

from ..chakra import Algorithm, AlgorithmMeta, Buffer, Collective, Op, RankGraphBuilder, build_algorithm
from ..errors import AlgorithmError
from ._common import VecBuilder, check_collective, check_ranks
from ._params import HalvingDoublingParams, validated

__all__ = ["HALVING_DOUBLING_COLLECTIVES", "build_halving_doubling", "halving_doubling"]

HALVING_DOUBLING_COLLECTIVES = frozenset({"allreduce", "allgather", "reducescatter"})


def halving_doubling(
    collective: str | Collective,
    ranks: int,
    *,
    reduction_comp: bool = True,
    inplace: bool = True,
) -> Algorithm:
    """Recursive halving (reduce-scatter) / doubling (all-gather) over a power-of-two rank count."""
    params = validated(
        HalvingDoublingParams, collective=collective, ranks=ranks, reduction_comp=reduction_comp, inplace=inplace
    )
    return build_halving_doubling(params)  # type: ignore[arg-type]


def build_halving_doubling(p: HalvingDoublingParams) -> Algorithm:
    coll = check_collective("halving_doubling", p.collective, HALVING_DOUBLING_COLLECTIVES)
    n = check_ranks("halving_doubling", p.ranks)
    if n & (n - 1):
        if coll == Collective.ALLREDUCE:
            return _folded_allreduce(p, n)
        lower = 1 << (n.bit_length() - 1)
        raise AlgorithmError(
            f"halving_doubling {coll.value} needs a power-of-two rank count, got {n}",
            hint=f"use {lower} or {lower * 2} ranks, or try hub.ring / hub.direct, which take any count "
            "(halving_doubling allreduce takes any count)",
        )
    vb = VecBuilder(n)
    r = vb.r
    meta = AlgorithmMeta(
        collective=coll,
        ranks=n,
        in_chunks=n,
        out_chunks=n,
        inplace=p.inplace,
        name="halving_doubling",
        producer="hub.halving_doubling",
    )
    ready: list[int] = []
    after: list[int] = []
    final_copy = False
    if coll == Collective.ALLGATHER:
        meta = replace(meta, in_chunks=1)
        buf = Buffer.OUTPUT
        if not p.inplace:
            ready = after = [vb.copy((Buffer.INPUT, 0), (Buffer.OUTPUT, r), 1)]
    elif coll == Collective.REDUCESCATTER:
        meta = replace(meta, out_chunks=1)
        buf = Buffer.INPUT
        if not p.inplace:
            meta = replace(meta, scratch_chunks=n)
            buf, final_copy = Buffer.SCRATCH, True
            ready = after = [vb.copy((Buffer.INPUT, 0), (Buffer.SCRATCH, 0), n)]
    else:
        buf = Buffer.INPUT if p.inplace else Buffer.OUTPUT
        if not p.inplace:
            ready = after = [vb.copy((Buffer.INPUT, 0), (Buffer.OUTPUT, 0), n)]

    if coll in (Collective.ALLREDUCE, Collective.REDUCESCATTER):
        lo = r * 0
        d = n // 2
        while d >= 1:
            lower = (r & d) == 0
            keep = lo + (~lower) * d  # the half that contains block r
            give = lo + lower * d
            tag = vb.new_tag()
            vb.send(r ^ d, buf, give, d, tag, deps=ready)
            rv = vb.recv(r ^ d, buf, keep, d, tag, op=Op.REDUCE, deps=after)
            after = [rv]
            ready = [vb.cost(d, deps=[rv])] if p.reduction_comp else [rv]
            lo = keep
            d //= 2
    if final_copy:
        vb.copy((Buffer.SCRATCH, r), (Buffer.OUTPUT, 0), 1, deps=sorted(set(ready) | set(after)))
    if coll in (Collective.ALLREDUCE, Collective.ALLGATHER):
        d = 1
        while d < n:
            tag = vb.new_tag()
            vb.send(r ^ d, buf, r & ~(d - 1), d, tag, deps=ready)
            rv = vb.recv(r ^ d, buf, (r ^ d) & ~(d - 1), d, tag, deps=after)
            ready = after = [rv]
            d *= 2
    return vb.build(meta)


def _folded_allreduce(p: HalvingDoublingParams, n: int) -> Algorithm:
    P = 1 << (n.bit_length() - 1)
    extra = n - P
    meta = AlgorithmMeta(
        collective=Collective.ALLREDUCE,
        ranks=n,
        in_chunks=P,
        out_chunks=P,
        inplace=p.inplace,
        name="halving_doubling",
        producer="hub.halving_doubling",
        extra=(("folded", extra),),
    )

    def new_of(r: int) -> int:  # rank among the P active ones, -1 for ranks that fold in
        if r < 2 * extra:
            return r // 2 if r % 2 else -1
        return r - extra

    def old_of(v: int) -> int:
        return 2 * v + 1 if v < extra else v + extra

    steps = P.bit_length() - 1
    fold_tag, unfold_tag = 2 * steps, 2 * steps + 1
    builders = [RankGraphBuilder(r) for r in range(n)]
    for r, b in enumerate(builders):
        v = new_of(r)
        if v < 0:  # hand the vector to r+1, get the result back
            sent = b.send(r + 1, src=(Buffer.INPUT, 0), count=P, tag=fold_tag)
            b.recv(r + 1, dst=(Buffer.INPUT if p.inplace else Buffer.OUTPUT, 0), count=P, tag=unfold_tag, deps=[sent])
            continue
        buf = Buffer.INPUT if p.inplace else Buffer.OUTPUT
        ready: list[int] = []
        if not p.inplace:
            ready = [b.comp(Op.COPY, src=(Buffer.INPUT, 0), dst=(Buffer.OUTPUT, 0), count=P)]
        if r < 2 * extra:
            rv = b.recv(r - 1, dst=(buf, 0), count=P, op=Op.REDUCE, tag=fold_tag, deps=ready)
            ready = [b.comp(Op.NONE, count=P, deps=[rv])] if p.reduction_comp else [rv]
        after = list(ready)
        lo, d, tag = 0, P // 2, 0
        while d >= 1:
            lower = (v & d) == 0
            keep, give = (lo, lo + d) if lower else (lo + d, lo)
            peer = old_of(v ^ d)
            b.send(peer, src=(buf, give), count=d, tag=tag, deps=ready)
            rv = b.recv(peer, dst=(buf, keep), count=d, op=Op.REDUCE, tag=tag, deps=after)
            after = [rv]
            ready = [b.comp(Op.NONE, count=d, deps=[rv])] if p.reduction_comp else [rv]
            lo, d, tag = keep, d // 2, tag + 1
        d = 1
        while d < P:
            peer = old_of(v ^ d)
            b.send(peer, src=(buf, v & ~(d - 1)), count=d, tag=tag, deps=ready)
            rv = b.recv(peer, dst=(buf, (v ^ d) & ~(d - 1)), count=d, tag=tag, deps=after)
            ready = after = [rv]
            d, tag = d * 2, tag + 1
        if r < 2 * extra:
            b.send(r - 1, src=(buf, 0), count=P, tag=unfold_tag, deps=ready)
    return build_algorithm(meta, builders)
