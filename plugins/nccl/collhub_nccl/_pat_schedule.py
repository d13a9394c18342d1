"""PAT as Chakra ET: NCCL's generator ops (``_pat``) executed the way the PAT kernels do
(``patCopy`` / ``patReduce`` in ``prims_simple.h``).

* One channel part at a time, rank by rank; every rank runs its op list in rounds of
  ``parallelFactor`` ops with a barrier between rounds (a cost-only COMP joining the round).
* Connection slots are buffers of their own: each (dimension, absolute slot) of a rank has a
  send area and a receive area in scratch (``chunkCount`` elements each), so aggregation (several
  pieces filling one slot before it is posted) is data movement the verifier can follow.
* An op with a send dimension writes its piece into the send slot (all-gather: a copy; reduce-
  scatter: the received piece plus its own input, or plus what the slot already holds when the
  region was written before: NCCL's high-water rule); a post is a SEND of the slot's filled
  prefix (``(sendOffset + nelem) x elemSize`` bytes) after the round; the receiver's first read of
  a slot waits for its RECV (connections are FIFO: slot k is the k-th message of a dimension).
* All-gather copies every received piece to the output once; reduce-scatter's last op writes
  the output. Tags: ``channel x 64 + dimension``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from hub.chakra import Algorithm, Buffer, Op, RankGraph, RankGraphBuilder
from hub.errors import AlgorithmError

from ._pat import pat_ops

if TYPE_CHECKING:
    from ._schedule import Plan

__all__ = ["pat_schedule"]


def pat_schedule(p: Plan, name: str | None = None) -> Algorithm:
    from ._schedule import _meta

    s, n = p.system, p.system.ranks
    if s.gpus_per_node != 1:
        raise AlgorithmError("NCCL runs PAT only with 1 GPU per node", hint="gpus_per_node=1, or nccl.ring")
    ag = p.collective == "AllGather"
    count = p.count
    parts = [(q.channel, q.offset, q.count, q.chunk_bytes // p.elem) for q in p.split.parts]
    unit = 0
    for _, off, cnt, chunk in parts:
        for v in (off, cnt, chunk, count):
            unit = math.gcd(unit, v)
        unit = math.gcd(unit, cnt % chunk if cnt % chunk else chunk)
    unit = max(unit, 1)
    c = count // unit  # chunks per rank unit
    # every (channel part, dimension, slot) gets a send and a receive area of chunkCount elements
    plans = []
    scratch = 0
    for channel, off, cnt, chunk in parts:
        par, ops0 = pat_ops(p.collective, n, 0, count=count, channel_offset=off, channel_count=cnt, chunk_count=chunk)
        posts = [0] * 32
        post_size: dict[tuple[int, int], int] = {}  # (dimension, slot) -> elements posted
        for op in ops0:
            if len(op) > 1 and op[7] and op[2] >= 0:
                posts[op[2]] += 1
                post_size[(op[2], op[15])] = op[4] + op[8]
        base = {}
        for d, k in enumerate(posts):
            for side in (0, 1):
                base[(side, d)] = scratch
                scratch += k * (chunk // unit)
        plans.append((channel, off, cnt, chunk, par, base, post_size))
    if max(c * n, scratch) >= 1 << 31:
        raise AlgorithmError("this PAT schedule needs more than 2^31 chunks", hint="a smaller size or fewer ranks")
    b0 = RankGraphBuilder(0)
    for channel, off, cnt, chunk, par, base, post_size in plans:
        _, ops = pat_ops(p.collective, n, 0, count=count, channel_offset=off, channel_count=cnt, chunk_count=chunk)
        _rank(b0, 0, ops, par, ag, channel, c, unit, chunk // unit, base, p.elem, post_size, n)
    meta = _meta(p, name, c if ag else n * c, n * c if ag else c, (("pat_unit_elems", unit),))
    from dataclasses import replace

    g0 = b0.build()
    graphs = [g0] + [_shifted(g0, r, n, c, Buffer.OUTPUT if ag else Buffer.INPUT) for r in range(1, n)]
    return Algorithm(replace(meta, scratch_chunks=scratch), tuple(graphs))


_SHARED = ("ids", "kind", "tag", "count", "src_buf", "dst_buf", "op", "size", "duration", "tb", "chan")


def _shifted(g0: RankGraph, r: int, n: int, c: int, user: Buffer) -> RankGraph:
    """Rank r's graph from rank 0's: PAT is rank-symmetric (NCCL's symmetry rule, checked for
    every rank in the shared data): peers move by r, and so does the data-rank block of every
    user-buffer offset; scratch (the connection slots) is the same on every rank."""
    # every other column is rank 0's array, shared read-only: only the peers and user offsets move
    cols = {name: getattr(g0, name) for name in _SHARED}
    comm = g0.peer >= 0
    cols["peer"] = np.where(comm, (g0.peer + r) % n, g0.peer).astype(np.int32)
    for buf_col, off_col in (("src_buf", "src_off"), ("dst_buf", "dst_off")):
        offs = getattr(g0, off_col)
        on = (getattr(g0, buf_col) == int(user)) & (offs >= 0)
        cols[off_col] = np.where(on, ((offs // c + r) % n) * c + offs % c, offs).astype(np.int32)
    return RankGraph.from_columns(len(g0), dep_ptr=g0.dep_ptr, dep_pos=g0.dep_pos, names=g0.names, **cols)


def _rank(
    b: RankGraphBuilder,
    r: int,
    ops: list[tuple[int, ...]],
    par: int,
    ag: bool,
    channel: int,
    c: int,
    unit: int,
    slot_units: int,
    base: dict[tuple[int, int], int],
    elem: int,
    post_size: dict[tuple[int, int], int],
    n: int,
) -> None:
    barrier: int | None = None
    nelem_of = [0]  # the current chunk's piece size (pieces of a slot are nelem apart)
    recv_made = [0] * 32  # RECVs issued per dimension (slot k is the k-th)
    recv_node: dict[tuple[int, int], int] = {}
    done_out: set[int] = set()  # all-gather: output chunks already written
    written: dict[tuple[int, int], set[int]] = {}  # send slot -> element offsets of the pieces written
    mark = [-1] * 33  # reduce-scatter high-water per send dimension (index 32: the output)
    for i0 in range(0, len(ops), par):
        round_ops = ops[i0 : i0 + par]
        start = [barrier] if barrier is not None else []
        made: list[int] = []
        sends: list[tuple[int, int, int]] = []
        for op in round_ops:
            if len(op) == 1:
                continue
            rd, sd, roff, soff, _, post_r, post_s, nelem = op[1:9]
            nelem_of[0] = nelem
            inp, out, rpeer, speer, rslot, sslot = op[10:16]
            k = nelem // unit
            deps = list(start)
            src: tuple[Buffer, int] | None = None
            if rd >= 0:
                while recv_made[rd] <= rslot:
                    slot = recv_made[rd]
                    rb = base[(1, rd)] + slot * slot_units
                    # the message's size is the sender's filled prefix: by symmetry, my own k-th post on rd
                    size = post_size[(rd, slot)]
                    recv_node[(rd, slot)] = b.recv(
                        rpeer, dst=(Buffer.SCRATCH, rb), count=size // unit, size=size * elem,
                        tag=channel * 64 + rd, chan=channel, deps=start,
                    )  # fmt: skip
                    recv_made[rd] += 1
                deps.append(recv_node[(rd, rslot)])
                src = (Buffer.SCRATCH, base[(1, rd)] + rslot * slot_units + roff // unit)
            if ag:
                if src is None:
                    src = (Buffer.OUTPUT, r * c + inp // unit)
                if sd >= 0:
                    dst = (Buffer.SCRATCH, base[(0, sd)] + sslot * slot_units + soff // unit)
                    made.append(b.comp(Op.COPY, src=src, dst=dst, count=k, deps=deps, chan=channel))
                if rd >= 0 and out // unit not in done_out:
                    made.append(
                        b.comp(Op.COPY, src=src, dst=(Buffer.OUTPUT, out // unit), count=k, deps=deps, chan=channel)
                    )
                    done_out.add(out // unit)
            else:
                if sd >= 0:
                    dst = (Buffer.SCRATCH, base[(0, sd)] + sslot * slot_units + soff // unit)
                    end, m = sslot * slot_units * unit + soff + nelem, sd
                else:
                    dst = (Buffer.INPUT, r * c + out // unit)  # in place: the output is my block of the input
                    end, m = out + nelem, 32
                fresh = end > mark[m]
                mark[m] = max(mark[m], end)
                own = (Buffer.INPUT, inp // unit)
                node = None
                if fresh and own != dst:
                    node = b.comp(Op.COPY, src=own, dst=dst, count=k, deps=deps, chan=channel)
                # a region written before with nothing received: NCCL's accumulation adds nothing
                if src is not None:
                    node = b.comp(Op.REDUCE, src=src, dst=dst, count=k, deps=[node] if node is not None else deps,
                                  chan=channel)  # fmt: skip
                if node is not None:
                    made.append(node)
            if sd >= 0:
                written.setdefault((sd, sslot), set()).add(soff)
            if post_s and sd >= 0:
                sends.append((sd, sslot, speer))
            del post_r  # a release is flow control, which this schedule does not express
        if made or sends:
            barrier = b.comp(Op.NONE, deps=made or start, chan=channel)
        for sd, sslot, speer in sends:
            size = post_size[(sd, sslot)]
            slot0 = base[(0, sd)] + sslot * slot_units
            # a piece skipped inside an aggregated slot is sent without meaning (NCCL posts the
            # whole prefix); a copy of own input stands for those bytes so the message is defined
            pieces = written.pop((sd, sslot), set())
            pad = [o for o in range(0, size, nelem_of[0]) if o not in pieces] if nelem_of[0] else []
            for o in pad:
                barrier = b.comp(
                    # all-gather: own data; reduce-scatter: the next rank's block (neither is ever written)
                    Op.COPY, src=(Buffer.OUTPUT, r * c) if ag else (Buffer.INPUT, (r + 1) % n * c),
                    dst=(Buffer.SCRATCH, slot0 + o // unit), count=nelem_of[0] // unit,
                    deps=[barrier] if barrier is not None else [], chan=channel, name="pad",
                )  # fmt: skip
            b.send(
                speer,
                src=(Buffer.SCRATCH, base[(0, sd)] + sslot * slot_units),
                count=size // unit,
                tag=channel * 64 + sd,
                chan=channel,
                size=size * elem,
                deps=[barrier] if barrier is not None else [],
            )
