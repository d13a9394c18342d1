"""Parameters of ``replay.run`` (pydantic v2; validated by the plugin manager before a run)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ._geometry import DTYPE_BYTES

__all__ = ["ReplayParams", "sizes_of"]


def _parse(value: int | str) -> int:
    from hub.sim import parse_size

    return parse_size(value)


class ReplayParams(BaseModel):
    """What to run, how often and where (nccl-tests' flags in brackets)."""

    model_config = ConfigDict(extra="forbid")

    backend: Literal["auto", "nccl", "gloo"] = Field(
        "auto", description="nccl (one GPU per rank), gloo (CPU), auto: nccl when every rank has a GPU, else gloo"
    )
    ranks: int | None = Field(
        None,
        ge=1,
        description="local processes to spawn (default: the algorithm's ranks); inside a torchrun-style "
        "launch (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT set) the launch's processes are used instead",
    )
    size: int | str | list[int | str] = Field(
        "1MiB",
        description="collective size(s) in bytes, nccl-tests' S: one value, a list, or a range "
        "{from: 1KiB, to: 1GiB, factor: 2} / {from:, to:, step:} [-b/-e/-f/-i]",
    )
    max_size: int | str | None = Field(None, description="sweep size, size*factor, ... up to this [-e]")
    factor: int = Field(2, ge=2, description="multiplier of the sweep [-f]")
    dtype: Literal[tuple(DTYPE_BYTES)] = Field("float32", description="element type [-d]")  # type: ignore[valid-type]
    op: Literal["sum", "prod", "min", "max"] = Field("sum", description="reduction operator [-o]")
    iters: int = Field(20, ge=1, le=100000, description="timed iterations [-n]")
    repeat: int = Field(
        1,
        ge=1,
        le=100,
        description="timing rounds, each timing every mode and the native "
        "collective once (interleaved), median reported: steadier on a loaded machine",
    )
    warmup: int = Field(1, ge=1, le=10000, description="untimed warm-up iterations, touching every buffer [-w]")
    inplace: Literal["both", "algorithm"] | bool = Field(
        "both",
        description="both: out-of-place and in-place columns (the mode the algorithm was not built for "
        "costs one local copy); algorithm: only its own mode; true/false: only that one",
    )
    check: bool = Field(
        True, description="check the result (#wrong) against the definition and the native collective [-c]"
    )
    native: bool = Field(True, description="also time the library's own collective in the same run")
    timeout: float = Field(60.0, gt=0, description="seconds without progress before a rank reports a hang [-T]")
    schedule: Literal["auto", "dynamic", "rounds"] = Field(
        "auto",
        description="auto: dynamic issue on gloo, rounds on NCCL; rounds on gloo runs NCCL's round "
        "schedule (one batch_isend_irecv group per round) on the CPU",
    )
    preflight: bool = Field(
        True,
        description="verify structure and progress and dry-run the schedule before launch; "
        "false leaves deadlocks to the runtime watchdog",
    )

    @field_validator("size", mode="before")
    @classmethod
    def _range(cls, v: Any) -> Any:
        # A range mapping becomes its list of sizes, through the core's one range grammar.
        if isinstance(v, dict):
            from hub import range_values

            return range_values("size", v, limit=10_000)
        return v

    @field_validator("size")
    @classmethod
    def _sizes(cls, v: int | str | list[int | str]) -> int | str | list[int | str]:
        for s in v if isinstance(v, list) else [v]:
            if _parse(s) <= 0:
                raise ValueError("sizes must be > 0 bytes")
        if isinstance(v, list) and not v:
            raise ValueError("give at least one size")
        return v

    @field_validator("max_size")
    @classmethod
    def _max(cls, v: int | str | None) -> int | str | None:
        if v is not None:
            _parse(v)
        return v


def sizes_of(params: ReplayParams) -> list[int]:
    """The sizes to run, in bytes (a list, or the ``size..max_size`` sweep)."""
    from ._geometry import size_ladder

    raw = params.size if isinstance(params.size, list) else [params.size]
    return size_ladder(
        [_parse(s) for s in raw], _parse(params.max_size) if params.max_size is not None else None, params.factor
    )


def modes_of(params: ReplayParams, algorithm_inplace: bool) -> list[bool]:
    """In-place flags to run, out-of-place first (the nccl-tests column order)."""
    if params.inplace == "both":
        return [False, True]
    if params.inplace == "algorithm":
        return [algorithm_inplace]
    return [bool(params.inplace)]
