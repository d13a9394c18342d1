"""Pydantic params model of ``mscclang.ir``.

Each component's model has its own module (``_params_export``, ``_params_program``): building a
pydantic model costs milliseconds, and ``collhub produce mscclang.ir`` loads only its own.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from ._reader import DEFAULT_MAX_BYTES

__all__ = ["IRParams"]


class IRParams(BaseModel):
    """Parameters of ``mscclang.ir`` (import an MSCCL-IR XML file)."""

    model_config = ConfigDict(extra="forbid")

    path: Path = Field(description="the MSCCL-IR XML file to import")
    name: str | None = Field(default=None, description="algorithm name (default: <algo name>, else the file stem)")
    collective: str | None = Field(default=None, description="if given, the file's coll must be this collective")
    ranks: int | None = Field(default=None, ge=1, description="if given, the file's ngpus must equal this")
    inplace: bool | None = Field(
        default=None,
        description="model the in-place variant (true) or the out-of-place one (false); default: "
        "in-place iff the file says inplace=1 and not outofplace=1",
    )
    root: int | None = Field(default=None, ge=0, description="root of broadcast/reduce (default: inferred)")
    max_bytes: int = Field(default=DEFAULT_MAX_BYTES, ge=1, description="refuse files larger than this (bytes)")
    names: bool | None = Field(
        default=None,
        description="name nodes 'tb<t>/s<s>/<type>' for readable reports "
        "(default: for files up to 512 KiB; names cost time and ET bytes)",
    )
    verify: bool | None = Field(
        default=None,
        description="run hub.verify on the import: true fails on a "
        "problem (exit 3), default warns (one line on stderr), false skips the check",
    )


def __getattr__(name: str) -> type[BaseModel]:
    """The other components' models, where they used to be (imported on first use only)."""
    if name == "ExportParams":
        from ._params_export import ExportParams

        return ExportParams
    if name == "ProgramParams":
        from ._params_program import ProgramParams

        return ProgramParams
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
