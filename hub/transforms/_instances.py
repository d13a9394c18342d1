"""``hub.instances``: run k copies of an algorithm side by side on disjoint channels and data."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ..chakra import Algorithm, Buffer, NodeType, Op, RankGraph
from ..chakra._model import COLUMN_NAMES
from ..errors import UsageError
from ..verify._layout import has_buffer_semantics, rank_block
from ._split import check_tag_range, expand_graph

__all__ = ["InstancesParams", "instances_algorithm", "instances_transform", "split_to_unit_chunks"]


class InstancesParams(BaseModel):
    """Parameters of ``hub.instances``."""

    model_config = ConfigDict(extra="forbid")

    # each copy is a full copy of the algorithm's nodes: the bound keeps memory to what is there
    count: int = Field(2, ge=1, le=1024, description="number of copies of the algorithm that run in parallel")


def _data_nodes(g: RankGraph) -> np.ndarray:
    comm = (g.kind == NodeType.SEND) | (g.kind == NodeType.RECV)
    comp = (g.kind == NodeType.COMP) & ((g.op == Op.COPY) | (g.op == Op.REDUCE))
    return comm | comp


def split_to_unit_chunks(alg: Algorithm) -> Algorithm:
    """Split every node that moves c > 1 chunks into c one-chunk nodes (piece p at offset + p).

    Piece p of a message with tag t gets tag t*M + p (M = the largest count), so pieces form
    separate FIFOs. Buffer sizes do not change.
    """
    M = max((int(g.count.max()) for g in alg.graphs if len(g)), default=1)
    if M <= 1:
        return alg
    check_tag_range(max((int(g.tag.max()) for g in alg.graphs if len(g)), default=0) * M + M - 1, "unit split")
    graphs = []
    for g in alg.graphs:
        rep = np.where(_data_nodes(g) & (g.count > 1), g.count, 1).astype(np.int64)
        ng, src, piece = expand_graph(g, rep)
        split = rep[src] > 1
        for name in ("src_off", "dst_off"):
            off = getattr(ng, name)
            setattr(ng, name, np.where(split & (off >= 0), off + piece, off).astype(np.int32))
        comm = (ng.kind == NodeType.SEND) | (ng.kind == NodeType.RECV)
        ng.tag = np.where(comm, ng.tag.astype(np.int64) * M + np.where(split, piece, 0), ng.tag).astype(np.int32)
        old_count = ng.count.astype(np.int64)
        ng.count = np.where(split, 1, ng.count).astype(np.int32)
        ng.size = np.where(split & (ng.size >= 0), -(-ng.size // np.maximum(old_count, 1)), ng.size)
        ng.duration = np.where(split & (ng.duration > 0), -(-ng.duration // np.maximum(old_count, 1)), ng.duration)
        graphs.append(ng)
    return Algorithm(alg.meta, tuple(graphs))


def _crosses_rank_blocks(alg: Algorithm) -> bool:
    """True if some node reads or writes across a rank-block boundary of a rank-blocked buffer."""
    for g in alg.graphs:
        data = _data_nodes(g)
        for bcol, ocol in (("src_buf", "src_off"), ("dst_buf", "dst_off")):
            buf, off = getattr(g, bcol), getattr(g, ocol).astype(np.int64)
            for b in (Buffer.INPUT, Buffer.OUTPUT):
                c = rank_block(alg.meta, b)
                if not c or c <= 0:
                    continue
                sel = data & (buf == b) & (g.count > 1)
                if np.any(off[sel] // c != (off[sel] + g.count[sel] - 1) // c):
                    return True
    return False


def instances_algorithm(alg: Algorithm, count: int) -> Algorithm:
    """Replicate ``alg`` ``count`` (k) times; copy i runs on its own channels, tags and data.

    Data layout ("blocked", MSCCLang's *duplicated* mode): every buffer grows k-fold and copy i
    uses block i of it -- chunk x of a buffer of C chunks becomes ``i*C + x``. In buffers that are
    laid out per rank (all-gather/gather output, reduce-scatter/scatter input, all-to-all input
    and output, block size c) the blocking is done inside each rank block instead, chunk
    ``q*c + j`` becoming ``q*k*c + i*c + j``, so the result is still the standard collective
    (rank q's data stays in block q) and in-place aliasing stays valid. A node that moves
    several chunks across a rank-block boundary would no longer be contiguous; if any exists
    the algorithm is first split into one-chunk messages (:func:`split_to_unit_chunks`).

    Copy i adds ``i*T`` to every tag (T = largest tag + 1) so each copy keeps its own FIFOs,
    ``i*C`` to channels and ``i*B`` to threadblocks (C, B = largest + 1). Node ids of copy i are
    ``i*(max id + 1) + id``. Sizes are re-bound when the algorithm is bound.
    """
    k = int(count)
    if k < 1:
        raise UsageError(f"instances count must be >= 1, got {k}")
    if k == 1:
        return alg
    meta = alg.meta
    semantic = has_buffer_semantics(meta)
    if semantic and _crosses_rank_blocks(alg):
        alg = split_to_unit_chunks(alg)
    gs = [g for g in alg.graphs if len(g)]
    T = max((int(g.tag.max()) for g in gs), default=0) + 1
    check_tag_range(k * T - 1, "hub.instances")
    C = max((int(g.chan.max()) for g in gs), default=0) + 1
    B = max((int(g.tb.max()) for g in gs), default=0) + 1
    caps = (meta.in_chunks, meta.out_chunks, meta.scratch_chunks)
    blocks = [rank_block(meta, b) for b in (Buffer.INPUT, Buffer.OUTPUT, Buffer.SCRATCH)]
    graphs = []
    for g in alg.graphs:
        n = len(g)
        inst = np.repeat(np.arange(k, dtype=np.int64), n)
        cols: dict[str, Any] = {c: np.tile(getattr(g, c), k) for c in COLUMN_NAMES}
        max_id = int(g.ids.max()) + 1 if n else 1
        cols["ids"] = inst * max_id + cols["ids"]
        comm = (cols["kind"] == NodeType.SEND) | (cols["kind"] == NodeType.RECV)
        cols["tag"] = np.where(comm, cols["tag"] + inst * T, cols["tag"])
        cols["chan"] = cols["chan"] + inst * C
        cols["tb"] = np.where(cols["tb"] >= 0, cols["tb"] + inst * B, cols["tb"])
        if semantic:
            for bcol, ocol in (("src_buf", "src_off"), ("dst_buf", "dst_off")):
                buf, off = cols[bcol].astype(np.int64), cols[ocol].astype(np.int64)
                new = off.copy()
                for b in range(3):
                    sel = (buf == b) & (off >= 0)
                    c = blocks[b]
                    if c:
                        new[sel] = (off[sel] // c) * k * c + inst[sel] * c + off[sel] % c
                    else:
                        new[sel] = inst[sel] * caps[b] + off[sel]
                cols[ocol] = new
        nd = int(g.dep_ptr[-1])
        dep_pos = np.concatenate([g.dep_pos[:nd].astype(np.int64) + i * n for i in range(k)])
        dep_ptr = np.concatenate([[0], *[g.dep_ptr[1:] + i * nd for i in range(k)]])
        names = [f"{x}#{i}" if x else x for i in range(k) for x in g.names] if g.names is not None else None
        graphs.append(RankGraph.from_columns(k * n, dep_ptr=dep_ptr, dep_pos=dep_pos, names=names, **cols))
    new_meta = replace(
        meta, in_chunks=meta.in_chunks * k, out_chunks=meta.out_chunks * k, scratch_chunks=meta.scratch_chunks * k
    )
    out = Algorithm(new_meta, tuple(graphs))
    return out.bind(meta.size) if meta.size is not None else out


def instances_transform(algorithm: Algorithm, params: InstancesParams, ctx: Any = None) -> Algorithm:
    """Transform factory of ``hub.instances`` (see :func:`instances_algorithm`)."""
    return instances_algorithm(algorithm, params.count)
