"""hub.cli._errors: what an interrupt looks like once CPython has wrapped it, and what stays an error."""

from __future__ import annotations

import os
import signal

import pytest

from hub.cli._errors import interrupt_of, report
from hub.errors import PluginError


def _class_created_under_a_signal() -> BaseException:
    """A real SIGINT landing in ``__set_name__`` while a class is created (as while a module imports)."""

    class Field:
        def __set_name__(self, owner: type, name: str) -> None:
            os.kill(os.getpid(), signal.SIGINT)  # Python's own handler: KeyboardInterrupt in here
            for _ in range(10**6):
                pass

    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        type("RunContext", (), {"workdir": Field()})
    except BaseException as exc:  # noqa: BLE001 - what CPython made of it is the point
        return exc
    finally:
        signal.signal(signal.SIGINT, old)
    raise AssertionError("the signal did not arrive")


def test_an_interrupt_inside_set_name_is_reported_as_the_interrupt(capsys: pytest.CaptureFixture[str]) -> None:
    exc = _class_created_under_a_signal()
    assert type(exc) is RuntimeError and "__set_name__" in str(exc)  # CPython's wrapping, raised from it
    assert isinstance(interrupt_of(exc), KeyboardInterrupt)
    assert report(exc) == 130
    assert capsys.readouterr().err == "error: interrupted\n"  # not "internal error: RuntimeError: ..."


def test_an_error_raised_while_handling_an_interrupt_stays_that_error(capsys: pytest.CaptureFixture[str]) -> None:
    # A plugin that raises KeyboardInterrupt by itself: the guard's PluginError only has it as context.
    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise PluginError("plugin x raised KeyboardInterrupt by itself", hint="fix it") from None
    except PluginError as exc:
        assert interrupt_of(exc) is None
        assert report(exc) == 4
    assert capsys.readouterr().err.splitlines()[0] == "error: plugin x raised KeyboardInterrupt by itself"


_INTERRUPT_WHILE_TYPER_BUILDS = """
import os, signal, sys
sys.argv = ["collhub"]
import hub.cli
import typer.main
real = typer.main.get_command
def interrupted(*a, **k):
    os.kill(os.getpid(), signal.SIGINT)  # a real Ctrl-C, while no command (and no handler of ours) runs
    for _ in range(1000):
        pass
    return real(*a, **k)
typer.main.get_command = interrupted
hub.cli.main(["trace", "--help"])
"""


def test_a_ctrl_c_while_typer_builds_the_commands_is_one_line_exit_130() -> None:
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    r = subprocess.run(
        [sys.executable, "-c", _INTERRUPT_WHILE_TYPER_BUILDS],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, PYTHONPATH=str(repo)),
    )
    assert (r.returncode, r.stderr) == (130, "error: interrupted\n")  # before: a Python traceback
