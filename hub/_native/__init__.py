"""Compiled routines of the hub: C extensions built by the root ``setup.py`` (only the CPython
API and the buffer protocol, no numpy C API, so a build needs setuptools and a C compiler only).

Each extension has one concern and is the only implementation of its routines:

* ``hub._native._codec``: the Chakra ET codec's per-node work (``hub/chakra/_encode.py``,
  ``hub/chakra/_ranks.py``); callers import it directly (``from hub._native import _codec``).
* ``hub._native._sim``: the event loop of ``hub.simulate`` (``hub/_native/_sim.c``; its caller and
  the semantics: ``hub/sim/_engine.py``). Load it with :func:`load_sim`.
"""

from __future__ import annotations

from types import ModuleType as _ModuleType

from ..errors import SimulationError as _SimulationError

#: The extension modules this package holds (keep in step with ``setup.py``'s EXTENSIONS).
EXTENSIONS: tuple[str, ...] = ("hub._native._codec", "hub._native._sim")

__all__ = ["EXTENSIONS", "load_sim"]


def load_sim() -> _ModuleType:
    """The compiled event loop, or a one-line error saying how to build it."""
    try:
        from . import _sim
    except ImportError as exc:
        raise _SimulationError(
            f"the simulator's compiled event loop (hub._native._sim) is not built: {exc}",
            hint="reinstall collhub from its source folder with a C compiler present: pip install -e .",
        ) from None
    return _sim
