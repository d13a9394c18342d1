"""Pydantic params model of ``mscclang.program`` (see ``_params``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ProgramParams"]


class ProgramParams(BaseModel):
    """Parameters of ``mscclang.program`` (run an MSCCLang-style program)."""

    model_config = ConfigDict(extra="forbid")

    path: Path = Field(description="the Python program (.py)")
    args: list[str] | dict[str, Any] = Field(
        default_factory=list,
        description="arguments: a list becomes sys.argv[1:]; a dict is passed as keyword "
        "values through collhub_mscclang.lang.args()",
    )
    engine: Literal["collhub", "msccl"] = Field(
        default="collhub",
        description="collhub: run with this plugin's language in-process; msccl: run an "
        "msccl-tools program in a subprocess with the real 'msccl' package and import the XML it prints",
    )
    name: str | None = Field(default=None, description="algorithm name (default: the program's name)")
    timeout_s: float = Field(default=300.0, gt=0, description="engine=msccl: subprocess time limit")
