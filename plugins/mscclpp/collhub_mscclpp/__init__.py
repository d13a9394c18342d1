"""collhub-mscclpp: MSCCL++ execution plans in and out of collhub.

Components (entry point ``mscclpp``): producer ``mscclpp.plan``, consumer ``mscclpp.export``.
The functions below are the same code for direct use. Names resolve lazily (PEP 562).
"""

from __future__ import annotations

from hub.plugins import lazy_namespace as _lazy_namespace

_LAZY = {
    "DEFAULT_MAX_BYTES": "._plan",
    "ExportParams": "._params_export",
    "ExportStats": "._export",
    "Imported": "._import",
    "PlanParams": "._params",
    "algorithm_to_plan": "._export",
    "load_plan": "._plan",
    "parse_plan": "._plan",
    "plan_problems": "._components",
    "plan_to_algorithm": "._import",
    "read_plan": "._import",
    "write_plan": "._components",
}
__all__, __getattr__, __dir__ = _lazy_namespace(__name__, _LAZY, globals())
