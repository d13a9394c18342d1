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
    with staged_dir(final, replace=True) as tmp: ...   the same, the debris removed on failure
    make_dirs(path); with output_errors(path): ...   a place for outputs, OSErrors made clean

Every way an output place can be unusable ends as one error naming the path the user gave:
under a regular file, not writable, a special file system (``/proc``, ``/sys``), read-only: a
:class:`~hub.errors.UsageError` (exit 2); full or failing while written: an
:class:`~hub.errors.OutputError` (exit 1). Plugins that write through this module get the same.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from .errors import HubError, OutputError, UsageError

__all__ = [
    "commit_dir",
    "dir_mode",
    "file_mode",
    "make_dirs",
    "output_error",
    "output_errors",
    "output_path",
    "staged_dir",
    "temp_dir",
    "write_file",
    "write_files",
]

#: errno values of a write that failed in a usable place (exit 1, not a usage error)
_WRITE_FAILED = frozenset(getattr(errno, name) for name in ("ENOSPC", "EDQUOT", "EIO", "EFBIG") if hasattr(errno, name))


def _blocking_parent(path: Path) -> Path | None:
    """The nearest existing ancestor of ``path`` that is not a directory (``/etc/passwd`` of
    ``/etc/passwd/x/y``), if there is one."""
    for parent in path.parents:
        try:
            if parent.exists():
                return None if parent.is_dir() else parent
        except OSError:
            return None
    return None


def output_error(exc: OSError, path: str | os.PathLike[str]) -> HubError:
    """The clean error for ``exc``, raised while writing output ``path`` (see the module docstring)."""
    target = Path(path)
    reason = exc.strerror or type(exc).__name__
    if exc.errno in _WRITE_FAILED:
        return OutputError(
            f"cannot write {target}: {reason}",
            hint="free some space (or use another disk) and run again; nothing was left half-written",
        )
    blocker = _blocking_parent(target)
    if blocker is not None:
        return UsageError(
            f"cannot write {target}: {blocker} is a file, not a directory",
            hint="choose an output path in a directory",
        )
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        hint = "choose an output path in a directory you can write"
    else:
        hint = "choose an output path in a writable directory of a regular file system"
    return UsageError(f"cannot write {target}: {reason}", hint=hint)


@contextmanager
def output_errors(path: str | os.PathLike[str]) -> Iterator[None]:
    """Turn an ``OSError`` of the block into the clean error for output ``path``."""
    try:
        yield
    except OSError as exc:
        raise output_error(exc, path) from None


def make_dirs(path: str | os.PathLike[str]) -> Path:
    """``mkdir -p path`` for an output directory, with clean errors (see the module docstring)."""
    target = Path(path)
    if target.is_dir():
        return target
    if target.exists() or target.is_symlink():
        raise UsageError(
            f"cannot write into {target}: it is a file, not a directory", hint="choose another output path"
        )
    with output_errors(target):
        target.mkdir(parents=True, exist_ok=True)
    return target


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
    if path.parent.is_dir():
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)  # like open(): a missing output folder is made
    except OSError as exc:
        raise output_error(exc, path) from None


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
    threads: int = 1,
) -> list[Path]:
    """Write every file to a temporary name in its directory, then rename them all into place.

    ``stale`` files (members of an older, larger set under the same names) are removed right
    after the renames, so the set on disk is the new one and nothing else. On any failure the
    temporary files are removed, and so are final files this call created: a failed write never
    leaves a partial set. ``check(tmp, final)`` may inspect each finished temporary file before
    anything is renamed (raise to abort). Chunks are bytes-like (numpy arrays included) or str;
    a file's chunks are taken from its iterable while that file is written, a few at a time
    (a producer may reuse a buffer from one file to the next, not within one file).

    With ``threads`` > 1 the temporary files are written by that many threads (each file by
    one; iterables that release the GIL, such as the compiled encoder, then run in parallel);
    the renames stay in this thread, in order, after every file is complete.
    """
    paths = [Path(p) for p, _ in contents]
    temps: list[Path | None] = [None] * len(paths)
    placed: list[Path] = []
    existed = {path: path.exists() for path in paths}
    try:
        for path in paths:
            _check_file_target(path)
        for path in sorted(set(paths), key=lambda p: str(p.parent)):
            _mkparent(path)
        _write_temps(contents, temps, check, threads)
        for tmp, path in zip(temps, paths, strict=True):
            os.replace(tmp, path)  # type: ignore[arg-type]
            placed.append(path)
        for old in stale:
            try:
                Path(old).unlink()
            except FileNotFoundError:
                pass
    except OSError as exc:
        _cleanup(temps, placed, existed)
        filename = getattr(exc, "filename", None)
        where = next((p for p in paths if filename is not None and str(p) in str(filename)), None)
        raise output_error(exc, where or (paths[0] if paths else Path(str(filename or "")))) from None
    except BaseException:
        _cleanup(temps, placed, existed)
        raise
    return paths


