"""The two attribute sets an algorithm is written with: the collhub profile and ASTRA-sim's.

``"profile"`` is the collhub collective profile (lossless, docs/spec/collective-profile.md);
``"astrasim"`` is exactly what ASTRA-sim master reads and nothing else (chakra-et.md §4.3, §5,
§7). This module holds each set's GlobalMetadata attributes and the check that an algorithm can
run on ASTRA-sim at all; the node attributes of each set are written by the compiled encoder
(hub/_native/_codec_write.c, ``encode_rank``), which follows the same rules.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from ..errors import UsageError
from . import _profile as P
from ._model import Algorithm, AlgorithmMeta, NodeType
from ._wire import TypedValue

__all__ = [
    "ASTRASIM_TAG_LIMIT",
    "ATTRIBUTE_SETS",
    "Attributes",
    "astrasim_metadata_attrs",
    "astrasim_problem",
    "check_attributes",
    "metadata_attrs",
]

#: Which attributes the writers put on nodes and into the GlobalMetadata:
#: ``"profile"`` = the collhub profile (lossless), ``"astrasim"`` = only what ASTRA-sim reads.
Attributes = Literal["profile", "astrasim"]
ATTRIBUTE_SETS = ("profile", "astrasim")
#: ASTRA-sim's system layer keeps tags modulo 500,000,000: larger tags would alias.
ASTRASIM_TAG_LIMIT = 500_000_000


def check_attributes(attributes: str) -> None:
    if attributes not in ATTRIBUTE_SETS:
        raise UsageError(f"unknown attribute set {attributes!r}", hint="use 'profile' or 'astrasim'")


def metadata_attrs(meta: AlgorithmMeta, rank: int) -> list[tuple[str, Any]]:
    """The profile's GlobalMetadata attributes for one rank file."""
    M = P.META
    attrs: list[tuple[str, Any]] = [
        (M.SCHEMA, TypedValue("string_val", P.SCHEMA)),
        (M.PROFILE, TypedValue("string_val", P.PROFILE_VERSION)),
        (M.COLLECTIVE, TypedValue("string_val", str(meta.collective.value))),
        (M.RANKS, TypedValue("int32_val", meta.ranks)),
        (M.IN_CHUNKS, TypedValue("int32_val", meta.in_chunks)),
        (M.OUT_CHUNKS, TypedValue("int32_val", meta.out_chunks)),
        (M.SCRATCH_CHUNKS, TypedValue("int32_val", meta.scratch_chunks)),
        (M.INPLACE, TypedValue("bool_val", bool(meta.inplace))),
        (M.ROOT, TypedValue("int32_val", meta.root)),
    ]
    if meta.name:
        attrs.append((M.ALGORITHM, TypedValue("string_val", meta.name)))
    if meta.producer:
        attrs.append((M.PRODUCER, TypedValue("string_val", meta.producer)))
    if meta.size is not None:
        attrs.append((M.SIZE, TypedValue("int64_val", int(meta.size))))
    attrs.append((M.RANK, TypedValue("int32_val", rank)))
    for name, value in meta.extra:
        if name in P.META_NAMES:
            raise UsageError(f"AlgorithmMeta.extra uses the reserved metadata name {name!r}")
        attrs.append((name, value))
    return attrs


def astrasim_metadata_attrs(meta: AlgorithmMeta, rank: int) -> list[tuple[str, Any]]:
    """The small GlobalMetadata of the ``"astrasim"`` set: what the reference converter writes
    (``schema``, ``collective``) plus the rank count, the algorithm's name and size, and the rank.
    ASTRA-sim ignores all of it; collhub's reader uses ``ranks`` and ``collective``."""
    M = P.META
    attrs: list[tuple[str, Any]] = [
        (M.SCHEMA, TypedValue("string_val", P.SCHEMA)),
        (M.COLLECTIVE, TypedValue("string_val", str(meta.collective.value))),
        (M.RANKS, TypedValue("int32_val", meta.ranks)),
    ]
    if meta.name:
        attrs.append((M.ALGORITHM, TypedValue("string_val", meta.name)))
    if meta.size is not None:
        attrs.append((M.SIZE, TypedValue("int64_val", int(meta.size))))
    attrs.append((M.RANK, TypedValue("int32_val", rank)))
    return attrs


def astrasim_problem(alg: Algorithm) -> str | None:
    """The first reason ASTRA-sim's custom-collective path cannot run ``alg``, or None.

    Refused: node types other than COMM_SEND/COMM_RECV/COMP (the walker issues no others), an
    empty rank (feeder_v3 finds no dependency-free node), a message without a byte size
    (``comm_size`` is required), a peer that is not another rank, a tag outside
    0..499,999,999 (tags are kept modulo 500,000,000) and duplicate ids (feeder_v3 indexes by id).
    """
    n = alg.ranks
    for rank, g in enumerate(alg.graphs):
        kinds = g.kind
        if len(g) == 0:
            return f"rank {rank} has no nodes (ASTRA-sim's feeder refuses a graph without a dependency-free node)"
        bad = np.flatnonzero(~np.isin(kinds, (NodeType.SEND, NodeType.RECV, NodeType.COMP)))
        if bad.size:
            p = int(bad[0])
            return (
                f"rank {rank}, node {int(g.ids[p])}: node type {NodeType(int(kinds[p])).name} cannot appear in a "
                "custom-collective ET (ASTRA-sim issues only COMM_SEND, COMM_RECV and COMP nodes)"
            )
        comm = (kinds == NodeType.SEND) | (kinds == NodeType.RECV)
        unsized = np.flatnonzero(comm & (g.size < 0))
        if unsized.size:
            p = int(unsized[0])
            return (
                f"rank {rank}, node {int(g.ids[p])}: message has no byte size "
                "(algorithm not bound to a collective size)"
            )
        wrong = np.flatnonzero(comm & ((g.peer < 0) | (g.peer >= n) | (g.peer == rank)))
        if wrong.size:
            p = int(wrong[0])
            return f"rank {rank}, node {int(g.ids[p])}: peer {int(g.peer[p])} is not another rank of 0..{n - 1}"
        tags = np.flatnonzero(comm & ((g.tag < 0) | (g.tag >= ASTRASIM_TAG_LIMIT)))
        if tags.size:
            p = int(tags[0])
            return (
                f"rank {rank}, node {int(g.ids[p])}: tag {int(g.tag[p])} is outside 0..{ASTRASIM_TAG_LIMIT - 1} "
                f"(ASTRA-sim keeps tags modulo {ASTRASIM_TAG_LIMIT})"
            )
        ids = np.sort(g.ids)
        dup = np.flatnonzero(ids[1:] == ids[:-1])
        if dup.size:
            return f"rank {rank}, node {int(ids[dup[0]])}: node id used twice (ASTRA-sim indexes nodes by id)"
    return None
