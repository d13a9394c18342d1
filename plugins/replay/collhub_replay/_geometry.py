"""Element counts of one replay case: nccl-tests' size definitions mapped onto chunk units."""

from __future__ import annotations

from dataclasses import dataclass

from hub.errors import UsageError

from ._plan import Plan

__all__ = ["DTYPE_BYTES", "Geometry", "geometry", "size_ladder"]

#: element sizes of the dtypes the replay fills with exact integer values
DTYPE_BYTES = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2, "int32": 4, "int64": 8}

#: in the units of the reference buffer (nccl-tests' S): how many per-rank units S spans
_REF_UNITS = {"allreduce": 1, "broadcast": 1, "reduce": 1, "allgather": -1, "reducescatter": -1, "alltoall": -1}


@dataclass(frozen=True)
class Geometry:
    """``size``: bytes actually moved by the definition (S rounded down to whole elements per
    rank unit, as nccl-tests does); ``count``: S in elements; ``unit``: elements per rank unit;
    ``chunk``: elements per chunk (``ceil(unit / c)``, the last chunk of a unit padded)."""

    requested: int
    size: int
    count: int
    unit: int
    chunk: int
    esize: int


def geometry(plan: Plan, requested: int, dtype: str) -> Geometry:
    """The case for ``requested`` bytes of ``dtype``, or a UsageError when it holds no element."""
    esize = DTYPE_BYTES[dtype]
    ref_units = plan.ranks if _REF_UNITS[plan.collective] < 0 else 1
    unit = requested // (esize * ref_units)
    if unit <= 0:
        raise UsageError(
            f"size {requested} B is too small for {plan.collective} of {dtype} over {plan.ranks} ranks",
            hint=f"use at least {esize * ref_units} bytes",
        )
    chunk = -(-unit // plan.chunks_per_unit)
    return Geometry(requested, unit * ref_units * esize, unit * ref_units, unit, chunk, esize)


def size_ladder(sizes: list[int], max_size: int | None, factor: int) -> list[int]:
    """``-b/-e/-f``: with ``max_size`` the sizes ``b, b*f, ...`` up to ``e``; else ``sizes``."""
    if max_size is None:
        return sizes
    if len(sizes) != 1:
        raise UsageError("max_size sweeps from one start size", hint="give size as one value with max_size")
    if factor < 2:
        raise UsageError(f"factor must be >= 2, got {factor}")
    out, s = [], sizes[0]
    if max_size < s:
        raise UsageError(f"max_size {max_size} is below size {s}")
    while s <= max_size:
        out.append(s)
        s *= factor
    return out
