"""Outputs are whole or absent: atomic file and directory commits with the usual modes.

Every artifact collhub or a first-party plugin writes goes through this module, so that

* a reader never sees a half-written file or directory (data goes to a temporary sibling, then
  one ``os.replace`` per file puts it in place; a failure removes the temporaries);
* files get the mode ``open()`` would give (``0666`` minus the umask, 0644 usually) and
  directories the mode ``mkdir`` would (``0777`` minus the umask, 0755 usually), not the
  0600/0700 that ``mkstemp``/``mkdtemp`` create;
* an output never silently destroys something that is not an output: a file is not written
  over a directory, a directory never replaces a regular file, and a set of files written over
  a prefix removes the stale members of the old set in the same step (see :func:`write_files`).

::

    write_file(path, data)                    one file (bytes, str or a sequence of buffers)
    write_files([(path, chunks), ...], stale=[...])   a set: all or nothing, stale members removed
    with output_path(path) as tmp: ...        a tool writes ``tmp`` by name (e.g. savefig)
    tmp = temp_dir(final); ...; commit_dir(tmp, final, replace=True)   a directory
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from .errors import UsageError

__all__ = ["commit_dir", "dir_mode", "file_mode", "output_path", "temp_dir", "write_file", "write_files"]

Data = bytes | bytearray | memoryview | str | Iterable[object]


def _umask() -> int:
    """The process umask, read without changing it where the platform allows (Linux /proc),
    else by the set-and-restore idiom (not thread safe, hence the /proc path first)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def file_mode() -> int:
    """The mode a file created by ``open()`` gets: 0666 minus the umask."""
    return 0o666 & ~_umask()


def dir_mode() -> int:
    """The mode a directory created by ``mkdir`` gets: 0777 minus the umask."""
    return 0o777 & ~_umask()


def _check_file_target(path: Path) -> None:
    if not path.name:
        raise UsageError(
            f"cannot write {str(path)!r}: the output name is empty", hint="give a file name (or prefix), e.g. out/ring"
        )
    if path.is_dir():
        raise UsageError(f"cannot write {path}: it is a directory", hint="choose a file name, not a directory")


def _mkparent(path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)  # like open(): a missing output folder is made
    except FileExistsError:
        raise UsageError(f"cannot write {path}: {path.parent} exists and is not a directory") from None


def _temp_file(path: Path, mode: int) -> tuple[int, Path]:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    # mkstemp creates 0600: give the file the mode open() would
    if hasattr(os, "fchmod"):
        os.fchmod(fd, mode)
    else:  # pragma: no cover - Windows
        os.chmod(tmp, mode)
    return fd, Path(tmp)


def _chunks(data: Data) -> Iterable[object]:
    if isinstance(data, str):
        return [data.encode("utf-8")]
    if isinstance(data, (bytes, bytearray, memoryview)):
        return [data]
    return data


def write_files(
    contents: Sequence[tuple[Path, Data]],
    *,
    stale: Sequence[Path] = (),
    check: Callable[[Path, Path], None] | None = None,
) -> list[Path]:
    """Write every file to a temporary name in its directory, then rename them all into place.

    ``stale`` files (members of an older, larger set under the same names) are removed right
    after the renames, so the set on disk is the new one and nothing else. On any failure the
    temporary files are removed, and so are final files this call created: a failed write never
    leaves a partial set. ``check(tmp, final)`` may inspect each finished temporary file before
    anything is renamed (raise to abort). Chunks are bytes-like (numpy arrays included) or str.
    """
    temps: list[tuple[Path, Path]] = []
    placed: list[Path] = []
    paths = [Path(p) for p, _ in contents]
    existed = {path: path.exists() for path in paths}
    mode = file_mode()
    try:
        for path in paths:
            _check_file_target(path)
        for path in sorted(set(paths), key=lambda p: str(p.parent)):
            _mkparent(path)
        for path, (_p, data) in zip(paths, contents, strict=False):
            fd, tmp = _temp_file(path, mode)
            temps.append((tmp, path))
            with os.fdopen(fd, "wb") as fh:
                for chunk in _chunks(data):
                    piece = chunk.encode("utf-8") if isinstance(chunk, str) else chunk
                    fh.write(memoryview(piece))  # type: ignore[arg-type]
            if check is not None:
                check(tmp, path)
        for tmp, path in temps:
            os.replace(tmp, path)
            placed.append(path)
        for old in stale:
            try:
                Path(old).unlink()
            except FileNotFoundError:
                pass
    except OSError as exc:
        _cleanup(temps, placed, existed)
        where = getattr(exc, "filename", None) or (paths[0].parent if paths else "")
        raise UsageError(
            f"cannot write {where}: {exc.strerror or exc}",
            hint="check that the output directory exists and is writable",
        ) from None
    except BaseException:
        _cleanup(temps, placed, existed)
        raise
    return paths


