"""Pydantic params models of the plugin's components."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ._reader import DEFAULT_MAX_BYTES

__all__ = ["ExportParams", "IRParams", "ProgramParams"]


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
