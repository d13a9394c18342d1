"""collhub-mscclang: MSCCL-IR import/export and an MSCCLang-style language for collhub.

Components (entry point ``mscclang``): producers ``mscclang.ir`` and ``mscclang.program``,
consumer ``mscclang.export``. The functions below are the same code for direct use.
Names resolve lazily (PEP 562): loading the plugin's registration module imports none of this.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_LAZY = {
    "DEFAULT_MAX_BYTES": "._reader",
    "ExportParams": "._params",
    "ExportStats": "._writer",
    "IRParams": "._params",
    "ProgramParams": "._params",
    "msccl_available": "._program",
    "read_msccl_ir": "._reader",
    "run_program": "._program",
    "write_msccl_ir": "._writer",
}
__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
