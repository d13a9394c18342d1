"""Two-level algorithms (``hub.hierarchical``): rings inside a node, rings across nodes.

Ranks are numbered node-major: rank r = a*L + l lives on node a (0..N-1) as local rank l
(0..L-1), L = ``local_size``. One chunk per rank block; block q = b*L + l belongs to rank q.

* reduce-scatter: intra-node ring reduce-scatter, one lane per node block b (lane b reduces
  blocks (b, 0..L-1) inside the node, leaving local rank l with the node's sum of (b, l) for
  every b); then an inter-node ring reduce-scatter among the ranks with the same l, over the
  blocks (0..N-1, l). Only (N-1) blocks per rank cross node boundaries.
* all-gather: the mirror image (inter-node ring all-gather of the own block, then intra-node
  ring all-gather of the N blocks, one lane each).
* all-reduce: reduce-scatter followed by all-gather (intra RS, inter RS + AG, intra AG).
  ``fused``: the intra-node phases run one lane whose segment s is the N contiguous chunks
  s*N.., so each intra step is one message of N chunks (not N messages of one) and local rank l
  then owns chunks l*N + (0..N-1), over which the inter-node rings run (chunk l*N + a on node a):
  about 5(N + L) nodes per rank instead of 5n.
* all-to-all: intra-node exchange, then inter-node exchange. Rank (a, l) first sends local peer
  (a, l') the N blocks destined to ranks (*, l') and gathers in scratch, per destination node,
  the L blocks of its node destined to (b, l); then it sends each remote node's L blocks to
  (b, l) in one message, which lands directly in the output.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from ..chakra import Algorithm, AlgorithmMeta, Buffer, Collective
from ..errors import AlgorithmError
from ._common import Lane, VecBuilder, check_collective, check_ranks, ring_phase
from ._params import HierarchicalParams, validated

__all__ = ["HIERARCHICAL_COLLECTIVES", "build_hierarchical", "default_local_size", "hierarchical"]

HIERARCHICAL_COLLECTIVES = frozenset({"allreduce", "allgather", "reducescatter", "alltoall"})


def hierarchical(
    collective: str | Collective,
    ranks: int,
    *,
    local_size: int | None = None,
    reduction_comp: bool = True,
    inplace: bool = True,
    fused: bool = False,
    max_ranks: int | None = None,
) -> Algorithm:
    """A two-level algorithm over ``ranks // local_size`` nodes of ``local_size`` ranks."""
    params = validated(
        HierarchicalParams,
        collective=collective,
        ranks=ranks,
        fused=fused,
        **({"max_ranks": max_ranks} if max_ranks is not None else {}),
        local_size=local_size,
        reduction_comp=reduction_comp,
        inplace=inplace,
    )
    return build_hierarchical(params)  # type: ignore[arg-type]


def default_local_size(ranks: int) -> int:
    """The largest divisor of ``ranks`` that is at most 8 and smaller than ``ranks``."""
    return max((d for d in range(1, min(8, ranks - 1) + 1) if ranks % d == 0), default=1)


def build_hierarchical(p: HierarchicalParams) -> Algorithm:
    coll = check_collective("hierarchical", p.collective, HIERARCHICAL_COLLECTIVES)
    n = check_ranks("hierarchical", p.ranks)
    L = _local_size(p, coll, n)
    N = n // L
    meta = AlgorithmMeta(
        collective=coll,
        ranks=n,
        in_chunks=n,
        out_chunks=n,
        inplace=p.inplace,
        name="hierarchical",
        producer="hub.hierarchical",
        extra=(("local_size", L), *((("fused", True),) if p.fused else ())),
    )
    vb = VecBuilder(n)
    if coll == Collective.ALLTOALL:
        return _alltoall(vb, p, L, N, replace(meta, scratch_chunks=n))
    r = vb.r
    a, l = r // L, r % L
    meta, buf, start, final_copy = _buffers(vb, p, coll, meta)
    inter = _inter_lane(p, a, l, L, N, buf)
    deps = start
    if coll in (Collective.ALLREDUCE, Collective.REDUCESCATTER):
        lanes = _intra_lanes(p, a, l, L, N, buf, deps)
        ring_phase(vb, lanes, "rs", reduction_comp=p.reduction_comp)
        inter.start(_join(lanes) if L > 1 else deps)
        ring_phase(vb, [inter], "rs", reduction_comp=p.reduction_comp)
        deps = inter.tail
    if final_copy:
        vb.copy((Buffer.SCRATCH, r), (Buffer.OUTPUT, 0), 1, deps=deps)
    if coll in (Collective.ALLREDUCE, Collective.ALLGATHER):
        if coll == Collective.ALLGATHER:
            inter.start(deps)
        ring_phase(vb, [inter], "ag", reduction_comp=p.reduction_comp)
        lanes = _intra_lanes(p, a, l, L, N, buf, inter.tail)
        ring_phase(vb, lanes, "ag", reduction_comp=p.reduction_comp)
    return vb.build(meta)


def _local_size(p: HierarchicalParams, coll: Collective, n: int) -> int:
    """The ranks per node, checked: a divisor of ``n`` (and ``fused`` only for all-reduce)."""
    L = p.local_size if p.local_size is not None else default_local_size(n)
    if n % L:
        divisors = [d for d in range(1, n + 1) if n % d == 0]
        raise AlgorithmError(
            f"hierarchical: local_size {L} does not divide {n} ranks",
            hint="local_size must be one of " + ", ".join(map(str, divisors)),
        )
    if p.fused and coll != Collective.ALLREDUCE:
        raise AlgorithmError(
            f"hierarchical: fused applies to allreduce, not {coll.value}",
            hint="its blocks end on the ranks of their group, not on the rank of their index",
        )
    return L


