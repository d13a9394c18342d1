"""``hub.overlap``: chunk-level overlap of a collective with the computation that produces its input.

The paper's fine-grained overlap: instead of waiting for the whole gradient, a collective starts
on each part of it as soon as that part is computed. On every rank, for each selected COMM_COLL
node:

* its **producer** is its longest COMP dependency (ties: the highest id); it is cut into
  ``m = min(k, duration_micros)`` pieces that run one after the other (the µs are spread evenly,
  the total is kept; the last piece keeps the producer's id, so everything else that waited for
  the producer still waits for all of it);
* the collective is inlined (``hub.inline``) as ``k`` side-by-side copies of its algorithm
  (``hub.instances``: copy c moves block c of every buffer, its own tags), and the entry nodes of
  copy c depend on piece ``floor(c * m / k)`` instead of on the whole producer (and on the
  collective's other dependencies as before). With ``m = k``: chunk i's first sends wait for
  piece i only.

A COMP of 0 or 1 µs, or a collective without a COMP dependency on a rank, is not cut: all its
copies wait for the dependencies as they are. The result is a plain workload ET (SEND/RECV/COMP),
as ``hub.inline``'s; :func:`hub.workload.extract_inlined` gives each collective back as an
algorithm that ``hub.verify`` checks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from ..chakra import Algorithm, NodeType, Workload, WorkloadNode
from ._choice import Produce
from ._inline import Feed, InlineParams, build_inlined, plan_inline

__all__ = ["OverlapParams", "overlap_transform", "overlap_workload", "producer_of"]


class OverlapParams(InlineParams):
    """Parameters of ``hub.overlap`` (``hub.inline``'s, plus the number of pieces)."""

    pieces: int = Field(
        4,
        ge=1,
        le=1024,
        description="cut each collective's producer COMP into this many pieces "
        "and the collective into as many copies on parts of the data; copy i waits for piece i only",
    )


def producer_of(node: WorkloadNode, by_id: Mapping[int, WorkloadNode]) -> WorkloadNode | None:
    """The COMP that produces ``node``'s input: its longest COMP dependency (ties: highest id)."""
    comps = [by_id[d] for d in set(node.deps) if d in by_id and by_id[d].type == NodeType.COMP]
    return max(comps, key=lambda c: (c.duration_micros, c.id), default=None)


def overlap_workload(
    wl: Workload,
    pieces: int = 4,
    algorithm_for: Mapping[Any, Algorithm | str] | None = None,
    params: InlineParams | None = None,
    *,
    produce_algorithm: Produce | None = None,
) -> Workload:
    """``wl`` with its selected collectives inlined and overlapped with their producers (module doc).

    Raises :class:`hub.errors.VerificationError` (exit 3) listing every problem (rank, node), as
    :func:`hub.workload.inline_workload` does, and for an algorithm without a chunk layout.
    """
    k = int(pieces)
    if params is not None and params.recognize:
        from ._recognize import recognize_collectives

        wl, _count = recognize_collectives(wl)
    placements = plan_inline(wl, algorithm_for, params, copies=k, produce_algorithm=produce_algorithm)
    if k == 1:
        return build_inlined(wl, placements)
    by_id = [{n.id: n for n in nodes} for nodes in wl.ranks]
    feeds: dict[tuple[int, int], Feed] = {}
    for pl in placements:
        for r, n in pl.nodes.items():
            prod = producer_of(n, by_id[r])
            if prod is not None and prod.duration_micros >= 2:
                feeds[(r, n.id)] = Feed(prod.id, min(k, prod.duration_micros), k)
    return build_inlined(wl, placements, feeds)


def overlap_transform(workload: Workload, params: OverlapParams, ctx: Any = None) -> Workload:
    """Transform factory of ``hub.overlap`` (see :func:`overlap_workload`)."""
    if not isinstance(workload, Workload):
        from ..errors import UsageError

        raise UsageError(
            f"hub.overlap takes a workload, not a {type(workload).__name__}",
            hint="read one with hub.chakra.read_workload",
        )
    produce = getattr(ctx, "produce_algorithm", None)
    return overlap_workload(workload, params.pieces, params.algorithm_for or None, params, produce_algorithm=produce)
