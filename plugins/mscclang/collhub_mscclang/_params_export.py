"""Pydantic params model of ``mscclang.export`` (see ``_params``)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ExportParams"]


class ExportParams(BaseModel):
    """Parameters of ``mscclang.export`` (write MSCCL-IR XML for a runtime)."""

    model_config = ConfigDict(extra="forbid")

    out: Path = Field(description="the XML file to write (relative paths are under the run directory)")
    target: Literal["msccl-executor-nccl", "rccl", "msccl-legacy"] = Field(
        default="msccl-executor-nccl",
        description="runtime whose rules the file obeys (coll spelling, limits, "
        "outofplace/minBytes/maxBytes semantics)",
    )
    proto: Literal["Simple", "LL", "LL128"] | None = Field(
        default=None, description="NCCL protocol (default: the imported file's, else Simple)"
    )
    min_bytes: int = Field(
        default=0, ge=0, description="smallest call size in bytes the algorithm is selected for (inclusive)"
    )
    max_bytes: int | None = Field(
        default=None, ge=1, description="largest call size in bytes (inclusive); none = unlimited"
    )
    name: str | None = Field(default=None, description="<algo name> (default: the algorithm's name)")
    fuse: bool = Field(
        default=True, description="fuse RECV(+COMP)+SEND runs into rcs/rrcs/rrs; false writes s/r/rrc/cpy/re only"
    )
    threadblocks: Literal["keep-or-auto", "keep", "auto"] = Field(
        default="keep-or-auto",
        description="reuse the nodes' tb column when it obeys MSCCL's rules (keep), or "
        "allocate one tb per (peer, channel, direction) (auto)",
    )
    verify: bool = Field(
        default=False,
        description="read the XML back and run hub.verify before writing it "
        "(refuses a file that would not compute the collective)",
    )
    enforce_limits: bool = Field(
        default=True,
        description="refuse what the target cannot load (steps per tb, "
        "tbs, channels, cnt); false writes it anyway (parser/performance fixtures)",
    )
