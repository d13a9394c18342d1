"""Ring algorithms (``hub.ring``): pipelined rings with channels and per-chunk pipelining.

Chunk layout (c = channels x pipeline chunks per rank block): chunk ``b*c + h*pipeline + j`` is
slice j of channel h of block b. Each (channel, slice) pair is an independent *lane* (its own
ring pipeline, its own tags), so every message carries exactly one chunk.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..chakra import Algorithm, AlgorithmMeta, Buffer, Collective, Op, RankGraphBuilder, build_algorithm
from ._common import Lane, VecBuilder, check_collective, check_ranks, check_root, ring_phase
from ._params import RingParams, validated

__all__ = ["RING_COLLECTIVES", "build_ring", "ring"]

RING_COLLECTIVES = frozenset({"allreduce", "allgather", "reducescatter", "alltoall", "broadcast", "reduce"})


def ring(
    collective: str | Collective,
    ranks: int,
    *,
    channels: int = 1,
    pipeline: int = 1,
    bidirectional: bool = False,
    reduction_comp: bool = True,
    inplace: bool = True,
    root: int = 0,
) -> Algorithm:
    """A ring algorithm for ``collective`` over ``ranks`` ranks (see ``docs/algorithms.md``)."""
    params = validated(
        RingParams,
        collective=collective,
        ranks=ranks,
        channels=channels,
        pipeline=pipeline,
        bidirectional=bidirectional,
        reduction_comp=reduction_comp,
        inplace=inplace,
        root=root,
    )
    return build_ring(params)  # type: ignore[arg-type]


def _direction(p: RingParams, h: int) -> int:
    return -1 if p.bidirectional and h % 2 == 1 else 1


def build_ring(p: RingParams) -> Algorithm:
    coll = check_collective("ring", p.collective, RING_COLLECTIVES)
    n = check_ranks("ring", p.ranks)
    c = p.channels * p.pipeline
    meta = AlgorithmMeta(
        collective=coll,
        ranks=n,
        in_chunks=c,
        out_chunks=c,
        inplace=p.inplace,
        name="ring",
        producer="hub.ring",
        extra=(("channels", p.channels), ("pipeline", p.pipeline), ("bidirectional", p.bidirectional)),
    )
    if coll in (Collective.ALLREDUCE, Collective.REDUCESCATTER, Collective.ALLGATHER):
        return _symmetric(p, coll, n, c, meta)
    if coll == Collective.ALLTOALL:
        return _alltoall(p, n, c, meta)
    root = check_root("ring", p.root, n)
    meta = replace(meta, root=root)
    return _broadcast(p, n, c, root, meta) if coll == Collective.BROADCAST else _reduce(p, n, c, root, meta)


def _lanes(vb: VecBuilder, p: RingParams, c: int, buf: Buffer) -> list[Lane]:
    n, r = vb.n, vb.r
    lanes = []
    for h in range(p.channels):
        d = _direction(p, h)
        # position on a ring that runs in direction d; the block of segment i is the rank at
        # position i, so that a reduce-scatter leaves rank r with its own block r
        pos = r if d == 1 else (-r) % n
        for j in range(p.pipeline):
            base = h * p.pipeline + j

            def off(seg: np.ndarray, d: int = d, base: int = base) -> np.ndarray:
                return ((seg * d) % n) * c + base

            lanes.append(Lane(pos=pos, size=n, nxt=(r + d) % n, prv=(r - d) % n, off=off, count=1, buf=buf, chan=h))
    return lanes


def _symmetric(p: RingParams, coll: Collective, n: int, c: int, meta: AlgorithmMeta) -> Algorithm:
    vb = VecBuilder(n)
    start: list[int] = []
    final_copy = False
    if coll == Collective.ALLREDUCE:
        meta = replace(meta, in_chunks=n * c, out_chunks=n * c)
        buf = Buffer.INPUT if p.inplace else Buffer.OUTPUT
        if not p.inplace:
            start = [vb.copy((Buffer.INPUT, 0), (Buffer.OUTPUT, 0), n * c)]
    elif coll == Collective.REDUCESCATTER:
        meta = replace(meta, in_chunks=n * c, out_chunks=c)
        buf = Buffer.INPUT
        if not p.inplace:  # reduce in scratch, keep the input intact
            meta = replace(meta, scratch_chunks=n * c)
            buf = Buffer.SCRATCH
            start = [vb.copy((Buffer.INPUT, 0), (Buffer.SCRATCH, 0), n * c)]
            final_copy = True
    else:  # allgather: everything happens in the output; in place, the input already is there
        meta = replace(meta, in_chunks=c, out_chunks=n * c)
        buf = Buffer.OUTPUT
        if not p.inplace:
            start = [vb.copy((Buffer.INPUT, 0), (Buffer.OUTPUT, vb.r * c), c)]
    lanes = _lanes(vb, p, c, buf)
    for lane in lanes:
        lane.start(start)
    if coll in (Collective.ALLREDUCE, Collective.REDUCESCATTER):
        ring_phase(vb, lanes, "rs", reduction_comp=p.reduction_comp)
    if coll in (Collective.ALLREDUCE, Collective.ALLGATHER):
        ring_phase(vb, lanes, "ag", reduction_comp=p.reduction_comp)
    if final_copy:
        tails = sorted({t for lane in lanes for t in lane.tail})
        vb.copy((Buffer.SCRATCH, vb.r * c), (Buffer.OUTPUT, 0), c, deps=tails)
    return vb.build(meta)


def _broadcast(p: RingParams, n: int, c: int, root: int, meta: AlgorithmMeta) -> Algorithm:
    builders = [RankGraphBuilder(r) for r in range(n)]
    for r, b in enumerate(builders):
        if r == root and not p.inplace:
            b.comp(Op.COPY, src=(Buffer.INPUT, 0), dst=(Buffer.OUTPUT, 0), count=c)
        for h in range(p.channels):
            d = _direction(p, h)
            i = ((r - root) * d) % n  # position on the chain root -> root+d -> ...
            prev_recv: int | None = None
            for j in range(p.pipeline):
                o, tag = h * p.pipeline + j, h * p.pipeline + j
                if i == 0:
                    b.send((r + d) % n, src=(Buffer.INPUT, o), tag=tag, chan=h)
                    continue
                prev_recv = b.recv(
                    (r - d) % n,
                    dst=(Buffer.OUTPUT, o),
                    tag=tag,
                    chan=h,
                    deps=[prev_recv] if prev_recv is not None else [],
                )
                if i < n - 1:
                    b.send((r + d) % n, src=(Buffer.OUTPUT, o), tag=tag, chan=h, deps=[prev_recv])
    return build_algorithm(meta, builders)


def _reduce(p: RingParams, n: int, c: int, root: int, meta: AlgorithmMeta) -> Algorithm:
    builders = [RankGraphBuilder(r) for r in range(n)]
    for r, b in enumerate(builders):
        first_pos = {h: ((r - root) * _direction(p, h) - 1) % n for h in range(p.channels)}
        work = Buffer.INPUT if p.inplace else Buffer.OUTPUT
        start: list[int] = []
        if not p.inplace and any(i > 0 for i in first_pos.values()):
            # partial sums accumulate in the output so that the input stays untouched
            start = [b.comp(Op.COPY, src=(Buffer.INPUT, 0), dst=(Buffer.OUTPUT, 0), count=c)]
        for h in range(p.channels):
            d = _direction(p, h)
            i = first_pos[h]  # chain root+d -> root+2d -> ... -> root; root is last (n-1)
            prev: list[int] = list(start)
            for j in range(p.pipeline):
                o, tag = h * p.pipeline + j, h * p.pipeline + j
                if i == 0:
                    b.send((r + d) % n, src=(Buffer.INPUT, o), tag=tag, chan=h)
                    continue
                rv = b.recv((r - d) % n, dst=(work, o), op=Op.REDUCE, tag=tag, chan=h, deps=prev)
                prev = [rv]
                ready = b.comp(Op.NONE, count=1, deps=[rv], chan=h) if p.reduction_comp else rv
                if i < n - 1:
                    b.send((r + d) % n, src=(work, o), tag=tag, chan=h, deps=[ready])
    return build_algorithm(meta, builders)


def _runs(src: list[int]) -> list[tuple[int, int, int]]:
    """Group positions i -> src[i] into (first i, first src, length) runs of consecutive offsets."""
    runs: list[tuple[int, int, int]] = []
    for i, s in enumerate(src):
        if runs and runs[-1][1] + runs[-1][2] == s and runs[-1][0] + runs[-1][2] == i:
            runs[-1] = (runs[-1][0], runs[-1][1], runs[-1][2] + 1)
        else:
            runs.append((i, s, 1))
    return runs


def _alltoall(p: RingParams, n: int, c: int, meta: AlgorithmMeta) -> Algorithm:
    """Store-and-forward ring all-to-all: at step s (1..n-1) every rank passes on, in one message,
    the n-s blocks it holds that still have to travel. Per lane, scratch holds a staging area
    (the n-1 outgoing blocks in ring order) and one landing area per step."""
    per_lane = (n - 1) + n * (n - 1) // 2
    meta = replace(meta, in_chunks=n * c, out_chunks=n * c, scratch_chunks=c * per_lane)
    builders = [RankGraphBuilder(r) for r in range(n)]
    for r, b in enumerate(builders):
        if not p.inplace:
            b.comp(Op.COPY, src=(Buffer.INPUT, r * c), dst=(Buffer.OUTPUT, r * c), count=c)
        for h in range(p.channels):
            d = _direction(p, h)
            pos = (r * d) % n
            at = lambda q, d=d: (q * d) % n  # noqa: E731 - rank at ring position q
            for j in range(p.pipeline):
                lane = h * p.pipeline + j
                base = lane * per_lane
                src = [at(pos + 1 + i) * c + lane for i in range(n - 1)]
                staging = [
                    b.comp(Op.COPY, src=(Buffer.INPUT, s), dst=(Buffer.SCRATCH, base + i), count=k, chan=h)
                    for i, s, k in _runs(src)
                ]
                land, prev_land, prev_recv = base + n - 1, base, None
                for s in range(1, n):
                    tag = lane * n + s
                    count = n - s
                    first = prev_land if s == 1 else prev_land + 1
                    b.send(
                        (r + d) % n,
                        src=(Buffer.SCRATCH, first),
                        count=count,
                        tag=tag,
                        chan=h,
                        deps=staging if prev_recv is None else [prev_recv],
                    )
                    prev_recv = b.recv(
                        (r - d) % n,
                        dst=(Buffer.SCRATCH, land),
                        count=count,
                        tag=tag,
                        chan=h,
                        deps=[prev_recv] if prev_recv is not None else [],
                    )
                    origin = at(pos - s)
                    # in place, the output block aliases an input block the staging copies read
                    b.comp(
                        Op.COPY,
                        src=(Buffer.SCRATCH, land),
                        dst=(Buffer.OUTPUT, origin * c + lane),
                        count=1,
                        chan=h,
                        deps=[prev_recv, *(staging if p.inplace else [])],
                    )
                    prev_land, land = land, land + count
    return build_algorithm(meta, builders)
