"""Parameters of the ``nccl.*`` producers (pydantic v2)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["NcclParams"]


class NcclParams(BaseModel):
    """``nccl.ring``, ``nccl.tree``, ``nccl.pat``, ``nccl.nvls``, ``nccl.nvlstree``, ``nccl.auto``: NCCL
    2.30.7's schedule of one call."""

    model_config = ConfigDict(extra="forbid")

    collective: str = Field(description="allreduce, allgather, reducescatter, broadcast or reduce (any spelling)")
    ranks: int = Field(ge=2, le=1 << 16, description="communicator size (GPUs)")
    gpus_per_node: int = Field(default=1, ge=1, le=64, description="GPUs per node (ranks must be a multiple)")
    size: int | str = Field(
        default="1MiB",
        description="collective size, nccl-tests' meaning (all-gather: output; reduce-scatter: input; "
        "all-reduce: the buffer), e.g. '64MiB'",
    )
    channels: int | None = Field(
        default=None,
        ge=1,
        le=64,
        description="channels (default: NCCL's choice; a number forces it, capped "
        "at the communicator's channels as NCCL caps a tuner's)",
    )
    protocol: Literal["LL", "LL128", "Simple", "auto"] = Field(default="auto", description="LL, LL128, Simple or auto")
    system: str | None = Field(
        default=None,
        description="GEN:GPUSxNODES@nic=BW, a preset (dgx-h100x4) or a YAML file; its GPUs per node and nodes must "
        "match ranks/gpus_per_node (default: hopper nodes with 400G NICs)",
    )
    algorithm: Literal["auto", "Ring", "Tree", "PAT", "NVLS", "NVLSTree", "ring", "tree", "pat", "nvls", "nvlstree"] = (
        Field(default="auto", description="nccl.auto only: restrict the choice (auto = NCCL's pick)")
    )
    root: int = Field(default=0, ge=0, le=(1 << 16) - 1, description="broadcast / reduce: the root rank")
    name: str | None = Field(default=None, description="algorithm name (default nccl-<algo>-<proto>-<collective>)")
