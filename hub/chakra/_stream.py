"""An algorithm's rank files read rank by rank: :func:`iter_ranks` / :class:`RankStream`.

The files are read a batch at a time into one reused buffer (:func:`._load.load_batches`),
framed by the compiled framer, their GlobalMetadata decoded and checked against rank 0's
(:mod:`._meta`), their nodes decoded (:mod:`._ranks`) and each graph checked as
:func:`hub.chakra.check_algorithm` checks it, before it is handed out. A consumer that keeps
only what it computes from each rank never holds more than one batch of graphs (about
``_BATCH_BYTES`` of files); :func:`hub.chakra.read_algorithm` is this stream, collected.

Every problem is a :class:`hub.errors.TraceFormatError` naming the file, rank and node.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from ..errors import TraceFormatError
from . import _profile as P
from ._fileset import rank_files_and_metadata
from ._load import load_batches
from ._meta import SetMetadata, batch_metadata, check_file_meta, frame_file, meta_from_attrs
from ._model import AlgorithmMeta, RankGraph
from ._ranks import Arena, NodeError, Scratch, decode_columns, frame_files
from ._validate import batch_total, check_meta, check_rank

__all__ = ["RankStream", "iter_ranks"]

#: bytes of rank files read and decoded per pass: bounds the temporary per-batch state (the
#: file bytes and about 40 bytes a node) while amortizing the per-pass cost
_BATCH_BYTES = 4 << 20


class RankStream:
    """The checked rank graphs of ``<prefix>.<rank>.et``, in rank order, read on iteration.

    ``meta`` (from rank 0's GlobalMetadata), ``paths`` and ``len()`` are known before any node is
    read. Iterate once; each graph is checked like :func:`hub.chakra.read_algorithm` checks it, so a
    bad file raises when its rank is reached (the graphs before it were already handed out).
    A graph's columns are views of its batch's arrays: keeping one graph keeps that batch's.
    """

    def __init__(self, prefix: str | os.PathLike[str], *, batch_bytes: int | None = None) -> None:
        self.paths, first = rank_files_and_metadata(prefix)
        check_file_meta(first, {}, self.paths, 0)  # types first: the meta is built from them
        self.meta: AlgorithmMeta = meta_from_attrs(
            {k: tv.value for k, tv in first.items()}, len(self.paths), self.paths[0]
        )
        self.profile = P.META.PROFILE in first
        self._batch_bytes = batch_bytes or _BATCH_BYTES
        self._started = False
        # implausible metadata is refused before a node is read (nothing is allocated by a claim)
        check_meta(self.meta, paths=self.paths)

    def __len__(self) -> int:
        return len(self.paths)

    def __iter__(self) -> Iterator[RankGraph]:
        if self._started:
            raise RuntimeError("a RankStream is iterated once; open another with iter_ranks(prefix)")
        self._started = True
        return self._graphs()

    def _graphs(self) -> Iterator[RankGraph]:
        paths, meta = self.paths, self.meta
        files = SetMetadata(paths)
        # the graphs' memory in blocks of a few batches: few page faults, little held by a stream
        arena, scratch = Arena(4 * self._batch_bytes), Scratch()
        last: RankGraph | None = None  # the rank before a batch: its columns may be shared
        total = 0.0
        for data, bases, sizes, r0 in load_batches(paths, self._batch_bytes):
            meta_starts, meta_ends, counts = _frames(data, bases, sizes, paths, r0)
            for k, attrs in enumerate(batch_metadata(data, meta_starts, meta_ends, paths, r0)):
                files.check(attrs, r0 + k)
            try:
                graphs, cols = decode_columns(data, bases, sizes, counts - 1, arena, scratch, last)
            except NodeError as exc:
                rank = r0 + exc.rank
                raise TraceFormatError(
                    str(exc), path=str(paths[rank]), rank=rank, node=exc.node, hint=exc.hint
                ) from None
            if not self.profile:
                for k, g in enumerate(graphs):
                    _check_no_profile_nodes(g, paths[r0 + k], r0 + k)
            # the decoder checked the ranges of the wire values; the batch's values at once
            batch = batch_total(meta, cols, counts - 1, r0, total)
            if batch is None:  # some rank fails: find it and say why
                for k, g in enumerate(graphs):
                    total = check_rank(meta, g, r0 + k, total, paths=paths, ranges=False)
            else:
                total = batch
            last = graphs[-1] if graphs else None
            yield from graphs


def iter_ranks(prefix: str | os.PathLike[str]) -> RankStream:
    """The ranks of an algorithm's files, one at a time: ``for g in iter_ranks(prefix)`` sees rank
    0, 1, ... with ``.meta`` known up front, holding about one batch of files' graphs at a time.

    Example: ``sum(len(g) for g in iter_ranks("out/ring"))`` counts the nodes of a set of any size.
    """
    return RankStream(prefix)


def _frames(
    data: bytearray, bases: np.ndarray, sizes: np.ndarray, paths: list[Path], r0: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The files of ranks r0.. laid end to end in ``data``, framed: the span of each one's first
    message (starts, ends) and its count of messages."""
    starts, ends, counts, bad = frame_files(data, bases, sizes, every=False)
    if bad >= 0:  # the general framer says precisely what is wrong
        frame_file(bytes(data[int(bases[bad]) : int(bases[bad] + sizes[bad])]), paths[r0 + bad], r0 + bad)
        raise AssertionError("the compiled and the general framer disagree")  # pragma: no cover
    return starts, ends, counts


def _check_no_profile_nodes(g: RankGraph, path: Path, rank: int) -> None:
    """Nodes with the profile's buffer semantics need the profile's GlobalMetadata: without it
    (a zero-length or damaged first message) the set would silently read as ``custom``."""
    has = (g.src_buf >= 0) | (g.dst_buf >= 0)
    if has.any():
        p = int(np.argmax(has))
        raise TraceFormatError(
            "node carries collhub profile attributes (sbuf/dbuf) but the GlobalMetadata has no collhub_profile",
            path=str(path),
            rank=rank,
            node=int(g.ids[p]),
            hint="the GlobalMetadata is empty or damaged; rewrite the set",
        )
