"""Pydantic params model of ``mscclpp.plan`` (``_params_export`` has the consumer's)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ._plan import DEFAULT_MAX_BYTES

__all__ = ["PlanParams"]


class PlanParams(BaseModel):
    """Parameters of ``mscclpp.plan`` (import an MSCCL++ execution plan)."""

    model_config = ConfigDict(extra="forbid")

    path: Path = Field(description="the plan (JSON, or gzip-compressed JSON)")
    size: int | None = Field(
        default=None,
        ge=1,
        description="bind to this collective size in bytes (nccl-tests' definition; 1MiB etc. accepted): "
        "runs the executor's size checks, sets pipeline iterations, sizes signal messages (8 B)",
    )
    name: str | None = Field(default=None, description="algorithm name (default: the plan's name)")
    limits: Literal["executor", "strict", "warn"] = Field(
        default="executor",
        description="executor: refuse what the executor refuses (more than 64 ops in a block), warn about "
        "unchecked overflows; strict: refuse both; warn: warn about both",
    )
    verify: bool | None = Field(
        default=None,
        description="check the import (hangs the plan cannot express as a graph, then hub.verify): true fails "
        "on a problem (exit 3), default warns (one line on stderr), false skips hub.verify",
    )
    max_bytes: int = Field(default=DEFAULT_MAX_BYTES, ge=1, description="refuse plans larger than this (bytes)")

    @field_validator("size", mode="before")
    @classmethod
    def _size(cls, v: object) -> object:
        if isinstance(v, str):
            from hub import parse_size

            return parse_size(v)
        return v
