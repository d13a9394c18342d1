"""Running plugin code so that it cannot take the host down or hide.

:func:`guarded` wraps every call into plugin code (importing an entry point, a component's
factory):

* ``print`` and writes to file descriptor 1 go to stderr for the duration, so a chatty plugin
  cannot corrupt ``--format json`` on stdout;
* ``SystemExit``, ``GeneratorExit`` and any other ``BaseException`` become a
  :class:`~hub.errors.PluginError` naming the plugin and its distribution (exit 4); so does a
  ``KeyboardInterrupt`` the plugin raised itself. A real interrupt (a SIGINT seen during the
  call, or a SIGTERM that the host turns into ``KeyboardInterrupt``, as a pipeline run does) stays
  a ``KeyboardInterrupt``: interrupting is the user's;
* with ``timeout`` (seconds), a call still running after it is stopped with
  :class:`PluginTimeout` (SIGALRM; main thread only). Python code is interrupted at once; a
  plugin blocked inside C code is stopped when it returns to Python.

Loading plugin code (imports, registration hooks) is bounded by construction instead:
:func:`run_within` runs it in a worker thread that the caller stops waiting for after
``COLLHUB_PLUGIN_IMPORT_TIMEOUT`` seconds, so not even code that blocks in C or swallows the
alarm holds a command.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any, TypeVar

from ..errors import PluginError

__all__ = ["PluginTimeout", "guarded", "import_timeout", "run_within", "stdout_to_stderr"]

ENV_IMPORT_TIMEOUT = "COLLHUB_PLUGIN_IMPORT_TIMEOUT"
#: Seconds one plugin import (an entry point, a factory's or params model's module) or one
#: registration hook may take by default.
DEFAULT_IMPORT_TIMEOUT = 15.0

T = TypeVar("T")
#: Timeouts at or past this many seconds (about three years) mean no timeout.
_MAX_TIMEOUT = 1e8


class PluginTimeout(PluginError):
    """A plugin call ran past its timeout."""


class _Alarm(BaseException):
    """Raised by the SIGALRM handler inside the plugin's frame; BaseException so that a plugin's
    ``except Exception`` does not swallow it."""


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Send ``sys.stdout`` and, where it is the process's fd 1, the descriptor itself to stderr."""
    saved_fd = None
    try:
        real = sys.stdout is sys.__stdout__ and sys.stdout is not None and sys.stdout.fileno() == 1
    except (AttributeError, OSError, ValueError):
        real = False
    if real:
        try:
            sys.stdout.flush()
            saved_fd = os.dup(1)
            os.dup2(2, 1)
        except OSError:  # pragma: no cover - no fd 2
            saved_fd = None
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        if saved_fd is not None:
            try:
                sys.stdout.flush()
            except (OSError, ValueError):
                pass
            os.dup2(saved_fd, 1)
            os.close(saved_fd)


def import_timeout() -> float | None:
    """``COLLHUB_PLUGIN_IMPORT_TIMEOUT`` in seconds (default 15; 0 or less: no deadline)."""
    raw = os.environ.get(ENV_IMPORT_TIMEOUT, "").strip()
    try:
        value = float(raw) if raw else DEFAULT_IMPORT_TIMEOUT
    except ValueError:
        value = DEFAULT_IMPORT_TIMEOUT
    return value if value > 0 and value == value else None


def run_within(fn: Callable[..., T], *args: Any, timeout: float | None, what: str) -> T:
    """``fn(*args)`` in a daemon worker thread; the caller waits at most ``timeout`` seconds.

    Loading plugin code must not stall a command, whatever the code does: sleep in C, block on
    a fifo, or swallow the SIGALRM that :func:`guarded`'s timeout raises. The worker gives up
    nothing (a thread cannot be killed); the caller stops waiting, gets :class:`PluginTimeout`
    and goes on without the plugin, and the abandoned daemon thread ends with the process. The
    exception ``fn`` raises (``SystemExit`` included) is raised here, for :func:`guarded` to name.
    """
    if timeout is None or not 0 < timeout < _MAX_TIMEOUT:
        return fn(*args)
    box: dict[str, Any] = {}
    done = threading.Event()

    def work() -> None:
        try:
            box["value"] = fn(*args)
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=work, name="collhub-plugin-load", daemon=True).start()
    if not done.wait(timeout):
        raise PluginTimeout(
            f"{what} did not finish within {timeout:g} s; given up",
            hint=f"fix or disable the plugin, or raise {ENV_IMPORT_TIMEOUT} if it is only slow",
        )
    if "error" in box:
        raise box["error"]
    return box["value"]


