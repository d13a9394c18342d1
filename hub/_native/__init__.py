"""Compiled parts of collhub (C extensions built by ``setup.py``; only the buffer protocol and
the CPython API, no numpy C API, so the build needs setuptools and a C compiler only).

* ``hub._native._sim``: the event loop of ``hub.simulate`` (see ``hub/sim/_engine.py``).
"""

__all__: list[str] = []
