"""collhub-mscclang: MSCCL-IR import/export and an MSCCLang-style language for collhub.

Components (entry point ``mscclang``): producers ``mscclang.ir`` and ``mscclang.program``,
consumer ``mscclang.export``. The functions below are the same code for direct use.
"""

from __future__ import annotations

from ._params import ExportParams, IRParams, ProgramParams
from ._program import msccl_available, run_program
from ._reader import DEFAULT_MAX_BYTES, read_msccl_ir
from ._writer import ExportStats, write_msccl_ir

__all__ = [
    "DEFAULT_MAX_BYTES",
    "ExportParams",
    "ExportStats",
    "IRParams",
    "ProgramParams",
    "msccl_available",
    "read_msccl_ir",
    "run_program",
    "write_msccl_ir",
]
