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