def _describe(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        return f"called sys.exit({exc.code!r})"
    if isinstance(exc, KeyboardInterrupt):
        return "raised KeyboardInterrupt by itself (no Ctrl-C was pressed)"
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def guarded(
    fn: Callable[..., T], *args: Any, what: str, hint: str, timeout: float | None = None, wrap_errors: bool = True
) -> T:
    """``fn(*args)`` under the rules of the module docstring; ``what`` names the plugin code
    ("component 'x.y' (plugin x, distribution collhub-x 1.0)") in every error.

    With ``wrap_errors=False`` ordinary exceptions pass through unchanged (the core's own
    components: their bugs are collhub's internal errors, not a plugin's).
    """
    main = threading.current_thread() is threading.main_thread()
    interrupted = False
    old_handlers: dict[int, Any] = {}
    old_alarm: Any = None

    def on_signal(signum: int, frame: FrameType | None) -> None:
        nonlocal interrupted
        interrupted = True
        previous = old_handlers.get(signum)
        if callable(previous):  # the caller's policy (e.g. a run deferring signals) decides
            previous(signum, frame)
        elif previous != signal.SIG_IGN:
            raise KeyboardInterrupt

    def on_alarm(signum: int, frame: FrameType | None) -> None:
        raise _Alarm

    # setitimer overflows past ~1e8 s (and a NaN is no limit): treat those as "no timeout".
    use_alarm = bool(timeout) and main and hasattr(signal, "setitimer") and 0 < float(timeout or 0) < _MAX_TIMEOUT
    try:
        try:
            if main:
                old_handlers[signal.SIGINT] = signal.signal(signal.SIGINT, on_signal)
                # SIGTERM only where the host handles it in Python (a run turns it into an
                # interrupt); with the default action it ends the process, as it should
                if callable(signal.getsignal(signal.SIGTERM)):
                    old_handlers[signal.SIGTERM] = signal.signal(signal.SIGTERM, on_signal)
                if use_alarm:
                    old_alarm = signal.signal(signal.SIGALRM, on_alarm)
                    signal.setitimer(signal.ITIMER_REAL, float(timeout))  # type: ignore[arg-type]
            with stdout_to_stderr():
                return fn(*args)
        finally:
            if main:
                if use_alarm:
                    signal.setitimer(signal.ITIMER_REAL, 0)
                    signal.signal(signal.SIGALRM, old_alarm if old_alarm is not None else signal.SIG_DFL)
                for signum, previous in old_handlers.items():
                    if previous is not None:
                        signal.signal(signum, previous)
    except _Alarm:
        raise PluginTimeout(
            f"{what} did not finish within {timeout:g} s",
            hint="raise the timeout (--timeout, or timeout: in the pipeline) or fix the plugin",
        ) from None
    except KeyboardInterrupt:
        if interrupted:
            raise
        raise PluginError(f"{what} {_describe(KeyboardInterrupt())}", hint=hint) from None
    except (SystemExit, GeneratorExit) as exc:
        raise PluginError(f"{what} {_describe(exc)}", hint=hint) from None
    except Exception as exc:
        if not wrap_errors or isinstance(exc, PluginError) or _is_hub_error(exc):
            raise
        place = _place_error(exc, what)
        if place is not None:
            raise place from exc
        raise PluginError(f"{what} failed: {_describe(exc)}", hint=hint) from exc
    except BaseException as exc:  # any other BaseException subclass a plugin invents
        raise PluginError(f"{what} {_describe(exc)}", hint=hint) from None


#: errno names of an OSError that is about a place in the file system (a path the user gave, a
#: full disk), not a bug of the plugin that hit it
_PLACE_ERRNOS = ("EACCES", "EPERM", "EROFS", "ENOSPC", "EDQUOT", "ENOTDIR", "EISDIR", "ENOENT", "EEXIST", "EIO")


def _place_error(exc: Exception, what: str) -> Exception | None:
    """The clean error (exit 2, or 1 for a full disk) for a plugin's ``OSError`` on a named path:
    ``--set out=/proc/x`` is an output the user cannot write, not a bug in the plugin."""
    import errno

    if not isinstance(exc, OSError) or not exc.filename:
        return None
    if exc.errno not in {getattr(errno, n) for n in _PLACE_ERRNOS if hasattr(errno, n)}:
        return None
    from ..atomic import output_error

    err = output_error(exc, str(exc.filename))
    err.message = f"{what}: {err.message.replace('cannot write ', 'cannot use ', 1)}"
    err.args = (err.message,)
    err.hint = f"{err.hint} (if the path is not one you gave, report it to the plugin's authors)"
    return err


def _is_hub_error(exc: BaseException) -> bool:
    from ..errors import HubError

    return isinstance(exc, HubError)