def _cleanup(temps: list[tuple[Path, Path]], placed: list[Path], existed: dict[Path, bool]) -> None:
    for tmp, _ in temps:
        try:
            tmp.unlink()
        except OSError:
            pass
    for path in placed:
        if not existed.get(path, False):
            try:
                path.unlink()
            except OSError:
                pass


def write_file(path: str | os.PathLike[str], data: Data, *, check: Callable[[Path], None] | None = None) -> Path:
    """Write one file atomically (see :func:`write_files`); ``check(tmp)`` may veto it."""
    target = Path(path)
    write_files([(target, data)], check=(lambda tmp, _final: check(tmp)) if check is not None else None)
    return target


@contextmanager
def output_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A temporary path (an existing empty file with the right mode) for a tool that writes by
    file name; it replaces ``path`` when the block ends without an exception, else it is removed."""
    target = Path(path)
    _check_file_target(target)
    _mkparent(target)
    fd, tmp = _temp_file(target, file_mode())
    os.close(fd)
    try:
        yield tmp
        os.chmod(tmp, file_mode())  # a tool may have re-created the file with its own mode
        os.replace(tmp, target)
    finally:
        try:
            tmp.unlink()
        except FileNotFoundError:
            pass


def temp_dir(final: str | os.PathLike[str]) -> Path:
    """A new empty directory next to ``final`` (same file system, so :func:`commit_dir` is one
    rename), with the mode ``mkdir`` gives (mkdtemp's is 0700)."""
    final = Path(final)
    if not final.name:
        raise UsageError(f"cannot write {str(final)!r}: the output name is empty", hint="give a directory name")
    if final.exists() and not final.is_dir():
        raise UsageError(
            f"{final} exists and is not a directory",
            hint="choose another output path; a file is never replaced by a directory",
        )
    _mkparent(final)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent))
    os.chmod(tmp, dir_mode())
    return tmp


def commit_dir(tmp: str | os.PathLike[str], final: str | os.PathLike[str], *, replace: bool = False) -> Path:
    """Move the finished directory ``tmp`` to ``final``.

    An existing ``final`` directory is swapped out (renamed aside, then removed) only with
    ``replace``; without it, or when ``final`` is not a directory (a regular file, a link to
    one, a fifo), this refuses with :class:`hub.errors.UsageError` and leaves ``final`` alone.
    """
    tmp, final = Path(tmp), Path(final)
    if final.is_symlink() or (final.exists() and not final.is_dir()):
        raise UsageError(
            f"{final} exists and is not a directory",
            hint="choose another output path; it is never moved aside or replaced",
        )
    old: Path | None = None
    if final.exists():
        if not replace:
            raise UsageError(f"{final} already exists", hint="choose another output path, or allow replacing it")
        old = final.with_name(f".{final.name}.old-{uuid.uuid4().hex[:8]}")
        os.replace(final, old)
    try:
        os.replace(tmp, final)
    except BaseException:
        if old is not None:
            os.replace(old, final)  # put the old directory back
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return final
