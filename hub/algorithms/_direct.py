"""Direct algorithms (``hub.direct``): every rank exchanges with every other rank in one round.

One chunk per rank block. Rank r addresses its peers in the staggered order r+1, r+2, ... and
receives in the order r-1, r-2, ..., so that no rank is everybody's first target. Reductions into
one location are chained (RECV, cost COMP, next RECV) so that no two writes race.
"""

from __future__ import annotations

from dataclasses import replace

from ..chakra import Algorithm, AlgorithmMeta, Buffer, Collective, Op, RankGraphBuilder, build_algorithm
from ._common import Value, VecBuilder, check_collective, check_ranks, check_root
from ._params import DirectParams, validated

__all__ = ["DIRECT_COLLECTIVES", "build_direct", "direct"]

DIRECT_COLLECTIVES = frozenset(
    {"allreduce", "allgather", "reducescatter", "alltoall", "broadcast", "reduce", "gather", "scatter"}
)


def direct(
    collective: str | Collective,
    ranks: int,
    *,
    reduction_comp: bool = True,
    inplace: bool = True,
    root: int = 0,
) -> Algorithm:
    """A direct (all-pairs) algorithm for ``collective`` over ``ranks`` ranks."""
    params = validated(
        DirectParams, collective=collective, ranks=ranks, reduction_comp=reduction_comp, inplace=inplace, root=root
    )
    return build_direct(params)  # type: ignore[arg-type]


def build_direct(p: DirectParams) -> Algorithm:
    coll = check_collective("direct", p.collective, DIRECT_COLLECTIVES)
    n = check_ranks("direct", p.ranks)
    meta = AlgorithmMeta(
        collective=coll, ranks=n, in_chunks=1, out_chunks=1, inplace=p.inplace, name="direct", producer="hub.direct"
    )
    if coll in (Collective.BROADCAST, Collective.REDUCE, Collective.GATHER, Collective.SCATTER):
        return _rooted(p, coll, n, check_root("direct", p.root, n), meta)
    vb = VecBuilder(n)
    r = vb.r
    ins, outs = Buffer.INPUT, Buffer.OUTPUT
    if coll == Collective.ALLTOALL:
        meta = replace(meta, in_chunks=n, out_chunks=n)
        if not p.inplace:
            vb.copy((ins, r), (outs, r), 1)
        sends = [vb.send((r + d) % n, ins, (r + d) % n, 1, 0) for d in range(1, n)]
        for d in range(1, n):
            # in place the landing block is the one we send to that peer: wait for that send
            src = (r - d) % n
            vb.recv(src, outs, src, 1, 0, deps=[sends[n - d - 1]] if p.inplace else [])
        return vb.build(meta)
    if coll == Collective.ALLGATHER:
        meta = replace(meta, in_chunks=1, out_chunks=n)
        src_buf, src_off = (outs, r) if p.inplace else (ins, 0)
        if not p.inplace:
            vb.copy((ins, 0), (outs, r), 1)
        for d in range(1, n):
            vb.send((r + d) % n, src_buf, src_off, 1, 0)
        for d in range(1, n):
            vb.recv((r - d) % n, outs, (r - d) % n, 1, 0)
        return vb.build(meta)
    # allreduce / reducescatter: all-pairs reduce-scatter (rank r sums block r) ...
    scatter = coll == Collective.REDUCESCATTER
    meta = replace(meta, in_chunks=n, out_chunks=1 if scatter else n)
    own: Value  # the block this rank sums: its rank (array), or 0 in its 1-block output
    if p.inplace:
        work, own = ins, r
        start: list[int] = []
    else:
        work, own = outs, (0 if scatter else r)
        start = [vb.copy((ins, r), (outs, own), 1)]
    for d in range(1, n):
        vb.send((r + d) % n, ins, (r + d) % n, 1, 0)
    last = start
    for d in range(1, n):
        rv = vb.recv((r - d) % n, work, own, 1, 0, op=Op.REDUCE, deps=last)
        last = [vb.cost(1, deps=[rv])] if p.reduction_comp else [rv]
    if scatter:
        return vb.build(meta)
    # ... then all-pairs all-gather of the reduced blocks (tag 1 keeps the two rounds apart)
    for d in range(1, n):
        vb.send((r + d) % n, work, own, 1, 1, deps=last)
    for d in range(1, n):
        vb.recv((r - d) % n, work, (r - d) % n, 1, 1)
    return vb.build(meta)


def _rooted(p: DirectParams, coll: Collective, n: int, root: int, meta: AlgorithmMeta) -> Algorithm:
    meta = replace(meta, root=root)
    if coll == Collective.GATHER:
        meta = replace(meta, in_chunks=1, out_chunks=n)
    elif coll == Collective.SCATTER:
        meta = replace(meta, in_chunks=n, out_chunks=1)
    builders = [RankGraphBuilder(r) for r in range(n)]
    ins, outs = Buffer.INPUT, Buffer.OUTPUT
    rb = builders[root]
    others = [(root + d) % n for d in range(1, n)]
    if coll == Collective.BROADCAST:
        if not p.inplace:
            rb.comp(Op.COPY, src=(ins, 0), dst=(outs, 0), count=1)
        for q in others:
            rb.send(q, src=(ins, 0))
            builders[q].recv(root, dst=(outs, 0))
    elif coll == Collective.REDUCE:
        work = ins if p.inplace else outs
        last = [] if p.inplace else [rb.comp(Op.COPY, src=(ins, 0), dst=(outs, 0), count=1)]
        for q in others:
            builders[q].send(root, src=(ins, 0))
        for d in range(1, n):  # receive from root-1, root-2, ... (the reverse of the send order)
            rv = rb.recv((root - d) % n, dst=(work, 0), op=Op.REDUCE, deps=last)
            last = [rb.comp(Op.NONE, count=1, deps=[rv])] if p.reduction_comp else [rv]
    elif coll == Collective.GATHER:
        if not p.inplace:
            rb.comp(Op.COPY, src=(ins, 0), dst=(outs, root), count=1)
        for q in others:  # in place, rank q's input is its block q of the output
            builders[q].send(root, src=(outs, q) if p.inplace else (ins, 0))
            rb.recv(q, dst=(outs, q))
    else:  # scatter
        if not p.inplace:
            rb.comp(Op.COPY, src=(ins, root), dst=(outs, 0), count=1)
        for q in others:
            rb.send(q, src=(ins, q))
            builders[q].recv(root, dst=(ins, q) if p.inplace else (outs, 0))
    return build_algorithm(meta, builders)
