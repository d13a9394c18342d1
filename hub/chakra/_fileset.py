"""A set of rank files ``<prefix>.<rank>.et``: naming, listing, and the all-or-nothing commit.

Writers check the prefix, name each rank's file, and commit the whole set atomically while
removing the rest of an older, larger set under the same prefix; readers find the files of a
set (``.0.et`` .. ``.N-1.et`` without gaps, as many as rank 0's GlobalMetadata declares).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from ..errors import TraceFormatError, UsageError
from . import _profile as P
from ._meta import first_metadata, is_int_value
from ._wire import TypedValue

__all__ = [
    "check_prefix",
    "present_ranks",
    "rank_files",
    "rank_files_and_metadata",
    "rank_path",
    "stale_rank_files",
    "write_files_atomically",
]


def rank_path(prefix: str | os.PathLike[str], rank: int) -> Path:
    """``<prefix>.<rank>.et``."""
    return Path(f"{os.fspath(prefix)}.{rank}.et")


def write_files_atomically(
    contents: Sequence[tuple[Path, Iterable[bytes | memoryview]]], *, stale: Sequence[Path] = (), threads: int = 1
) -> list[Path]:
    """Write a set of files all or nothing (see :func:`hub.atomic.write_files`); each file's
    chunks are taken from its iterable when that file is written (a writer may encode lazily),
    by ``threads`` threads."""
    from ..atomic import write_files

    return write_files(contents, stale=stale, threads=threads)


def check_prefix(prefix: str | os.PathLike[str]) -> Path:
    """``prefix`` as a path, refused when it names no file (``""``, ``out/``): the rank files
    would be hidden ``.<rank>.et`` files."""
    text = os.fspath(prefix)
    if not text or text.endswith(("/", os.sep)) or Path(text).name in ("", ".", ".."):
        raise UsageError(
            f"output prefix {text!r} names no file",
            hint="give a prefix such as out/ring (files out/ring.0.et, out/ring.1.et, ...)",
        )
    return Path(text)


def stale_rank_files(prefix: str | os.PathLike[str], ranks: int) -> list[Path]:
    """Files ``<prefix>.<r>.et`` with ``r >= ranks``: the rest of an older, larger set, which
    writing a new set over the prefix removes (a reader would take them for one set)."""
    path = Path(os.fspath(prefix))
    parent = path.parent
    pat = re.compile(re.escape(path.name) + r"\.(\d+)\.et$")
    try:
        names = os.listdir(parent)
    except OSError:
        return []
    return [parent / f for f in names if (m := pat.match(f)) and int(m.group(1)) >= ranks]


def present_ranks(prefix: str | os.PathLike[str]) -> list[int]:
    """The rank numbers N of the files ``<prefix>.<N>.et`` in the prefix's directory, sorted:
    one directory listing, whatever a file claims."""
    path = Path(os.fspath(prefix))
    pat = re.compile(re.escape(path.name) + r"\.(0|[1-9]\d{0,9})\.et$")
    try:
        names = os.listdir(path.parent if str(path.parent) else ".")
    except OSError:
        return []
    return sorted(int(m.group(1)) for f in names if (m := pat.match(f)))


def _missing_hint(first: Path) -> str:
    from ._load import not_found_hint

    hint = not_found_hint(first)
    return hint if "one rank file" in hint else f"expected files {first.name.removesuffix('.0.et')}.<rank>.et"


def rank_files(prefix: str | os.PathLike[str]) -> list[Path]:
    """The rank files of ``prefix``, which must be ``.0.et`` .. ``.N-1.et`` without gaps.

    When rank 0's GlobalMetadata declares ``ranks``, exactly that many files must be present
    (checked against one directory listing before anything is allocated by the claim)."""
    return rank_files_and_metadata(prefix)[0]


def rank_files_and_metadata(prefix: str | os.PathLike[str]) -> tuple[list[Path], dict[str, TypedValue]]:
    """:func:`rank_files` and rank 0's typed GlobalMetadata attributes, read once."""
    first = rank_path(prefix, 0)
    if not first.exists() and not first.is_symlink():
        raise TraceFormatError(
            "file not found",
            path=str(first),
            rank=0,
            hint=_missing_hint(first),
        )
    _v, typed = first_metadata(first)
    present = present_ranks(prefix)
    contiguous = next((i for i, r in enumerate(present) if r != i), len(present))
    declared = typed.get(P.META.RANKS)
    if declared is not None:
        count = declared.value
        if not is_int_value(declared):
            raise TraceFormatError(
                f"GlobalMetadata attribute ranks holds {declared.field} {count!r}, not an integer",
                path=str(first),
                rank=0,
                hint="ranks is the number of rank files (int32)",
            )
        if count < 1:
            raise TraceFormatError(
                f"GlobalMetadata attribute ranks = {count} is out of range",
                path=str(first),
                rank=0,
                hint="ranks is the number of rank files, at least 1",
            )
        if contiguous < count:
            raise TraceFormatError(
                f"missing rank file (GlobalMetadata says {count} ranks, {len(present)} rank file(s) present)",
                path=str(rank_path(prefix, contiguous)),
                rank=contiguous,
                hint="rank files must be numbered 0..N-1 without gaps",
            )
        if present[-1] >= count:
            raise TraceFormatError(
                f"GlobalMetadata attribute ranks = {count}, but rank file {present[-1]} is present "
                f"({len(present)} rank files)",
                path=str(first),
                rank=0,
                hint="the set mixes outputs: remove the extra rank files or rewrite the whole set",
            )
        return [rank_path(prefix, r) for r in range(count)], typed
    if present and present[-1] >= contiguous:
        missing = rank_path(prefix, contiguous)
        raise TraceFormatError(
            f"missing rank file (rank {present[-1]} exists)",
            path=str(missing),
            rank=contiguous,
            hint="rank files must be numbered 0..N-1 without gaps",
        )
    return [rank_path(prefix, r) for r in range(max(contiguous, 1))], typed
