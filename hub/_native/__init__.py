"""Compiled routines of the hub (C extensions built by the root `setup.py`).

Each extension has one concern and is the only implementation of its routines; Python callers
import the extension module directly (`from hub._native import _codec`).
"""

#: The extension modules this package holds (keep in step with `setup.py`'s EXTENSIONS).
EXTENSIONS: tuple[str, ...] = ("hub._native._codec",)

__all__ = ["EXTENSIONS"]
