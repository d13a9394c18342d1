"""``hub.chunk``: cut every chunk into k pieces and every transfer into k messages."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ..chakra import Algorithm, NodeType
from ..errors import UsageError
from ..verify._layout import has_buffer_semantics
from ._split import check_tag_range, expand_graph

__all__ = ["ChunkParams", "chunk_algorithm", "chunk_transform"]


class ChunkParams(BaseModel):
    """Parameters of ``hub.chunk``."""

    model_config = ConfigDict(extra="forbid")

    # every node becomes up to this many: the bound keeps memory to what is there
    pieces: int = Field(
        2, ge=1, le=1024, description="split every chunk (and every SEND/RECV/COMP) into this many pieces"
    )


def chunk_algorithm(alg: Algorithm, pieces: int) -> Algorithm:
    """Refine the chunking of ``alg`` by ``pieces`` (k).

    Chunk x becomes chunks [x*k, x*k + k) (buffer sizes grow k-fold), and a node moving c chunks
    from offset x becomes k nodes moving c chunks each, from x*k + p*c (p = 0..k-1). Pieces keep
    the original's dependencies and its successors wait for all pieces. Piece p of a message with
    tag t gets tag t*k + p, so each piece stream is its own FIFO with the original order and
    concurrent pieces can never cross-match. COMP durations are split evenly (rounded up, µs).
    Byte sizes are re-derived with :meth:`Algorithm.bind` when the algorithm is bound.
    """
    k = int(pieces)
    if k < 1:
        raise UsageError(f"chunk pieces must be >= 1, got {k}")
    if k == 1:
        return alg
    meta = alg.meta
    if not has_buffer_semantics(meta):
        raise UsageError(
            f"algorithm {meta.name or '?'} has no chunk semantics (in/out chunks 0); cannot re-chunk it",
            hint="chunking needs an algorithm with buffer offsets, e.g. one made by a hub producer",
        )
    check_tag_range(max((int(g.tag.max()) for g in alg.graphs if len(g)), default=0) * k + k - 1, "hub.chunk")
    graphs = []
    for g in alg.graphs:
        rep = np.where(g.count > 0, k, 1)
        ng, src, piece = expand_graph(g, rep)
        split = rep[src] > 1
        c = ng.count.astype(np.int64)
        for name in ("src_off", "dst_off"):
            off = getattr(ng, name).astype(np.int64)
            setattr(ng, name, np.where(split & (off >= 0), off * k + piece * c, off).astype(np.int32))
        comm = (ng.kind == NodeType.SEND) | (ng.kind == NodeType.RECV)
        ng.tag = np.where(comm & split, ng.tag.astype(np.int64) * k + piece, ng.tag).astype(np.int32)
        dur = ng.duration
        ng.duration = np.where(split & (dur > 0), -(-dur // k), dur)
        sz = ng.size
        ng.size = np.where(split & (sz >= 0), -(-sz // k), sz)
        graphs.append(ng)
    new_meta = replace(
        meta, in_chunks=meta.in_chunks * k, out_chunks=meta.out_chunks * k, scratch_chunks=meta.scratch_chunks * k
    )
    out = Algorithm(new_meta, tuple(graphs))
    return out.bind(meta.size) if meta.size is not None else out


def chunk_transform(algorithm: Algorithm, params: ChunkParams, ctx: Any = None) -> Algorithm:
    """Transform factory of ``hub.chunk`` (see :func:`chunk_algorithm`)."""
    return chunk_algorithm(algorithm, params.pieces)
