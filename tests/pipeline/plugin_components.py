"""A small plugin registered into isolated managers by the pipeline tests (plugin name ``t``).

``t.line``: a unidirectional ring all-gather-like pattern: rank r sends ``chunks`` chunks to
r+1 and receives them from r-1 (2 nodes per rank). It appends one line to ``log`` per call, so
tests can count how often an algorithm was produced.
``t.tag``: renames the algorithm. ``t.cost``: a closed-form cost model (below) that also writes
an artifact file.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from hub._result import Result
from hub.chakra import Algorithm, AlgorithmMeta, Buffer, Collective, RankGraphBuilder
from hub.errors import AlgorithmError, SimulationError
from hub.plugins import ConsumerSpec, ProducerSpec, TransformSpec, hookimpl

COLLHUB_PLUGIN_API = "1.0"


class LineParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    collective: str = Field(default="allgather", description="collective name")
    ranks: int = Field(ge=2, le=64, description="rank count")
    chunks: int = Field(default=1, ge=1, description="chunks per message")
    fail: bool = Field(default=False, description="raise AlgorithmError")
    log: str | None = Field(default=None, description="append a line here per call")


class TagParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    label: str = Field(description="new algorithm name")


class CostParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    size: int = Field(ge=1, description="bytes")
    bw: float = Field(default=1.0, gt=0, description="GB/s")
    fail_at: int | None = Field(default=None, description="raise SimulationError at this size")
    delay: float = Field(default=0.0, ge=0, le=30, description="seconds to sleep first")
    energy: float | None = Field(default=None, description="report this as the extra metric energy_J")
    details: bool = Field(default=False, description="return per-rank details")


def line(params: LineParams, ctx: object) -> Algorithm:
    if params.log:
        with open(params.log, "a", encoding="utf-8") as fh:
            fh.write(f"{params.ranks} {os.getpid()}\n")
    if params.fail:
        raise AlgorithmError(f"t.line refuses {params.ranks} ranks", hint="set fail: false")
    n, c = params.ranks, params.chunks
    builders = []
    for r in range(n):
        b = RankGraphBuilder(r)
        b.send((r + 1) % n, src=(Buffer.INPUT, 0), count=c)
        b.recv((r - 1) % n, dst=(Buffer.OUTPUT, 0), count=c)
        builders.append(b)
    meta = AlgorithmMeta(
        collective=Collective.parse(params.collective),
        ranks=n,
        in_chunks=c,
        out_chunks=c,
        name=f"line{n}",
        producer="t.line",
    )
    return Algorithm(meta, tuple(b.build() for b in builders))


def tag(alg: Algorithm, params: TagParams, ctx: object) -> Algorithm:
    return alg.with_meta(name=params.label)


def cost(alg: Algorithm, params: CostParams, ctx: object) -> Result:
    """time_ns = (ranks - 1) * size / bw  (bw in GB/s = bytes/ns); algbw = size / time."""
    if params.delay:
        time.sleep(params.delay)
    if params.fail_at == params.size:
        raise SimulationError(f"t.cost cannot simulate {params.size} bytes", hint="pick another size")
    time_ns = (alg.ranks - 1) * params.size / params.bw
    out = Path(ctx.workdir) / "cost.txt"  # type: ignore[attr-defined]
    out.write_text(f"{alg.name} {params.size} {time_ns}\n", encoding="utf-8")
    metrics = {"time_ns": time_ns, "algbw_GBps": params.size / time_ns, "busbw_GBps": params.bw}
    if params.energy is not None:
        metrics["energy_J"] = params.energy
    details = {"per_rank_ns": [time_ns] * alg.ranks} if params.details else {}
    return Result(component="t.cost", metrics=metrics, artifacts={"report": "cost.txt"}, details=details)


@hookimpl
def collhub_producers() -> list[ProducerSpec]:
    return [
        ProducerSpec(
            name="line",
            summary="test ring",
            factory=line,
            params=LineParams,
            collectives=frozenset({"allgather", "allreduce"}),
            min_ranks=2,
        )
    ]


@hookimpl
def collhub_transforms() -> list[TransformSpec]:
    return [TransformSpec(name="tag", summary="rename", factory=tag, params=TagParams)]


@hookimpl
def collhub_consumers() -> list[ConsumerSpec]:
    return [ConsumerSpec(name="cost", summary="closed-form cost", factory=cost, params=CostParams)]
