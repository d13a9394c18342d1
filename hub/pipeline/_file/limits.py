"""The documented resource limits of pipeline files, each overridable by an environment variable.

A pipeline file is data from anywhere (a colleague, a repository, a web page), so what it costs
to read is bounded by these limits, checked *before* the expensive step they guard:

=====================================  ======================================  =========
limit                                  environment variable                    default
=====================================  ======================================  =========
bytes in the file                      ``COLLHUB_PIPELINE_MAX_BYTES``          4 MiB
YAML nesting depth (aliases expanded)  ``COLLHUB_PIPELINE_MAX_DEPTH``          64
YAML nodes with aliases expanded       ``COLLHUB_PIPELINE_MAX_NODES``          200000
matrix points (product of the lists)   ``COLLHUB_PIPELINE_MAX_POINTS``         10000
=====================================  ======================================  =========

The node limit is what stops an alias bomb (a few hundred bytes whose aliases expand to
billions of nodes): nodes are counted on the composed graph, where an alias is a pointer, before
anything walks the expanded tree.
"""

from __future__ import annotations

import os

from ...errors import UsageError

__all__ = ["LIMITS", "limit"]

#: name -> (environment variable, default)
LIMITS: dict[str, tuple[str, int]] = {
    "bytes": ("COLLHUB_PIPELINE_MAX_BYTES", 4 << 20),
    "depth": ("COLLHUB_PIPELINE_MAX_DEPTH", 64),
    "nodes": ("COLLHUB_PIPELINE_MAX_NODES", 200_000),
    "points": ("COLLHUB_PIPELINE_MAX_POINTS", 10_000),
}


def limit(name: str) -> int:
    """The current value of limit ``name`` (its environment variable, else the default)."""
    var, default = LIMITS[name]
    raw = os.environ.get(var, "").strip()
    if not raw:
        return default
    try:
        value = int(raw.replace("_", ""))
    except ValueError:
        value = 0
    if value < 1:
        raise UsageError(f"{var}={raw!r} is not a positive integer", hint=f"unset it for the default ({default})")
    return value
