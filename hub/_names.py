"""Distribution names compared as pip compares them (PEP 503), in one place.

Kept free of imports beyond :mod:`re`: the CLI's command cache, the plugin loader, the manifest
checks and the registry all use it, and ``collhub --help`` may load it.
"""

from __future__ import annotations

import re

__all__ = ["normalize_name"]

_RUNS = re.compile(r"[-_.]+")


def normalize_name(name: str) -> str:
    """PEP 503 normalization: lowercase, runs of ``-_.`` become ``-`` (``Collhub_Foo`` -> ``collhub-foo``)."""
    return _RUNS.sub("-", name).lower()
