"""collhub-mscclang: MSCCL-IR import/export and an MSCCLang-style language for collhub.

Components (entry point ``mscclang``): producers ``mscclang.ir`` and ``mscclang.program``,
consumer ``mscclang.export``. The functions below are the same code for direct use.
Names resolve lazily (PEP 562): loading the plugin's registration module imports none of this.
"""

from __future__ import annotations

from hub.plugins import lazy_namespace as _lazy_namespace

_LAZY = {
    "DEFAULT_MAX_BYTES": "._reader",
    "ExportParams": "._params_export",
    "ExportStats": "._writer",
    "IRParams": "._params",
    "ProgramParams": "._params_program",
    "msccl_available": "._program",
    "read_msccl_ir": "._reader",
    "run_program": "._program",
    "write_msccl_ir": "._writer",
}
__all__, __getattr__, __dir__ = _lazy_namespace(__name__, _LAZY, globals())
