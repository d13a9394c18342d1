"""Compiled routines of the hub (C extensions built by the root `setup.py`).

Each extension has one concern and is the only implementation of its routines; Python callers
import the extension module directly (`from hub._native import _codec`).
"""

__all__: list[str] = []