def _buffers(
    vb: VecBuilder, p: HierarchicalParams, coll: Collective, meta: AlgorithmMeta
) -> tuple[AlgorithmMeta, Buffer, list[int], bool]:
    """(the meta's chunk counts, the buffer the rings work in, the first copy of an out-of-place
    run, whether a reduce-scatter ends with a copy out of scratch)."""
    r = vb.r
    start: list[int] = []
    final_copy = False
    if coll == Collective.ALLGATHER:
        meta = replace(meta, in_chunks=1)
        buf = Buffer.OUTPUT
        if not p.inplace:
            start = [vb.copy((Buffer.INPUT, 0), (Buffer.OUTPUT, r), 1)]
    elif coll == Collective.REDUCESCATTER:
        meta = replace(meta, out_chunks=1)
        buf = Buffer.INPUT
        if not p.inplace:
            meta = replace(meta, scratch_chunks=meta.ranks)
            buf, final_copy = Buffer.SCRATCH, True
            start = [vb.copy((Buffer.INPUT, 0), (Buffer.SCRATCH, 0), meta.ranks)]
    else:
        buf = Buffer.INPUT if p.inplace else Buffer.OUTPUT
        if not p.inplace:
            start = [vb.copy((Buffer.INPUT, 0), (Buffer.OUTPUT, 0), meta.ranks)]
    return meta, buf, start, final_copy


def _intra_lanes(
    p: HierarchicalParams, a: np.ndarray, l: np.ndarray, L: int, N: int, buf: Buffer, deps: list[int]
) -> list[Lane]:
    """The ring lanes inside each node, started after ``deps``: one per node block, or one for all."""
    if p.fused:  # one lane; segment s = the N contiguous chunks s*N.., one message per step
        lane = Lane(pos=l, size=L, nxt=a * L + (l + 1) % L, prv=a * L + (l - 1) % L, off=_scaled(N), count=N, buf=buf)
        lane.start(deps)
        return [lane]
    lanes = []
    for b in range(N):
        lane = Lane(
            pos=l,
            size=L,
            nxt=a * L + (l + 1) % L,
            prv=a * L + (l - 1) % L,
            off=_shifted(b * L),
            count=1,
            buf=buf,
            chan=0,
        )
        lane.start(deps)
        lanes.append(lane)
    return lanes


def _join(lanes: list[Lane]) -> list[int]:
    return sorted({t for lane in lanes for t in lane.tail})


def _inter_lane(p: HierarchicalParams, a: np.ndarray, l: np.ndarray, L: int, N: int, buf: Buffer) -> Lane:
    """The ring across nodes among the ranks of one local rank."""
    return Lane(
        pos=a,
        size=N,
        nxt=((a + 1) % N) * L + l,
        prv=((a - 1) % N) * L + l,
        # fused: local rank l holds its node's sum of chunks l*N .. l*N+N-1 after the intra phase
        off=(lambda seg: l * N + seg) if p.fused else (lambda seg: seg * L + l),
        count=1,
        buf=buf,
        chan=1,
    )


def _scaled(width: int) -> Callable[[np.ndarray], np.ndarray]:
    """``off`` of a lane whose segment s is the ``width`` chunks from s*width on."""
    return lambda seg: seg * width


def _shifted(base: int) -> Callable[[np.ndarray], np.ndarray]:
    """``off`` of a lane whose segments start at chunk ``base``."""
    return lambda seg: base + seg


def _alltoall(vb: VecBuilder, p: HierarchicalParams, L: int, N: int, meta: AlgorithmMeta) -> Algorithm:
    r = vb.r
    a, l = r // L, r % L
    ins, outs, scr = Buffer.INPUT, Buffer.OUTPUT, Buffer.SCRATCH
    # Phase 1, lane e handles destination node b = a + e (relative, so that the template is the
    # same on every rank): scratch block b*L + l'' holds the block of (a, l'') destined to (b, l).
    readers: list[list[int]] = [[] for _ in range(N)]  # nodes that read input blocks of lane e
    landed: list[list[int]] = [[] for _ in range(N)]  # nodes that fill scratch group of lane e
    for e in range(N):
        b = (a + e) % N
        cp = vb.copy((ins, b * L + l), (scr, b * L + l), 1)
        readers[e].append(cp)
        landed[e].append(cp)
    for d in range(1, L):
        for e in range(N):
            b = (a + e) % N
            tag = vb.new_tag()
            to, frm = (l + d) % L, (l - d) % L
            readers[e].append(vb.send(a * L + to, ins, b * L + to, 1, tag))
            landed[e].append(vb.recv(a * L + frm, scr, b * L + frm, 1, tag))
    # Phase 2: the L blocks for (b, l) are contiguous in scratch; they land in output group a'.
    for e in range(1, N):
        tag = vb.new_tag()
        vb.send(((a + e) % N) * L + l, scr, ((a + e) % N) * L, L, tag, deps=landed[e])
        src_node = (a - e) % N
        # in place, output group src_node aliases the input blocks lane (-e) reads in phase 1
        vb.recv(src_node * L + l, outs, src_node * L, L, tag, deps=readers[(-e) % N] if p.inplace else [])
    vb.copy((scr, a * L), (outs, a * L), L, deps=landed[0] + (readers[0] if p.inplace else []))
    return vb.build(meta)
