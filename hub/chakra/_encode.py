"""Rank graphs -> Node messages: the encoder of algorithm files.

Each rank's columns go to the compiled encoder (``hub._native._codec.encode_rank``) as they
are, with what cannot be columns pre-encoded in Python by the general encoder
(:func:`._wire.encode_node`): node names and foreign attributes (``RankGraph.extra``). The bytes
are identical to what protobuf's serializer produces for the same messages (fields in
field-number order, proto3 defaults omitted); tests/chakra/test_roundtrip.py checks them
against :func:`._wire.encode_node` node by node, and test_interop.py against MLCommons' reader.
The encoder releases the GIL, so ranks encode in parallel threads (:mod:`._writer`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .._native import _codec
from ..errors import UsageError
from . import _ranks  # noqa: F401  (configures the codec's attribute names)
from ._attrsets import Attributes, check_attributes
from ._model import _COLUMNS, RankGraph
from ._wire import encode_node

__all__ = ["encode_rank", "encode_ranks"]


def _blob(parts: dict[int, bytes], n: int) -> tuple[bytes, np.ndarray]:
    """Per-node byte strings as one blob and n+1 offsets (empty for nodes without one)."""
    lens = np.zeros(n, np.int64)
    keys = sorted(parts)
    lens[keys] = [len(parts[k]) for k in keys]
    return b"".join(parts[k] for k in keys), np.concatenate(([0], np.cumsum(lens)))


def encode_rank(g: RankGraph, rank: int, *, attributes: Attributes = "profile") -> bytes:
    """The delimited Node messages of one rank graph.

    ``attributes`` selects the node attribute set, see :func:`hub.chakra.write_algorithm`.
    """
    check_attributes(attributes)
    n = len(g)
    if n and int(g.ids.min()) < 0:
        raise UsageError(f"rank {rank}: node ids must be >= 0 (Chakra ids are uint64)")
    # columns of the wrong dtype (a graph built by hand) are converted; the usual ones pass as they are
    cols = tuple(np.ascontiguousarray(getattr(g, name), dtype) for name, dtype, _d in _COLUMNS)
    names = names_off = extra = extra_off = None
    if g.names is not None and any(g.names):
        names, names_off = _blob({i: encode_node(name=s) for i, s in enumerate(g.names) if s}, n)
    if g.extra and attributes == "profile":
        extra, extra_off = _blob(
            {int(pos): b"".join(encode_node(attrs=[a]) for a in attrs) for pos, attrs in g.extra.items()}, n
        )
    data: bytes = _codec.encode_rank(
        attributes == "astrasim",
        rank,
        cols,
        np.ascontiguousarray(g.dep_ptr, np.int64),
        np.ascontiguousarray(g.dep_pos, np.int32),
        names,
        names_off,
        extra,
        extra_off,
    )
    return data


def encode_ranks(
    graphs: Sequence[RankGraph], ranks: Sequence[int], *, attributes: Attributes = "profile"
) -> list[bytes]:
    """:func:`encode_rank` of several graphs (one unit of work for the writer's threads)."""
    return [encode_rank(g, r, attributes=attributes) for g, r in zip(graphs, ranks, strict=True)]
