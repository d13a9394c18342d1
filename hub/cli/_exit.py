"""Leaving the ``collhub`` process without tearing the interpreter down, when that loses nothing.

A normal exit finalizes the interpreter: it clears every module (numpy, pydantic, typer, ...) and
frees every object one by one. For ``collhub consume hub.simulate`` on 256 ranks that is about a
fifth of the process's CPU time, and a sixth of a 2-rank ``collhub produce``: work whose only
result is memory the kernel takes back anyway. :func:`fast_exit` skips it, but only where nothing
can be lost, and otherwise returns so that the interpreter exits as usual:

* only the main thread is alive (a normal exit would join the others);
* on Linux, every open descriptor besides 0, 1 and 2 is read-only (a file a plugin opened for
  writing and never closed may hold buffered data that only its finalizer would write);
* the exit code is an int (or None); ``COLLHUB_NO_FAST_EXIT=1`` is not set.

Then the ``atexit`` handlers run (logging, temporary directories' finalizers, multiprocessing),
stdout, stderr and C stdio are flushed, and the process ends with ``os._exit``. A flush that fails
(a closed pipe) falls back to the usual exit, whose handling of it is unchanged.
"""

from __future__ import annotations

import os
import sys

from .._env import env_flag

__all__ = ["ENV_NO_FAST_EXIT", "fast_exit"]

ENV_NO_FAST_EXIT = "COLLHUB_NO_FAST_EXIT"
_O_ACCMODE = 0o3


def _only_readers_open() -> bool:
    """Whether every descriptor other than 0-2 is open read-only (False where that cannot be told)."""
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return False
    for name in fds:
        if name in ("0", "1", "2"):
            continue
        try:
            with open(f"/proc/self/fdinfo/{name}", "rb") as info:
                text = info.read()
        except FileNotFoundError:  # the listing's own descriptor, closed since
            continue
        except OSError:
            return False
        flags = next((line.split()[1] for line in text.splitlines() if line.startswith(b"flags:")), None)
        if flags is None or int(flags, 8) & _O_ACCMODE:
            return False
    return True


def _flush_c_stdio() -> None:
    """fflush(NULL) for text a C extension printed; only when ctypes is loaded already (numpy loads it)."""
    ctypes = sys.modules.get("ctypes")
    if ctypes is None:
        return
    try:
        ctypes.CDLL(None).fflush(None)
    except Exception:  # noqa: BLE001 - best effort, as the C runtime's own exit would be
        pass


def fast_exit(code: object) -> None:
    """End the process now with ``code`` if that loses nothing (module docstring); else return."""
    import threading

    if code is not None and not isinstance(code, int):
        return
    if env_flag(ENV_NO_FAST_EXIT):
        return
    if threading.active_count() != 1 or not _only_readers_open():
        return
    import atexit
    import signal

    for sig in (signal.SIGINT, signal.SIGTERM):  # as main() does once the command is over
        signal.signal(sig, signal.SIG_IGN)
    atexit._run_exitfuncs()
    if threading.active_count() != 1:  # a handler started a thread: let the interpreter join it
        return
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            return
    _flush_c_stdio()
    os._exit(code or 0)
