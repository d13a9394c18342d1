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
from typing import Any

import numpy as np

from .._native import _codec
from ..errors import UsageError
from . import _ranks  # noqa: F401  (configures the codec's attribute names)
from ._attrsets import Attributes, check_attributes
from ._model import _COLUMNS, RankGraph
from ._wire import encode_node

__all__ = ["encode_rank", "encode_rank_into", "encode_ranks"]


def _blob(parts: dict[int, bytes], n: int) -> tuple[bytes, np.ndarray]:
    """Per-node byte strings as one blob and n+1 offsets (empty for nodes without one)."""
    lens = np.zeros(n, np.int64)
    keys = sorted(parts)
    lens[keys] = [len(parts[k]) for k in keys]
    return b"".join(parts[k] for k in keys), np.concatenate(([0], np.cumsum(lens)))


def _args(g: RankGraph, rank: int, attributes: Attributes) -> tuple[Any, ...]:
    """The compiled encoder's arguments for one rank graph (see :func:`encode_rank`)."""
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
    return (
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


def encode_rank(g: RankGraph, rank: int, *, attributes: Attributes = "profile") -> bytes:
    """The delimited Node messages of one rank graph.

    ``attributes`` selects the node attribute set, see :func:`hub.chakra.write_algorithm`.
    """
    data = _codec.encode_rank(*_args(g, rank, attributes))
    assert isinstance(data, bytes)  # without an out buffer the encoder returns the bytes
    return data


def encode_rank_into(
    g: RankGraph, rank: int, out: bytearray, *, attributes: Attributes = "profile"
) -> tuple[memoryview, bytearray]:
    """:func:`encode_rank` into ``out``: (a view of the bytes, the buffer that holds them).

    The buffer is ``out`` itself when it is large enough, else a new, larger one (``out`` is
    left as it is: views of it stay valid). A writer that passes the buffer it got back to the
    next call allocates, and so faults in, fresh memory only a few times per set, not per file.
    """
    args = _args(g, rank, attributes)
    written = _codec.encode_rank(*(*args, out))
    if isinstance(written, int) and written < 0:  # too small: -written bytes are needed; grow geometrically
        out = bytearray(max(-written, 2 * len(out)))
        written = _codec.encode_rank(*(*args, out))
    assert isinstance(written, int)
    return memoryview(out)[:written], out


def encode_ranks(
    graphs: Sequence[RankGraph], ranks: Sequence[int], *, attributes: Attributes = "profile"
) -> list[bytes]:
    """:func:`encode_rank` of several graphs (one unit of work for the writer's threads)."""
    return [encode_rank(g, r, attributes=attributes) for g, r in zip(graphs, ranks, strict=True)]
