"""A real ``collhub`` process that signals itself at a chosen moment: when a named module is first
imported (the interrupt tests that must not depend on timing).

:data:`PROGRAM` runs with ``python -c PROGRAM MODULE SIGNAL MODE collhub-args...``. It installs an
import finder and then runs ``hub.cli.main`` as the ``collhub`` console script does (argv[0] is
``collhub``, so the CLI's process-only behaviour is on). The first lookup of MODULE in the main
process sends SIGNAL (``INT`` or ``TERM``):

* ``MODE=raise``: to the process group, as a terminal's Ctrl-C does; the handler runs inside the
  import, so its ``KeyboardInterrupt`` leaves through the importing code.
* ``MODE=lost``: to the process, then the ``KeyboardInterrupt`` the handler raises is dropped and
  the import fails with ``AttributeError``. That is what CPython does when a signal arrives while
  C code runs Python code whose errors it clears (a dict lookup's ``__eq__``, ``PyObject_HasAttr``):
  the handler has run, the exception is gone, and the module is left half imported. No signal
  timing reaches that state on purpose, so the finder stands in for CPython there; the run's own
  signal handling is the real one.

Nothing in collhub is changed or hooked: the finder only chooses when the real signal is sent.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

PROGRAM = """
import os, signal, sys

target, signum, mode = sys.argv[1], getattr(signal, "SIG" + sys.argv[2]), sys.argv[3]
main_pid = os.getpid()


class SignalAtImport:
    @staticmethod
    def find_spec(name, path=None, module=None):
        if name != target or os.getpid() != main_pid:  # forked workers inherit the finder
            return None
        sys.meta_path.remove(SignalAtImport)
        if mode == "raise":
            os.killpg(0, signum)
            return None  # not reached while the run's handler raises at the next check
        try:
            os.kill(main_pid, signum)
            for _ in range(10**6):  # the handler runs at the next check of pending calls
                pass
        except KeyboardInterrupt:
            pass
        raise AttributeError(f"partially initialized module {name!r} (a signal arrived during its import)")

    @staticmethod
    def invalidate_caches():
        pass


sys.meta_path.insert(0, SignalAtImport)
sys.argv = ["collhub", *sys.argv[4:]]
from hub.cli import main

main()
"""


def collhub_signalled_at(
    module: str, signum: str, mode: str, *args: str, cwd: Path, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``collhub *args`` in ``cwd`` (a session of its own), signalled when ``module`` is first imported."""
    env = dict(os.environ, PYTHONPATH=str(REPO), COLLHUB_LOAD_PLUGINS="", COLLHUB_CACHE_DIR=str(cwd / ".cache"))
    env.pop("COLLHUB_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-c", PROGRAM, module, signum, mode, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        start_new_session=True,
    )
