"""Interrupts during a run: SIGINT and SIGTERM end it with the run directory complete, absent or
marked incomplete (resumable).

:class:`Interrupts` turns both signals into :class:`KeyboardInterrupt` in the main thread, the
first one only: once a run is stopping, later signals (a second Ctrl-C 5 ms after the first,
``timeout(1)`` sending SIGTERM after SIGINT) are swallowed, so they cannot cut the cleanup short
and leave a ``.<run>.tmp-*`` directory behind. An exception that leaves the block once a signal
arrived is that signal's doing and leaves it as ``KeyboardInterrupt`` (chained to it). Short
critical sections (creating the temporary directory, publishing it) defer a signal until they
are done. Worker processes ignore both signals (:func:`worker_init`): the parent owns them,
kills them on an interrupt and only then publishes the temporary directory marked incomplete, so
no worker writes into it afterwards or prints a traceback.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

__all__ = ["EXIT_AFTER_INTERRUPT", "Interrupts", "worker_init"]

_SIGNALS = tuple(s for s in (getattr(signal, "SIGINT", None), getattr(signal, "SIGTERM", None)) if s is not None)

#: Set by the CLI, whose process exits after the run: the guard then stays installed after the
#: block instead of restoring the default handlers, so a third Ctrl-C during the one-line report
#: cannot print a traceback, and a signal while the results are printed ends the command with
#: exit 130 like any other. Library callers get their own handlers back.
EXIT_AFTER_INTERRUPT = False
#: Set when a run killed its worker processes. The executor's manager thread may then be stuck
#: on half a message in its result pipe, and interpreter exit would join it; the CLI, whose
#: run is over and cleaned up by then, leaves with ``os._exit`` instead (see hub.cli.main).
WORKERS_KILLED = False


class Interrupts:
    """Context manager: SIGINT/SIGTERM -> one KeyboardInterrupt; see the module docstring.

    Installed only in the main thread (elsewhere signals cannot be handled and it does nothing).
    """

    def __init__(self) -> None:
        self._pid = os.getpid()
        self._depth = 0
        self._pending: int | None = None
        self._old_unraisable: Any = sys.unraisablehook
        self.stopping = False
        self._old: dict[int, Any] = {}

    def __enter__(self) -> Interrupts:
        if threading.current_thread() is threading.main_thread():
            for sig in _SIGNALS:
                try:
                    self._old[sig] = signal.signal(sig, self._handle)
                except (ValueError, OSError):  # pragma: no cover - an embedded interpreter
                    pass
        # Nested inside another Interrupts (the CLI's around the whole command) that already
        # caught a signal whose exception got lost (e.g. swallowed while a plugin loaded): this
        # one is stopping too, so check() stops the run at its first safe point.
        outer = getattr(self._old.get(signal.SIGINT), "__self__", None)
        if isinstance(outer, Interrupts) and outer.stopping:
            self.stopping = True
        self._old_unraisable = sys.unraisablehook
        sys.unraisablehook = self._unraisable
        return self

    def _unraisable(self, info: Any) -> None:
        """Python cannot raise an exception from a weakref callback or a ``__del__`` (matplotlib's
        transforms have such callbacks) and prints it as "Exception ignored in ...", with a
        traceback. When that exception is our own interrupt, the run already knows it is stopping
        (``check()`` raises at the next safe point), so it is dropped; anything else is printed as
        before."""
        if isinstance(info.exc_value, KeyboardInterrupt) and self.stopping:
            return
        self._old_unraisable(info)

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        # In the real collhub process the handlers stay. Left by an interrupt, whether this
        # instance caught it or an inner one did, they keep swallowing: the process exits 130
        # next, and the default handlers would let a second signal kill it while it reports the
        # first. Left normally, the command still prints its results: a signal then is still its
        # interrupt (exit 130), where SIGTERM's default action would kill it mid-output.
        interrupted = self.stopping or (exc_type is not None and issubclass(exc_type, KeyboardInterrupt))
        if EXIT_AFTER_INTERRUPT:
            self.stopping = interrupted
        else:
            for sig, old in self._old.items():
                signal.signal(sig, old)
            self._old.clear()
            if sys.unraisablehook == self._unraisable:
                sys.unraisablehook = self._old_unraisable
        if self.stopping and isinstance(exc, Exception):
            # An error after a signal is the signal's doing: its KeyboardInterrupt, raised inside
            # code that turned it into something else (a plugin guard calling it the plugin's own,
            # a module left half imported), must still end the block as the interrupt.
            raise KeyboardInterrupt from exc

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if os.getpid() != self._pid:  # a forked worker before worker_init ran: the parent decides
            return
        if self._depth or self.stopping:
            self._pending = signum
            return
        self.stopping = True
        raise KeyboardInterrupt

    @contextmanager
    def critical(self) -> Iterator[None]:
        """Defer a signal that arrives inside the block to its end."""
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
        if not self._depth and self._pending is not None and not self.stopping:
            self._pending = None
            self.stopping = True
            raise KeyboardInterrupt

    def check(self) -> None:
        """Raise ``KeyboardInterrupt`` if a signal arrived but its exception got lost.

        Python swallows (and prints) exceptions raised where it cannot propagate them: in an
        at-fork hook, a ``__del__``, a weakref callback. The run then calls this at safe points
        (after each unit, before publishing), so such a signal still stops it."""
        if self.stopping:
            raise KeyboardInterrupt

    @contextmanager
    def cleanup(self) -> Iterator[None]:
        """A block that must run to its end while a run is being abandoned: signals are dropped."""
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            self._pending = None


def worker_init() -> None:
    """Initializer of worker processes: ignore SIGINT/SIGTERM, die with the parent (Linux)."""
    for sig in _SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    try:  # PR_SET_PDEATHSIG: a parent killed with SIGKILL must not leave workers running
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass
