"""Pydantic params model of ``mscclpp.export`` (see ``_params``)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ExportParams"]


class ExportParams(BaseModel):
    """Parameters of ``mscclpp.export`` (write an MSCCL++ execution plan)."""

    model_config = ConfigDict(extra="forbid")

    out: Path = Field(description="the JSON plan to write (relative paths are under the run directory)")
    protocol: Literal["Simple", "LL"] | None = Field(
        default=None,
        description="Simple: put + signal/wait; LL: packets (no signals). Default: the imported plan's, else Simple",
    )
    channel: Literal["memory", "port"] = Field(
        default="memory", description="channel type of every connection (port: proxy puts, e.g. across nodes)"
    )
    name: str | None = Field(default=None, description="plan name (default: the algorithm's name)")
    min_message_size: int | None = Field(default=None, ge=0, description="smallest call size in bytes (inclusive)")
    max_message_size: int | None = Field(default=None, ge=0, description="largest call size in bytes (inclusive)")
    verify: bool = Field(
        default=True,
        description="re-import the written plan and run hub.verify on it before writing (refuses a plan that "
        "would not compute the collective)",
    )
