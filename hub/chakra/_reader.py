"""Read Chakra ET files (``<prefix>.<rank>.et``) into the model: algorithms, and either kind.

Accepts files written by collhub and foreign ones (ASTRA-sim's examples, the MSCCL-IR
converter, any protobuf writer): any integer typing of the ``comm_*`` attributes, ``ctrl_deps``
as dependencies, id gaps, unknown fields and attributes, and gzip (``1f 8b`` magic).
Every problem is a :class:`hub.errors.TraceFormatError` naming the file, rank and node.
The nodes are decoded by :mod:`._ranks`; workloads are read by :mod:`._workload_io`.
"""

from __future__ import annotations

import os
from typing import Any, Literal

import numpy as np

from ..errors import TraceFormatError
from . import _profile as P
from ._decode import decode_node
from ._fileset import rank_path
from ._load import load
from ._meta import first_metadata, frame_file, read_global_metadata
from ._model import Algorithm, NodeType
from ._stream import RankStream, iter_ranks
from ._wire import WireError
from ._workload import Workload

__all__ = ["iter_ranks", "read_algorithm", "read_global_metadata", "read_trace", "trace_kind"]


def read_algorithm(prefix: str | os.PathLike[str]) -> Algorithm:
    """Read ``<prefix>.<rank>.et`` for every rank into an :class:`Algorithm`.

    The files are read and decoded a batch of ranks at a time (:class:`._stream.RankStream`), so
    the bytes of the whole set are never held at once; :func:`iter_ranks` hands the ranks out one
    at a time instead, for consumers that need not hold every graph.
    """
    stream = RankStream(prefix)
    return Algorithm(stream.meta, tuple(stream))


def read_trace(prefix: str | os.PathLike[str]) -> Algorithm | Workload:
    """Read an algorithm or a workload, whichever the files hold.

    Profile metadata means an algorithm; otherwise rank 0's nodes decide: any COMM_COLL_NODE
    means a workload, else any SEND/RECV means an algorithm, else a workload.
    """
    if trace_kind(prefix) == "algorithm":
        return read_algorithm(prefix)
    from ._workload_io import read_workload  # the general message codec: workloads only

    return read_workload(prefix)


def trace_kind(prefix: str | os.PathLike[str]) -> Literal["algorithm", "workload"]:
    """What :func:`read_trace` would read: ``"algorithm"`` or ``"workload"`` (from rank 0's file)."""
    first = rank_path(prefix, 0)
    _v, typed = first_metadata(first)  # only the first message: the rest is framed if needed
    if P.META.PROFILE in typed:
        return "algorithm"
    if P.META.WORKLOAD in typed:
        return "workload"
    data = load(first, 0)
    starts, ends = frame_file(data, first, 0)
    kinds = _compiled_kinds(data, starts, ends)
    if kinds is None:
        kinds = _decoded_kinds(data, starts, ends, first)
    if NodeType.COLL in kinds:
        return "workload"
    if kinds & {NodeType.SEND, NodeType.RECV}:
        return "algorithm"
    return "workload"


def _compiled_kinds(data: bytes, starts: Any, ends: Any) -> set[int] | None:
    """The node types of one file, read by the compiled walk (``_codec.node_types``: only each
    node's type field is decoded, so deciding the kind costs no decode of rank 0 before the
    reader decodes it). None when a node is malformed: the general decoder then says what is
    wrong."""
    from .._native import _codec

    bits = _codec.node_types(data, np.asarray(starts[1:], dtype=np.int64), np.asarray(ends[1:], dtype=np.int64))
    if bits < 0:
        return None
    return {t for t in range(64) if bits >> t & 1}


def _decoded_kinds(data: bytes, starts: Any, ends: Any, first: os.PathLike[str] | str) -> set[int]:
    """The node types of one file, each node decoded by the general decoder (the reference)."""
    kinds = set()
    for s, e in zip(starts[1:], ends[1:], strict=True):
        try:
            kinds.add(decode_node(data, s, e)["type"])
        except WireError as exc:
            raise TraceFormatError(
                f"malformed node message: {exc} (byte {exc.pos})",
                path=str(first),
                rank=0,
                hint="the file is truncated or corrupt",
            ) from None
    return kinds