def _write_temps(
    contents: Sequence[tuple[Path, Data]],
    temps: list[Path | None],
    check: Callable[[Path, Path], None] | None,
    threads: int,
) -> None:
    """Write file i of ``contents`` to a new temporary file, recorded in ``temps[i]`` as soon
    as it exists (so that a failure anywhere removes it), in ``threads`` threads."""
    stop = threading.Event()  # set on the first failure: the other threads start no new file

    def run(first: int, last: int) -> None:
        for i in range(first, last):
            if stop.is_set():
                return
            path, data = contents[i]
            path = Path(path)
            fd, tmp = _open_temp(path)
            temps[i] = tmp
            try:
                _write_all(fd, _chunks(data))
            finally:
                os.close(fd)
            if check is not None:
                check(tmp, path)

    n = len(contents)
    if threads <= 1 or n < 2:
        run(0, n)
        return
    from concurrent.futures import ThreadPoolExecutor

    # contiguous groups, a few per thread: few tasks, yet a slow group does not hold the rest
    groups = min(n, 8 * threads)
    bounds = [n * k // groups for k in range(groups + 1)]
    with ThreadPoolExecutor(threads) as pool:
        futures = [pool.submit(run, a, b) for a, b in zip(bounds, bounds[1:], strict=False) if a < b]
        try:
            for fut in futures:
                fut.result()
        except BaseException:
            stop.set()  # leaving the block waits for the running files; the caller cleans up
            raise


def _open_temp(path: Path) -> tuple[int, Path]:
    """A new, exclusive temporary file next to ``path``, created with mode 0666 so that the
    kernel applies the umask exactly as ``open()`` does (no chmod afterwards, unlike mkstemp)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    while True:
        tmp = path.parent / f".{path.name}.{os.urandom(6).hex()}.tmp"
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:  # pragma: no cover - 48 random bits collided
            continue


#: buffers per writev call (below every platform's IOV_MAX)
_IOV_BATCH = 64


def _write_all(fd: int, chunks: Iterable[object]) -> None:
    """Write every chunk to ``fd``: a few chunks per ``writev`` call, partial writes resumed."""
    pending: list[memoryview] = []
    for chunk in chunks:
        piece = chunk.encode("utf-8") if isinstance(chunk, str) else chunk
        view = memoryview(piece).cast("B")  # type: ignore[arg-type]
        if view.nbytes:
            pending.append(view)
        if len(pending) >= _IOV_BATCH:
            _writev(fd, pending)
            pending = []
    _writev(fd, pending)


def _writev(fd: int, views: list[memoryview]) -> None:
    if not hasattr(os, "writev"):  # pragma: no cover - Windows
        for view in views:
            while view.nbytes:
                view = view[os.write(fd, view) :]
        return
    while views:
        done = os.writev(fd, views)
        while views and done >= views[0].nbytes:
            done -= views[0].nbytes
            views.pop(0)
        if views and done:
            views[0] = views[0][done:]


def _cleanup(temps: list[Path | None], placed: list[Path], existed: dict[Path, bool]) -> None:
    for tmp in temps:
        if tmp is None:
            continue
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
    with output_errors(target):
        fd, tmp = _temp_file(target, file_mode())
    os.close(fd)
    try:
        yield tmp
        with output_errors(target):
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
    with output_errors(final):
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
        with output_errors(final):
            os.replace(final, old)
    try:
        with output_errors(final):
            os.replace(tmp, final)
    except BaseException:
        if old is not None:
            os.replace(old, final)  # put the old directory back
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return final


@contextmanager
def staged_dir(final: str | os.PathLike[str], *, replace: bool = False) -> Iterator[Path]:
    """A directory written whole or not at all: the body fills the :func:`temp_dir` it is given,
    which is moved to ``final`` (:func:`commit_dir`) when the body ends, and removed when it
    raises (KeyboardInterrupt included), so a failed export leaves no debris."""
    tmp = temp_dir(final)
    try:
        yield tmp
        commit_dir(tmp, final, replace=replace)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
