"""All ranks' nodes in one set of global columns (global index = rank offset + position)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .._native import load_verify
from ..chakra import Algorithm, RankGraph
from ..errors import UsageError

if TYPE_CHECKING:
    from ._pairing import Pairing

__all__ = ["Flat", "NodeIds", "csr", "flatten", "ragged_arange"]


def ragged_arange(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(starts[i], starts[i] + lengths[i])`` for all i, vectorized."""
    lengths = np.asarray(lengths, dtype=np.int64)
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    ends = np.cumsum(lengths)
    shift = np.asarray(starts, dtype=np.int64) - (ends - lengths)
    return np.repeat(shift, lengths) + np.arange(total, dtype=np.int64)


def csr(owner: np.ndarray, other: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Edges (owner[i], other[i]) grouped by owner, each group in input order: (ptr, others),
    with node indices as int32 (half the memory of int64; an algorithm of 2^31 nodes would not
    fit in memory anyway).

    A counting sort in C (``hub._native._verify.csr``), O(n + edges); a stable argsort of 5M
    owners cost about half a second."""
    if n >= 2**31:
        raise UsageError(f"an algorithm of {n} nodes is beyond the verifier's limit of 2^31 nodes")
    ptr = np.empty(n + 1, dtype=np.int64)
    out = np.empty(other.shape[0], dtype=np.int32)
    load_verify().csr(np.ascontiguousarray(owner, np.int32), np.ascontiguousarray(other, np.int32), n, ptr, out)
    return ptr, out


class NodeIds:
    """The Chakra node id of each global index, read from the rank graphs on demand (problems
    name a few nodes; a concatenated copy would cost 8 bytes a node)."""

    def __init__(self, graphs: tuple[RankGraph, ...] | list[RankGraph], offsets: np.ndarray) -> None:
        self._ids = [g.ids for g in graphs]
        self._offsets = offsets

    def __getitem__(self, v: int) -> int:
        r = int(np.searchsorted(self._offsets, v, side="right")) - 1
        return int(self._ids[r][v - int(self._offsets[r])])


@dataclass
class Flat:
    """Global columns of an algorithm whose dependency positions are valid.

    ``offsets[r]`` is the global index of rank r's first node. ``succ_ptr``/``succ`` list each
    node's successors (reverse dependencies); they are built on first use (the walks need them,
    the race analysis builds its own graph), which keeps them out of the race analysis' peak.
    """

    offsets: np.ndarray
    rank: np.ndarray
    ids: NodeIds
    kind: np.ndarray
    peer: np.ndarray
    tag: np.ndarray
    count: np.ndarray
    src_buf: np.ndarray
    src_off: np.ndarray
    dst_buf: np.ndarray
    dst_off: np.ndarray
    op: np.ndarray
    size: np.ndarray
    dep_ptr: np.ndarray
    dep_pos: np.ndarray
    #: the static message pairing, set by the structure level (the later levels reuse it)
    pairing: Pairing | None = None
    _succ: tuple[np.ndarray, np.ndarray] | None = None

    def _successors(self) -> tuple[np.ndarray, np.ndarray]:
        if self._succ is None:
            owner = np.repeat(np.arange(self.n, dtype=np.int32), np.diff(self.dep_ptr))
            self._succ = csr(self.dep_pos, owner, self.n)
        return self._succ

    @property
    def succ_ptr(self) -> np.ndarray:
        return self._successors()[0]

    @property
    def succ(self) -> np.ndarray:
        return self._successors()[1]

    @property
    def n(self) -> int:
        return int(self.kind.shape[0])

    def where(self, v: int) -> tuple[int, int]:
        """(rank, node id) of global index v."""
        return int(self.rank[v]), int(self.ids[v])


def flatten(alg: Algorithm) -> Flat:
    graphs = alg.graphs
    lens = np.array([len(g) for g in graphs], dtype=np.int64)
    offsets = np.zeros(len(graphs) + 1, dtype=np.int64)
    np.cumsum(lens, out=offsets[1:])
    n = int(offsets[-1])

    def cat(name: str) -> np.ndarray:
        if not graphs:
            return np.zeros(0, dtype=np.int64)
        return np.concatenate([getattr(g, name) for g in graphs])

    rank = np.repeat(np.arange(len(graphs), dtype=np.int64), lens)
    ndeps = np.concatenate([np.diff(g.dep_ptr) for g in graphs]) if graphs else np.zeros(0, np.int64)
    dep_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(ndeps, out=dep_ptr[1:])
    if graphs:
        it = np.int32 if n < 2**31 else np.int64  # positions are int32 in a rank graph
        dep_pos = np.concatenate(
            [g.dep_pos[g.dep_ptr[0] : g.dep_ptr[-1]].astype(it) + int(offsets[r]) for r, g in enumerate(graphs)]
        )
    else:
        dep_pos = np.zeros(0, dtype=np.int64)
    return Flat(
        offsets=offsets,
        rank=rank,
        ids=NodeIds(graphs, offsets),
        kind=cat("kind"),
        peer=cat("peer"),
        tag=cat("tag"),
        count=cat("count"),
        src_buf=cat("src_buf"),
        src_off=cat("src_off"),
        dst_buf=cat("dst_buf"),
        dst_off=cat("dst_off"),
        op=cat("op"),
        size=cat("size"),
        dep_ptr=dep_ptr,
        dep_pos=dep_pos,
    )
