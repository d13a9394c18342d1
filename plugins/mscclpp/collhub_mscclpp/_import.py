"""``read_plan``: an MSCCL++ execution plan as a collhub :class:`~hub.chakra.Algorithm`.

Steps: parse (:mod:`._plan`, the parser's rules), the executor's size check when a size is
bound, capacities (:mod:`._limits`), pipeline iterations at the bound size and the chunk
refinement, the lowering (:mod:`._lower`, :mod:`._ops`), the cross-rank edges (:mod:`._attach`),
then the graphs, the metadata (the plan's top-level fields kept under ``os.meta.*``) and, with a
size, the byte sizes: ``chunk`` bytes per chunk as hub binds, 8 bytes per signal message.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from hub.chakra import ONESIDED as OS, Algorithm, AlgorithmMeta, Collective, chunk_bytes
from hub.errors import ImportFormatError, UsageError

from ._attach import attach
from ._limits import LimitFinding, check_limits
from ._lower import PlanProblem, finish_launches, lower_plan, pipeline_iterations, refinement
from ._plan import DEFAULT_MAX_BYTES, Plan, load_plan

__all__ = ["COLLECTIVES", "Imported", "no_gc", "plan_to_algorithm", "read_plan"]

#: plan ``collective`` -> the profile's; anything else (sendrecv, test, custom) is CUSTOM
COLLECTIVES = {
    "allreduce": Collective.ALLREDUCE,
    "allgather": Collective.ALLGATHER,
    "reducescatter": Collective.REDUCESCATTER,
    "alltoall": Collective.ALLTOALL,
}
#: a plan unrolled past this many sub-chunks per chunk is refused (bounded memory)
MAX_REFINE = 4096
MAX_NODES = 4_000_000


@dataclass
class Imported:
    """The algorithm and what the import found that the graph cannot carry."""

    algorithm: Algorithm
    plan: Plan
    problems: list[PlanProblem] = field(default_factory=list)
    limits: list[LimitFinding] = field(default_factory=list)


def read_plan(
    path: str | Path, *, size: int | None = None, name: str | None = None, max_bytes: int = DEFAULT_MAX_BYTES
) -> Imported:
    """Import the plan at ``path``, bound to ``size`` bytes (nccl-tests' definition) if given."""
    with no_gc():
        plan = load_plan(path, max_bytes=max_bytes)
        return plan_to_algorithm(plan, size=size, name=name)


@contextmanager
def no_gc() -> Iterator[None]:
    """The import allocates ~10 small containers per node and frees none of them until the end:
    the cyclic collector's passes over them cost more than the import (no cycles are made)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def plan_to_algorithm(plan: Plan, *, size: int | None = None, name: str | None = None) -> Imported:
    """Lower a parsed plan (see the module docstring)."""
    with no_gc():
        return _plan_to_algorithm(plan, size, name)


def _plan_to_algorithm(plan: Plan, size: int | None, name: str | None) -> Imported:
    coll = COLLECTIVES.get(plan.collective, Collective.CUSTOM)
    g0 = plan.gpus[0]
    ins = max(g.input_chunks for g in plan.gpus)
    outs = max(g.output_chunks for g in plan.gpus)
    if coll is not Collective.CUSTOM and any(
        (g.input_chunks, g.output_chunks) != (g0.input_chunks, g0.output_chunks) for g in plan.gpus
    ):
        raise ImportFormatError("GPUs disagree on input_chunks/output_chunks", path=plan.path)
    cb = None
    if size is not None:
        cb = _size_check(plan, coll, size, ins, outs)
    iters = pipeline_iterations(plan, cb)
    f = refinement(plan, iters)
    if f > MAX_REFINE or max(ins, outs, max(g.scratch_chunks for g in plan.gpus)) * f >= 2**30:
        raise UsageError(
            f"{plan.path}: pipelines and thread-block groups cut each chunk into {f} pieces at this size",
            hint="bind a smaller size (the size sets the pipeline iterations)",
        )
    estimate = _estimate_nodes(plan, iters)
    if estimate > MAX_NODES:
        raise UsageError(
            f"{plan.path}: the plan would lower to about {estimate} nodes (> {MAX_NODES})",
            hint="bind a smaller size (the size sets the pipeline iterations)",
        )
    limits = check_limits(plan)
    low = lower_plan(plan, iters, f)
    attach(low)
    finish_launches(low)
    total = sum(len(n) for n in low.nodes)
    if total > MAX_NODES:
        raise UsageError(f"{plan.path}: the plan lowers to {total} nodes (> {MAX_NODES})", hint="bind a smaller size")
    flags = max(low.flags) if low.flags else 0
    extra: list[tuple[str, str | int | float | bool]] = [(OS.REFINE, f), (OS.FLAG_CHUNKS, flags)]
    for k, v in plan.top.items():
        extra.append(
            (OS.META_PREFIX + k, str(v) if isinstance(v, int) and not isinstance(v, bool) and v >= 2**63 else v)
        )
    extra += [
        (OS.META_PREFIX + "input_chunks", ins),
        (OS.META_PREFIX + "output_chunks", outs),
        (OS.META_PREFIX + "scratch_chunks", max(g.scratch_chunks for g in plan.gpus)),
    ]
    meta = AlgorithmMeta(
        collective=coll,
        ranks=len(plan.gpus),
        in_chunks=ins * f,
        out_chunks=outs * f,
        scratch_chunks=low.scratch_sub + flags,
        inplace=bool(plan.top["inplace"]),
        name=name or plan.name,
        producer="mscclpp.plan",
        extra=tuple(extra),
    )
    alg = Algorithm(meta, tuple(n.graph() for n in low.nodes))
    if size is not None:
        alg = _bind(alg, low, size)
    return Imported(alg, plan, low.problems, limits)


def _estimate_nodes(plan: Plan, iters: dict[int, int]) -> int:
    """An upper bound of the nodes the lowering makes, before it allocates any (bounded memory
    whatever a plan claims): per op, its channels and operands times the switch group size, twice
    for the two ends of a message, times the pipeline iterations."""
    group = max((len(ranks) for g in plan.gpus for _b, ranks in g.switch), default=1)
    total = 0
    for g in plan.gpus:
        for b in g.blocks:
            for o in b.ops:
                k = iters.get(id(o), 1)
                for op in o.body or [o]:
                    raw = op.raw
                    n = (
                        len(raw.get("channel_ids") or ())
                        + len(raw.get("src_buff") or ())
                        + len(raw.get("dst_buff") or ())
                    )
                    n += len(raw.get("semaphore_ids") or ())
                    total += k * (1 + 2 * n * (group if raw.get("channel_type") == "switch" else 1))
    return total


def _size_check(plan: Plan, coll: Collective, size: int, ins: int, outs: int) -> int:
    """The executor's load-time size rules (reference §3.2, §13.1 rule 5); the chunk bytes."""
    top = plan.top
    a = int(top.get("buffer_alignment", 16))
    if ins == 0 and outs == 0:
        raise ImportFormatError(
            "input_chunks and output_chunks are 0: the executor cannot run this plan", path=plan.path
        )
    ref = outs if coll is Collective.ALLGATHER else ins
    if ref == 0:
        ref = outs or ins
    cb = -(-size // ref)
    in_b, out_b = cb * ins, cb * outs
    lo, hi = int(top.get("min_message_size", 0)), int(top.get("max_message_size", 2**64 - 1))
    call = out_b if plan.collective == "allgather" else in_b
    if not lo <= call <= hi:
        raise ImportFormatError(
            f"message size {call} is outside the plan's window [{lo}, {hi}] (the executor refuses the call)",
            path=plan.path,
        )
    for what, b, c in (("input", in_b, ins), ("output", out_b, outs)):
        if c and (b % a or (b // a) % c):
            raise ImportFormatError(
                f"{what} size {b} bytes is not a multiple of buffer_alignment {a} x {what}_chunks {c} "
                "(the executor refuses it)",
                path=plan.path,
                hint=f"pick a size that is a multiple of {a * max(ins, outs, 1)} bytes",
            )
    if size != cb * (ref if coll is not Collective.CUSTOM else ref):
        pass  # hub rounds each chunk up; the executor would need exact chunks (checked above)
    return -(-cb // a) * a


def _bind(alg: Algorithm, low: object, size: int) -> Algorithm:
    """Bind as hub does, then size signal messages as the 8 bytes of a semaphore increment (on
    both ends, so pairs agree). LL packet messages keep their payload size: a message may not
    carry more than its chunks (the profile's size check), so the 2x wire overhead is in the
    node's ``os.payload`` attribute, not in its time."""
    from ._lower import Lowering

    assert isinstance(low, Lowering)
    bound = alg.bind(size)
    graphs = []
    for g, nodes in zip(bound.graphs, low.nodes, strict=True):
        sz = g.size.copy()
        if nodes.sync_msgs:
            sz[np.asarray(nodes.sync_msgs, dtype=np.int64)] = OS.SIGNAL_BYTES
        g.size = sz
        graphs.append(g)
    return Algorithm(bound.meta, tuple(graphs))


def chunk_of(alg: Algorithm) -> int:
    """Bytes per (refined) chunk of a bound algorithm."""
    return chunk_bytes(alg.meta.size or 0, alg.meta.reference_chunks)
