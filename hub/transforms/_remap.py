"""``hub.remap``: place algorithm ranks on other rank files (topology ranks)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ..chakra import Algorithm, NodeType
from ..errors import UsageError
from ..verify._layout import COMM_ORDER_KEY, comm_order

__all__ = ["RemapParams", "remap_algorithm", "remap_transform", "resolve_mapping"]


class RemapParams(BaseModel):
    """Parameters of ``hub.remap``."""

    model_config = ConfigDict(extra="forbid")

    mapping: list[int] | None = Field(
        None, description="explicit permutation: algorithm rank r runs on rank mapping[r] (overrides strategy)"
    )
    strategy: Literal["identity", "reverse", "random"] = Field(
        "identity", description="how to build the mapping when none is given"
    )
    seed: int = Field(0, description="seed of the random strategy")


def resolve_mapping(ranks: int, mapping: list[int] | None, strategy: str = "identity", seed: int = 0) -> list[int]:
    """The permutation to apply, validated."""
    if mapping is not None:
        m = [int(x) for x in mapping]
        if sorted(m) != list(range(ranks)):
            raise UsageError(
                f"remap mapping must be a permutation of 0..{ranks - 1}, got {m[:16]}"
                f"{'...' if len(m) > 16 else ''} ({len(m)} entries)",
                hint="every rank must appear exactly once",
            )
        return m
    if strategy == "identity":
        return list(range(ranks))
    if strategy == "reverse":
        return list(range(ranks - 1, -1, -1))
    if strategy == "random":
        return np.random.default_rng(seed).permutation(ranks).tolist()
    raise UsageError(f"unknown remap strategy {strategy!r}", hint="identity, reverse or random")


def remap_algorithm(alg: Algorithm, mapping: list[int]) -> Algorithm:
    """Move the program of rank r to rank ``mapping[r]`` and rewrite every peer accordingly.

    Data placement follows the program: rank ``mapping[r]`` starts with the input that rank r
    had. The collective is then the same collective over a *communicator* whose rank q is rank
    file ``order[q]``; the order is stored in ``meta.extra["comm_order"]`` (composed with any
    earlier remap) and the verifier checks the postcondition in communicator order. For
    all-reduce this changes nothing; for all-gather, rank file d's output block q holds the input
    of communicator rank q, i.e. of rank file ``order[q]`` -- as with an NCCL communicator whose
    ranks are placed on devices in that order. ``meta.root`` stays a communicator rank.
    """
    n = alg.ranks
    m = resolve_mapping(n, mapping)
    if m == list(range(n)):
        return alg
    mp = np.asarray(m, dtype=np.int64)
    graphs: list[Any] = [None] * n
    for r, g in enumerate(alg.graphs):
        ng = g.copy()
        comm = (ng.kind == NodeType.SEND) | (ng.kind == NodeType.RECV)
        ok = comm & (ng.peer >= 0) & (ng.peer < n)
        ng.peer = np.where(ok, mp[np.clip(ng.peer, 0, n - 1)], ng.peer).astype(np.int32)
        graphs[m[r]] = ng
    old = comm_order(alg.meta) or list(range(n))
    order = [m[o] for o in old]
    extra = tuple(kv for kv in alg.meta.extra if kv[0] != COMM_ORDER_KEY)
    if order != list(range(n)):
        extra = extra + ((COMM_ORDER_KEY, ",".join(map(str, order))),)
    return Algorithm(replace(alg.meta, extra=extra), tuple(graphs))


def remap_transform(algorithm: Algorithm, params: RemapParams, ctx: Any = None) -> Algorithm:
    """Transform factory of ``hub.remap`` (see :func:`remap_algorithm`)."""
    m = resolve_mapping(algorithm.ranks, params.mapping, params.strategy, params.seed)
    return remap_algorithm(algorithm, m)
