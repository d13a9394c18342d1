"""hub.plugins._guard: a real interrupt during plugin code stays the user's interrupt.

Real signals sent to this process (``os.kill``), with the handlers a host installs: SIGINT's
default, and a Python SIGTERM handler that raises ``KeyboardInterrupt`` as ``collhub run`` does.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from types import FrameType

import pytest

from hub.errors import PluginError
from hub.plugins._guard import guarded


def _signal_self(signum: int) -> None:
    os.kill(os.getpid(), signum)
    for _ in range(1000):  # give the interpreter the bytecode boundaries it needs to run the handler
        pass


@pytest.fixture
def sigterm_as_interrupt() -> Iterator[None]:
    def handler(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def test_a_real_sigint_stays_a_keyboard_interrupt() -> None:
    with pytest.raises(KeyboardInterrupt):
        guarded(_signal_self, signal.SIGINT, what="component 'x.y'", hint="h")


def test_a_sigterm_the_host_turns_into_an_interrupt_stays_one(sigterm_as_interrupt: None) -> None:
    with pytest.raises(KeyboardInterrupt):  # before: "raised KeyboardInterrupt by itself", exit 4
        guarded(_signal_self, signal.SIGTERM, what="component 'x.y'", hint="h")
    assert signal.getsignal(signal.SIGTERM).__name__ == "handler"  # the host's handler is back


def test_a_keyboard_interrupt_the_plugin_raises_itself_is_the_plugins_fault(sigterm_as_interrupt: None) -> None:
    def rude() -> None:
        raise KeyboardInterrupt

    with pytest.raises(PluginError, match="raised KeyboardInterrupt by itself"):
        guarded(rude, what="component 'x.y'", hint="h")
