"""The common result model: what every consumer returns. Tables, JSON and plots are views of it."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Result"]


class Result(BaseModel):
    """A consumer's output.

    ``metrics`` holds flat scalar figures. Simulating consumers report at least ``time_ns``,
    ``algbw_GBps`` and ``busbw_GBps`` (nccl-tests conventions: decimal GB/s). ``artifacts`` maps
    an artifact name to a file path (relative to the run directory when produced by a run).
    ``details`` holds structured data too large for a table row (per-rank times, per-link stats).
    ``warnings`` says when a figure should not be trusted as is; tables, plots and the CLI show it.
    """

    model_config = ConfigDict(extra="forbid")

    component: str = Field(description="qualified id of the consumer, e.g. hub.simulate")
    metrics: dict[str, float | int | str | bool | None] = Field(default_factory=dict)
    artifacts: dict[str, str] = Field(default_factory=dict)
    details: dict[str, Any] = Field(default_factory=dict)
    warnings: list[str] = Field(
        default_factory=list,
        description="one line each: figures the consumer doubts, e.g. a simulated time "
        "below the collective's lower bound",
    )
