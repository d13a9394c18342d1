"""Compiled routines of the hub: C extensions built by the root ``setup.py`` (only the CPython
API and the buffer protocol, no numpy C API, so a build needs setuptools and a C compiler only).

Each extension has one concern and is the only implementation of its routines:

* ``hub._native._codec``: the Chakra ET codec's per-node work (``hub/chakra/_encode.py``,
  ``hub/chakra/_ranks.py``); callers import it directly (``from hub._native import _codec``).
* ``hub._native._sim``: the event loop of ``hub.simulate`` (``hub/_native/_sim.c``; its caller and
  the semantics: ``hub/sim/_engine/loop.py``). Load it with :func:`load_sim`.
* ``hub._native._verify``: the verifier's per-node loops (adjacency, levels, chain cover, the data
  walk; callers in ``hub/verify/``). Load it with :func:`load_verify`.

What they share is ``_common.h`` (node kinds, the buffer arguments); one flag set builds them all
(``setup.py`` ``CFLAGS``, with ``-Wall -Wextra``). The loaders return the Protocols of ``_types``,
which mypy holds the stubs (``*.pyi``) to; ``tests/native/test_stubs.py`` holds the stubs to the C.
"""

from __future__ import annotations

from typing import TYPE_CHECKING as _TYPE_CHECKING

from ..errors import HubError as _HubError, SimulationError as _SimulationError

if _TYPE_CHECKING:
    from ._types import SimExtension, VerifyExtension

#: The extension modules this package holds (keep in step with ``setup.py``'s EXTENSIONS).
EXTENSIONS: tuple[str, ...] = ("hub._native._codec", "hub._native._sim", "hub._native._verify")

__all__ = ["EXTENSIONS", "load_sim", "load_verify"]


def load_sim() -> SimExtension:
    """The compiled event loop, or a one-line error saying how to build it (typed by its stub:
    :class:`hub._native._types.SimExtension`)."""
    try:
        from . import _sim
    except ImportError as exc:
        raise _SimulationError(
            f"the simulator's compiled event loop (hub._native._sim) is not built: {exc}",
            hint="reinstall collhub from its source folder with a C compiler present: pip install -e .",
        ) from None
    return _sim


def load_verify() -> VerifyExtension:
    """The verifier's compiled loops, or a one-line error saying how to build them (typed by its
    stub: :class:`hub._native._types.VerifyExtension`)."""
    try:
        from . import _verify
    except ImportError as exc:
        raise _HubError(
            f"the verifier's compiled loops (hub._native._verify) are not built: {exc}",
            hint="reinstall collhub from its source folder with a C compiler present: pip install -e .",
        ) from None
    return _verify
