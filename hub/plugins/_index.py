"""The installed entry points of group ``collhub``, from a cache that a changed environment invalidates.

``importlib.metadata.entry_points(group=...)`` costs every start the import of
``importlib.metadata`` (email, zipfile, csv, ...) and a read of every installed distribution's
``entry_points.txt``. The index keeps the rows it returned in one small JSON file per interpreter
(``entry-points-v1-<id>.json`` in collhub's cache directory), keyed on a *stamp* of what an install,
an uninstall or an edit changes:

* ``sys.path`` itself (a ``.pth``, ``PYTHONPATH`` or a test's ``syspath_prepend``), and the
  interpreter's version;
* each ``sys.path`` directory: the names of its ``*.dist-info`` / ``*.egg-info`` entries, and for
  each the ``(mtime_ns, size, inode)`` of its ``entry_points.txt`` and of its ``METADATA`` /
  ``PKG-INFO`` (a reinstall writes new files: new inode and mtime); a zip on ``sys.path``: its own.

pip never changes metadata without writing new files, so a stamp that matches means the scan
would return the same rows. Computing the stamp is a directory listing per ``sys.path`` entry and
two ``stat`` calls per distribution (about a millisecond). When a finder on ``sys.meta_path``
other than the path finder can provide distributions, or ``COLLHUB_NO_INDEX_CACHE=1``, or the
cache directory cannot be written, every call scans, as before.

Nothing here imports pluggy, pydantic or ``importlib.metadata`` on a cache hit.
"""

from __future__ import annotations

import json
import os
import sys
import zlib
from importlib import import_module
from pathlib import Path
from typing import Any, NamedTuple

from .._env import env_flag

__all__ = ["ENV_NO_CACHE", "EntryRow", "cache_dir", "entry_rows", "load_value", "stamp"]

ENV_NO_CACHE = "COLLHUB_NO_INDEX_CACHE"
_FORMAT = 1
_META_FILES = ("METADATA", "PKG-INFO")
#: stamps kept per interpreter
_KEEP = 4


class EntryRow(NamedTuple):
    """One entry point as ``importlib.metadata`` reports it, with its distribution."""

    name: str
    value: str
    dist: str
    version: str
    #: the distribution's metadata directory ('' when unknown)
    path: str


def cache_dir() -> Path:
    """``$COLLHUB_CACHE_DIR``, else ``$XDG_CACHE_HOME/collhub`` (``~/.cache/collhub``)."""
    base = os.environ.get("COLLHUB_CACHE_DIR")
    if base:
        return Path(base)
    return Path(os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")) / "collhub"


def _file_stamp(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_size, st.st_ino]


def _dir_stamp(entry: str) -> Any:
    """What the scan of one ``sys.path`` entry depends on (see the module docstring)."""
    where = os.path.abspath(entry or ".")
    try:
        children = os.scandir(where)
    except NotADirectoryError:
        return ["file", _file_stamp(where)]
    except OSError:
        return None
    rows = []
    with children:
        for child in children:
            name = child.name
            low = name.lower()
            if not (low.endswith(".dist-info") or low.endswith(".egg-info")):
                continue
            base = os.path.join(where, name)
            rows.append(
                [name, _file_stamp(os.path.join(base, "entry_points.txt"))]
                + [_file_stamp(os.path.join(base, meta)) for meta in _META_FILES]
            )
    rows.sort()
    return rows


def stamp() -> list[Any]:
    """The environment's stamp: equal stamps mean ``entry_points()`` returns equal rows."""
    return [_FORMAT, sys.version, list(sys.path), [_dir_stamp(e) for e in sys.path]]


def _cacheable() -> bool:
    if env_flag(ENV_NO_CACHE):
        return False
    from importlib.machinery import PathFinder

    # another finder that provides distributions (a zipapp's, a custom importer's) may change
    # what it reports without touching anything the stamp looks at; the importlib_metadata
    # backport's finder (installed on sys.meta_path by importing it, e.g. through dask) reads the
    # same sys.path dist-info directories the stamp covers, so it is as safe as PathFinder
    return all(f is PathFinder or not hasattr(f, "find_distributions") or _reads_sys_path(f) for f in sys.meta_path)


def _reads_sys_path(finder: object) -> bool:
    cls = type(finder)
    return cls.__module__ == "importlib_metadata" and cls.__name__ == "MetadataPathFinder"


def _cache_file() -> Path:
    tag = zlib.crc32(f"{sys.executable}\0{sys.version}".encode()) & 0xFFFFFFFF
    return cache_dir() / f"entry-points-v1-{tag:08x}.json"


def _scan(group: str) -> list[EntryRow]:
    from importlib.metadata import entry_points

    rows = []
    for ep in entry_points(group=group):
        dist = ep.dist
        path = getattr(dist, "_path", None)
        rows.append(
            EntryRow(
                ep.name,
                ep.value,
                dist.name if dist is not None else "<unknown>",
                dist.version if dist is not None else "?",
                str(path) if path is not None else "",
            )
        )
    return rows


def entry_rows(group: str = "collhub") -> tuple[list[EntryRow], list[Any]]:
    """The entry points of ``group`` in ``importlib.metadata`` order, and the stamp they belong to."""
    now = stamp()
    if not _cacheable():
        return _scan(group), now
    path = _cache_file()
    try:
        entries = [e for e in json.loads(path.read_text())["entries"] if isinstance(e, dict)]
    except (OSError, ValueError, KeyError, TypeError):
        entries = []
    mine = next((e for e in entries if e.get("stamp") == now), None)
    try:
        if mine is not None and group in mine["groups"]:
            return [EntryRow(*row) for row in mine["groups"][group]], now
    except (KeyError, TypeError, ValueError):
        mine = None
    rows = _scan(group)
    if mine is None:
        mine = {"stamp": now, "groups": {}}
    mine["groups"][group] = [list(r) for r in rows]
    # the few most recent environments of this interpreter: `python -m hub.cli` (cwd on sys.path)
    # and the console script alternate without rescanning each other's
    _store(path, {"entries": [mine, *[e for e in entries if e is not mine][: _KEEP - 1]]})
    return rows, now


def _store(path: Path, data: dict[str, Any]) -> None:
    """Write the cache atomically; best effort: a read-only cache directory only costs a scan."""
    from ..atomic import write_file

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_file(path, json.dumps(data))
    except Exception:  # noqa: BLE001 - the cache must never break loading the plugins
        pass


def load_value(value: str) -> Any:
    """What ``EntryPoint(value=value).load()`` returns: ``module[:attr.path] [extras]``, imported."""
    module_name, _, attr = value.split("[", 1)[0].strip().partition(":")
    obj: Any = import_module(module_name.strip())
    for part in attr.strip().split(".") if attr.strip() else []:
        obj = getattr(obj, part)
    return obj
