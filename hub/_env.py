"""Boolean switches read from the environment (``COLLHUB_STRICT_PLUGINS``, ``COLLHUB_NO_FAST_EXIT``, ...).

One spelling rule for all of them: ``1``, ``true``, ``yes`` or ``on`` (any case, surrounding space
ignored) turns a switch on; anything else, or the variable unset, leaves it off. Standard library
only, since the CLI reads some of these before anything heavy is imported.
"""

from __future__ import annotations

import os

__all__ = ["env_flag"]

_ON = frozenset({"1", "true", "yes", "on"})


def env_flag(name: str) -> bool:
    """Whether the environment variable ``name`` turns its switch on (module docstring)."""
    return os.environ.get(name, "").strip().lower() in _ON
