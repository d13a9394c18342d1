"""Interrupts at chosen moments: real signals, sent when a named module is first imported (no timing).

The random-moment tests in test_hostile.py sample the whole run; these pin the moments where a
signal's ``KeyboardInterrupt`` is turned into something else on its way out (a plugin guard, a
module left half imported) and must still end the run as the interrupt: exit 130, ``error:
interrupted`` first, no warning about a plot or report, the rows kept and marked incomplete.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from hub.errors import PluginError
from hub.pipeline._run.interrupt import Interrupts
from hub.plugins._guard import guarded

from .signal_at_import import collhub_signalled_at
from .test_hostile import _SLOW

# no size variable: the runner's own plot (results.png) is the first to import matplotlib
_RANKS = """version: 1
name: ranks
matrix:
  ranks: [4, 8, 16]
sources:
  ring: {producer: hub.ring, params: {collective: allreduce, ranks: "${ranks}"}}
consumers:
  sim: {use: hub.simulate, params: {network: "ring:${ranks}", size: 1MiB}}
"""
_ROWS = {"slow": 80, "ranks": 3}


def _interrupted(tmp: Path, text: str, module: str, signum: str, mode: str) -> tuple[str, Path]:
    (tmp / "p.yaml").write_text(text)
    r = collhub_signalled_at(module, signum, mode, "run", "p.yaml", "--jobs", "2", "-o", "out", cwd=tmp)
    context = f"rc {r.returncode}: {r.stderr[-800:]}"
    assert r.returncode == 130, context
    lines = r.stderr.splitlines()
    assert lines and lines[0] == "error: interrupted", context
    assert "Traceback" not in r.stderr and not any(line.startswith("warning:") for line in lines), context
    assert not list(tmp.glob(".out*")), context  # never a temporary run directory
    return r.stderr, tmp / "out"


@pytest.mark.parametrize("mode", ["raise", "lost"])
@pytest.mark.parametrize("pipeline", ["slow", "ranks"])
def test_a_signal_inside_matplotlibs_import_is_the_interrupt(pipeline: str, mode: str, tmp_path: Path) -> None:
    # "slow" sweeps a size: the report's plot imports matplotlib first; "ranks": the results plot.
    # "lost" is what CI met: the KeyboardInterrupt vanished and matplotlib was left half imported.
    text = {"slow": _SLOW, "ranks": _RANKS}[pipeline]
    err, out = _interrupted(tmp_path, text, "matplotlib.rcsetup", "INT", mode)
    assert (out / "INCOMPLETE").is_file() and not (out / "results.json").exists(), err
    assert len((out / "rows.jsonl").read_text().splitlines()) == _ROWS[pipeline], err  # every row was done
    assert f"{_ROWS[pipeline]} row(s) are kept in" in err and "--resume" in err


@pytest.mark.parametrize("signum", ["INT", "TERM"])
def test_a_signal_while_the_core_plugin_loads_is_the_interrupt(signum: str, tmp_path: Path) -> None:
    # The plugin guard recognises a Ctrl-C only by SIGINT; a SIGTERM's KeyboardInterrupt became
    # "plugin hub raised KeyboardInterrupt by itself", the core's components went missing and the
    # run ended with a validation error (exit 3) instead of the interrupt.
    err, out = _interrupted(tmp_path, _SLOW, "hub.plugins._builtin", signum, "raise")
    assert not out.exists(), err  # stopped while validating: nothing was created


@pytest.mark.parametrize("signum", ["INT", "TERM"])
def test_a_signal_while_the_results_are_printed_is_the_interrupt(signum: str, tmp_path: Path) -> None:
    # The run is published; the command imports its table printer next. SIGTERM used to find its
    # default action back (killed, status -15) once the run's block had ended.
    (tmp_path / "p.yaml").write_text(_RANKS)
    r = collhub_signalled_at("hub.cli._runtable", signum, "raise", "run", "p.yaml", "-o", "out", cwd=tmp_path)
    assert r.returncode == 130, r.stderr
    assert r.stderr.splitlines()[-1] == "error: interrupted" and "Traceback" not in r.stderr, r.stderr
    assert (tmp_path / "out" / "results.json").is_file() and not (tmp_path / "out" / "INCOMPLETE").exists()


def test_an_error_after_a_signal_leaves_as_the_interrupt() -> None:
    def plugin_code() -> None:
        try:
            os.kill(os.getpid(), signal.SIGTERM)  # the run's handler raises KeyboardInterrupt in here
            for _ in range(10**6):
                pass
        except KeyboardInterrupt:  # what a half-finished import leaves behind instead of the signal
            raise AttributeError("module 'matplotlib' has no attribute 'get_data_path'") from None

    with pytest.raises(KeyboardInterrupt) as caught, Interrupts() as interrupts:
        plugin_code()
    assert interrupts.stopping
    assert isinstance(caught.value.__cause__, AttributeError)  # what the signal became, kept for --debug


def test_a_signal_inside_plugin_code_stays_the_interrupt() -> None:
    def plugin_code() -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(10**6):
            pass

    with pytest.raises(KeyboardInterrupt) as caught, Interrupts() as interrupts:
        guarded(plugin_code, what="component 'x.y'", hint="fix it")  # not "raised KeyboardInterrupt by itself"
    assert interrupts.stopping
    assert not isinstance(caught.value.__cause__, PluginError)


def test_without_a_signal_errors_pass_through_unchanged() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(PluginError, match="own error"), Interrupts() as interrupts:
        raise PluginError("a plugin's own error")
    assert not interrupts.stopping
    assert signal.getsignal(signal.SIGTERM) == before  # a library caller gets its handlers back


def test_an_interrupt_python_cannot_raise_is_not_printed_but_still_stops_the_run(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import weakref

    class Node:  # like matplotlib's transforms: a weakref callback runs when the child goes
        pass

    with pytest.raises(KeyboardInterrupt), Interrupts() as interrupts:

        def callback(_ref: object) -> None:
            os.kill(os.getpid(), signal.SIGTERM)  # the handler raises inside the callback: unraisable
            for _ in range(1000):
                pass

        child = Node()
        ref = weakref.ref(child, callback)
        del child  # the callback runs here; Python swallows its KeyboardInterrupt
        assert ref() is None and interrupts.stopping
        interrupts.check()  # the run's next safe point stops it
    assert "Traceback" not in capsys.readouterr().err
