"""Write algorithms as Chakra ET files (``<prefix>.<rank>.et``): encode every rank, commit the set.

The node bytes come from :mod:`._encode` (compiled, byte-identical to protobuf's serializer),
the GlobalMetadata from the chosen attribute set (:mod:`._attrsets`), and the files are
committed all or nothing by :mod:`._fileset`. Workloads are written by :mod:`._workload_io`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..errors import ExportError
from . import _profile as P
from ._attrsets import Attributes, astrasim_metadata_attrs, astrasim_problem, check_attributes, metadata_attrs
from ._encode import encode_rank_into
from ._fileset import check_prefix, rank_path, stale_rank_files, write_files_atomically
from ._model import Algorithm
from ._wire import TypedValue, delimit, encode_global_metadata

__all__ = ["BATCH_NODES", "MAX_THREADS", "write_algorithm"]


#: a second thread pays off from this many nodes on (below, thread start-up costs more)
BATCH_NODES = 16384
#: at most this many threads encode and write (memory bandwidth bounds the gain beyond)
MAX_THREADS = 4


def write_algorithm(
    alg: Algorithm, prefix: str | os.PathLike[str], *, attributes: Attributes = "profile"
) -> list[Path]:
    """Write ``alg`` as ``<prefix>.<rank>.et`` files; return the paths.

    ``attributes`` chooses what goes on the wire:

    * ``"profile"`` (default): the collhub collective profile (docs/spec/collective-profile.md):
      ASTRA-sim's ``comm_*`` attributes plus the semantic ones (``cnt``, ``sbuf``, ``soff``,
      ``dbuf``, ``doff``, ``op``, ``tb``, ``chan``), foreign attributes, and the full
      GlobalMetadata. :func:`read_algorithm` gives back the same algorithm.
    * ``"astrasim"``: only what ASTRA-sim master's custom-collective path reads, typed as
      chakra-et.md §4.3/§7 prescribe. SEND: ``comm_size`` (int64, bytes), ``comm_dst``,
      ``comm_tag`` (int32); RECV: ``comm_size``, ``comm_src``, ``comm_tag``; COMP:
      ``duration_micros`` when > 0 (unset: ASTRA-sim charges 1 ns); ids, the graph's own names,
      types and ``data_deps``. GlobalMetadata: version ``0.0.4``, ``schema``, ``collective``,
      ``ranks``, ``algorithm`` (if named), ``size`` (if bound), ``rank``. An algorithm ASTRA-sim
      cannot run (see :func:`astrasim_problem`) raises :class:`hub.errors.ExportError`. Buffer
      semantics are not written, so reading such files back gives a timing-only algorithm.

    Files are written atomically as a set (temporary files, then renames), with the mode a newly
    created file gets (0666 minus the umask); rank files of an older, larger set under the same
    prefix are removed in the same step. An empty prefix (``""``, ``out/``) is refused.
    """
    check_prefix(prefix)
    check_attributes(attributes)
    if attributes == "astrasim":
        problem = astrasim_problem(alg)
        if problem:
            raise ExportError(
                f"algorithm {alg.meta.name or alg.meta.collective.value!r}: {problem}",
                hint="ASTRA-sim's custom-collective ETs need bound SEND/RECV/COMP nodes between distinct ranks",
            )
    meta_attrs = astrasim_metadata_attrs if attributes == "astrasim" else metadata_attrs
    metas = _metadata_messages(meta_attrs(alg.meta, 0), len(alg.graphs))
    # each rank is encoded by the thread that writes its file, just before the write, into that
    # thread's reusable buffer: memory stays at one buffer per thread, and encoding (compiled,
    # without the GIL) overlaps the other thread's write
    buffers = threading.local()

    def body(rank: int) -> memoryview:
        view, buffers.out = encode_rank_into(
            alg.graphs[rank], rank, getattr(buffers, "out", bytearray()), attributes=attributes
        )
        return view

    threads = min(_cpus(), MAX_THREADS, max(1, alg.node_count() // BATCH_NODES))
    contents = [(rank_path(prefix, r), _RankFile(body, r, metas[r])) for r in range(len(alg.graphs))]
    return write_files_atomically(contents, stale=stale_rank_files(prefix, len(alg.graphs)), threads=threads)


def _metadata_messages(attrs0: list[tuple[str, Any]], ranks: int) -> list[bytes]:
    """Every rank's delimited GlobalMetadata: the attributes of rank 0's with each rank's ``rank``
    attribute (the only one that differs), encoded once around it."""
    k = next(i for i, (name, _v) in enumerate(attrs0) if name == P.META.RANK)
    before = encode_global_metadata(P.ET_VERSION, attrs0[:k])
    after = encode_global_metadata("", attrs0[k + 1 :])
    return [
        delimit(before + encode_global_metadata("", [(P.META.RANK, TypedValue("int32_val", r))]) + after)
        for r in range(ranks)
    ]


class _RankFile:
    """The chunks of one rank file, encoded when the atomic writer comes to write them."""

    def __init__(self, body: Callable[[int], memoryview], rank: int, meta: bytes) -> None:
        self.body = body
        self.rank = rank
        self.meta = meta

    def __iter__(self) -> Iterator[bytes | memoryview]:
        yield self.meta
        yield self.body(self.rank)


def _cpus() -> int:
    """CPUs this process may run on (the affinity mask where known, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1
