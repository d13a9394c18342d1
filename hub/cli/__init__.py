"""The ``collhub`` command line (Typer). The library never imports this package.

``main()`` is the console-script entry point; ``app`` is the Typer application (for
``typer.testing.CliRunner``). See ``docs/cli.md``. Plugin command groups (``collhub_commands``)
use the same output conventions through :data:`FORMAT_OPTION`, :class:`OutputFormat`,
:func:`out`, :func:`err`, :func:`emit_json` and :func:`table`, as ``collhub-registry`` does.
"""

from __future__ import annotations

import os as _os
import signal as _signal
import sys as _sys


def _quiet_exit(signum: int, frame: object) -> None:
    _os._exit(130)  # interrupted while starting up: nothing exists yet, so nothing to clean


# In the collhub process itself (console script or ``python -m hub.cli``), a Ctrl-C or SIGTERM
# while Typer is being imported exits 130 silently instead of printing an import traceback;
# main() puts the usual handlers back before any command runs.
_CLI_PROCESS = _sys.argv[:1] == ["-m"] or _os.path.basename(_sys.argv[0] if _sys.argv else "") == "collhub"
if _CLI_PROCESS:
    for _sig in (_signal.SIGINT, _signal.SIGTERM):
        _signal.signal(_sig, _quiet_exit)

#: OpenBLAS reads these when numpy loads it. collhub does no linear algebra, and on load OpenBLAS
#: starts a pool of one thread per core that costs each collhub process about 0.08 s of CPU (a
#: sixth of a whole 256-rank `consume hub.simulate`). So the CLI asks for one thread unless the
#: user chose a count; its children (pipeline workers) inherit that, which also keeps `--jobs N`
#: from running N pools. Library callers keep whatever their process set.
_BLAS_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")
if _CLI_PROCESS and not any(v in _os.environ for v in _BLAS_THREAD_VARS):
    _os.environ["OPENBLAS_NUM_THREADS"] = "1"

from ._app import COMMANDS, Lazy, app  # noqa: E402 - after the start-up handlers
from ._output import FORMAT_OPTION, OutputFormat, emit_json, err, out, table  # noqa: E402

__all__ = ["COMMANDS", "FORMAT_OPTION", "Lazy", "OutputFormat", "app", "emit_json", "err", "main", "out", "table"]


def main(argv: list[str] | None = None) -> None:
    """Run ``collhub`` with ``argv`` (default: ``_sys.argv[1:]``) and exit with its status."""
    from ._errors import STATE

    STATE.process = True
    _signal.signal(_signal.SIGINT, _signal.default_int_handler)
    _signal.signal(_signal.SIGTERM, _signal.SIG_DFL)
    try:
        app(args=_spellings(_sys.argv[1:] if argv is None else argv), prog_name="collhub")
    except SystemExit as exc:
        _leave(exc.code)
        raise
    except KeyboardInterrupt as exc:  # outside any command (e.g. while Typer builds the command tree)
        from ._errors import report

        code = report(exc)  # "error: interrupted", exit 130, never a traceback
        _leave(code)
        raise SystemExit(code) from None
    finally:  # the command is over: a late signal must not interrupt the exit (and its joins)
        for sig in (_signal.SIGINT, _signal.SIGTERM):
            _signal.signal(sig, _signal.SIG_IGN)


def _spellings(argv: list[str]) -> list[str]:
    """``--resume=strict`` / ``--resume=auto`` as ``collhub run`` documents them: Typer's flags
    take no value, so they become the ``--resume-strict`` / ``--resume`` flags."""
    table = {"--resume=strict": "--resume-strict", "--resume=auto": "--resume"}
    return [table.get(a, a) for a in argv]


def _leave(code: object) -> None:
    """After an interrupt (exit 130), or a run that killed its workers, exit without finalizing
    the interpreter: everything is cleaned up by then, and finalizing would join threads that may
    wait forever (on a message a killed worker left half-written) or still be inside compiled
    code with the GIL released (the ET encoder's), which crashes a finalizing interpreter."""
    runner = _sys.modules.get("hub.pipeline._run.interrupt")
    killed = runner is not None and getattr(runner, "WORKERS_KILLED", False)
    if code != 130 and not killed:
        if _CLI_PROCESS:  # not when main() runs inside another program, which goes on afterwards
            from ._exit import fast_exit

            fast_exit(code)  # returns unless ending now loses nothing (see hub.cli._exit)
        return
    for stream in (_sys.stdout, _sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    _os._exit(code if isinstance(code, int) else 1)
