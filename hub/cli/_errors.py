"""The one place that turns exceptions into a one-line message, a hint and an exit code.

``HubError`` -> ``error: <message>`` (+ ``hint: ...``) on stderr, exit ``exc.exit_code``;
Ctrl-C -> exit 130 (also an error raised *from* one); anything else -> ``internal error: ...``
and exit 1, unless ``--debug`` (or ``COLLHUB_DEBUG=1``) asks for the traceback.
"""

from __future__ import annotations

import os
import traceback
from typing import Any

import typer

from ..errors import ExitCode, HubError
from ._pipes import BROKEN_PIPE_EXIT, is_broken_pipe, silence_stdout

__all__ = ["STATE", "debug_enabled", "exit_code_for", "interrupt_of", "report", "warn"]

_MAX_LISTED = 20


class _State:
    debug: bool = False
    #: True in the real ``collhub`` process (set by :func:`hub.cli.main`), which exits after an
    #: error; False under CliRunner, whose host process must keep its signal handlers.
    process: bool = False


STATE = _State()


def debug_enabled() -> bool:
    """``--debug`` was given or ``COLLHUB_DEBUG`` is set."""
    return STATE.debug or os.environ.get("COLLHUB_DEBUG", "").lower() in {"1", "true", "yes"}


def interrupt_of(exc: BaseException) -> KeyboardInterrupt | None:
    """The Ctrl-C (or SIGTERM) behind ``exc``: itself, or the ``KeyboardInterrupt`` in its chain of
    causes. CPython raises ``RuntimeError`` *from* an interrupt that lands in a ``__set_name__``
    (a class being created while a module imports); that error is the interrupt, not a bug.
    Only ``__cause__`` counts: an error raised while handling one (``__context__``) is its own."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        if isinstance(cur, KeyboardInterrupt):
            return cur
        seen.add(id(cur))
        cur = cur.__cause__
    return None


def exit_code_for(exc: BaseException) -> int:
    """The process exit code for ``exc`` (see ``docs/cli.md``)."""
    exc = interrupt_of(exc) or exc
    if isinstance(exc, HubError):
        return int(exc.exit_code)
    if is_broken_pipe(exc):
        return BROKEN_PIPE_EXIT
    if isinstance(exc, KeyboardInterrupt):
        return ExitCode.INTERRUPTED
    return ExitCode.RUN_FAILED


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def warn(message: str) -> None:
    """``warning: <message>`` on stderr."""
    typer.echo(f"warning: {_one_line(message)}", err=True)


def _ignore_signals() -> None:
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():
        for name in ("SIGINT", "SIGTERM"):
            if hasattr(signal, name):
                signal.signal(getattr(signal, name), signal.SIG_IGN)


def report(exc: BaseException) -> int:
    """Print ``exc`` to stderr the collhub way and return its exit code."""
    code = exit_code_for(exc)
    if is_broken_pipe(exc):  # the reader has gone (`| head`): stop quietly
        silence_stdout()
        return code
    if debug_enabled():
        typer.echo("".join(traceback.format_exception(exc)).rstrip(), err=True)
    exc = interrupt_of(exc) or exc
    if isinstance(exc, KeyboardInterrupt):
        if STATE.process:
            _ignore_signals()  # exiting now: a further Ctrl-C must not print a traceback over this line
        typer.echo("error: interrupted", err=True)
        hint = getattr(exc, "hint", None)  # e.g. how to resume the run it stopped
        if hint:
            typer.echo(f"hint: {_one_line(str(hint))}", err=True)
        return code
    if isinstance(exc, HubError):
        typer.echo(f"error: {_one_line(exc.message)}", err=True)
        # List every finding a validation error carries, one per line.
        items: list[Any] = list(getattr(exc, "problems", []) or []) + list(getattr(exc, "issues", []) or [])
        if len(items) == 1 and _one_line(str(items[0])).startswith(_one_line(exc.message)):
            items = []  # the message already says it
        for item in items[:_MAX_LISTED]:
            typer.echo(f"  - {_one_line(str(item))}", err=True)
        if len(items) > _MAX_LISTED:
            typer.echo(f"  ... and {len(items) - _MAX_LISTED} more", err=True)
        if exc.hint:
            typer.echo(f"hint: {_one_line(exc.hint)}", err=True)
        return code
    if isinstance(exc, MemoryError):  # numpy's _ArrayMemoryError too: the input, not a bug
        typer.echo("error: out of memory: this input needs more memory than the process may use", err=True)
        typer.echo(
            "hint: try a smaller input, a lower --level (verify), or a machine (or ulimit -v) with more memory",
            err=True,
        )
        return code
    typer.echo(f"internal error: {type(exc).__name__}: {_one_line(str(exc))}", err=True)
    if not debug_enabled():
        typer.echo("hint: this is a bug; rerun with --debug for the traceback and report it", err=True)
    return code
