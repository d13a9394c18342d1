"""Which of a system.json's native collectives hub.simulate reproduces, and the refusals.

Reproduced exactly (``hub.sim._native_streams`` holds the rules: chunks, phases across
dimensions, per-dimension queues, the ring phase itself, process groups): ASTRA-sim 518bd51's
native ``ring`` all-reduce, ``"ring"`` once per network dimension, on 1-D and multi-dimensional
networks, with any ``preferred-dataset-splits`` (>= 1), ``endpoint-delay`` (>= 1, as 0 aborts
ASTRA-sim), ``local-mem-bw``, ``active-chunks-per-dimension`` (>= 1), ``scheduling-policy``,
``collective-optimization`` ``baseline`` or ``localBWAware``, in process groups, next to compute
and next to workload-level SEND/RECV. The rank's finish is its COMM_COLL's end, not the arrival
of its last send (``hub.sim._breakdown.workload_finish``).

Refused, naming the key, with the custom path as the way out (:func:`native_collectives`): other
native implementations and collectives, an implementation list whose length is not the number
of dimensions, a topology that is not a dimensional network, ``model-shared-bus``, a node's
``involved_dim`` that is shorter than the dimensions or involves none (ASTRA-sim reads past it /
never finishes; a full one is followed), and a native all-reduce next to collectives served
by a custom implementation (a mix ASTRA-sim never finishes). Streams that never finish (as
ASTRA-sim's do not either) are one error (:func:`stuck_native`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..chakra import Collective, NodeType, Workload
from ..errors import SimulationError

__all__ = ["NativeRing", "native_collectives", "stuck_native"]

_STEMS = {
    Collective.ALLREDUCE: "all-reduce",
    Collective.ALLGATHER: "all-gather",
    Collective.REDUCESCATTER: "reduce-scatter",
    Collective.ALLTOALL: "all-to-all",
}


@dataclass(frozen=True)
class NativeRing:
    """The system.json settings a native ring all-reduce depends on, and the network's NPUs per
    dimension (``hub.sim._native_streams``)."""

    splits: int
    endpoint_delay: int
    local_mem_bw: float  # GB/s (decimal)
    active_chunks: int = 1
    local_bw_aware: bool = False
    dims: tuple[int, ...] = ()


def _refuse(key: str, why: str, coll: Collective = Collective.ALLREDUCE) -> SimulationError:
    stem = _STEMS.get(coll, "all-reduce")
    sep = "" if why.startswith(":") else " "
    return SimulationError(
        f"system.json key {key}{sep}{why}; of ASTRA-sim's native collectives hub.simulate reproduces the "
        'ring all-reduce ("ring" once per network dimension, no shared bus)',
        hint=f'use the custom path: "{stem}-implementation-custom": ["<ET prefix>"] (e.g. written by collhub '
        f"produce hub.ring), or algorithm_for={{'{coll.value}': 'ring'}}",
    )


def native_collectives(
    cfg: Mapping[str, Any],
    wl: Workload,
    dims: int | None,
    skip: frozenset[Collective] = frozenset(),
    *,
    dim_sizes: tuple[int, ...] | None = None,
) -> dict[Collective, NativeRing]:
    """The collectives of ``wl`` that ``cfg`` serves natively and hub.simulate reproduces
    (collectives with a custom key, or in ``skip``, are not included); anything native it cannot
    reproduce raises :class:`SimulationError` naming the key."""
    from ._system import has_custom

    used = {n.collective for nodes in wl.ranks for n in nodes if n.type == NodeType.COLL}
    out: dict[Collective, NativeRing] = {}
    for coll, stem in _STEMS.items():
        key = f"{stem}-implementation"
        if coll not in used or coll in skip or has_custom(cfg, stem) or not cfg.get(key):
            continue
        impl = cfg[key]
        if coll is not Collective.ALLREDUCE or not isinstance(impl, list) or set(impl) != {"ring"}:
            raise _refuse(key, f"asks for ASTRA-sim's native {impl!r}, which hub.simulate does not reproduce yet", coll)
        if not dims:
            raise _refuse(key, "asks for a native collective on a topology that is not a dimensional network")
        if len(impl) != dims:
            # (ASTRA-sim runs a shorter list but builds its rings from it alone: meaningless numbers)
            raise _refuse(key, f": {impl!r} has {len(impl)} entries, the network {dims} dimensions (one per dimension)")
        npus = math.prod(dim_sizes) if dim_sizes else wl.rank_count
        if wl.rank_count != npus:
            # (ASTRA-sim reads one workload file per NPU; a smaller workload is not its input)
            raise _refuse(key, f"asks for a native collective on {npus} NPUs in a workload of {wl.rank_count} ranks")
        if dims > _MAX_DIMS:
            raise _refuse(key, f"asks for a native collective on {dims} dimensions (at most {_MAX_DIMS})")
        if cfg.get("collective-optimization", "baseline") not in ("baseline", "localBWAware"):
            raise _refuse("collective-optimization", f": {cfg['collective-optimization']!r} (baseline or localBWAware)")
        if cfg.get("scheduling-policy", "LIFO") not in ("LIFO", "FIFO", "EXPLICIT"):
            # (one collective at a time per NPU: its streams share one priority, so any policy gives
            # the same order; an unknown one makes ASTRA-sim panic)
            raise _refuse("scheduling-policy", f": {cfg['scheduling-policy']!r} (LIFO, FIFO or EXPLICIT)")
        if not _is_count(cfg.get("active-chunks-per-dimension", 1)):
            raise _refuse("active-chunks-per-dimension", f": {cfg['active-chunks-per-dimension']!r} (an integer >= 1)")
        if cfg.get("model-shared-bus", 0):
            raise _refuse("model-shared-bus", "asks for the LogGP shared-bus model")
        short = next(
            (
                (r, n.id, n.attrs["involved_dim"])
                for r, nodes in enumerate(wl.ranks)
                for n in nodes
                if n.collective is coll
                and "involved_dim" in n.attrs
                and (
                    not isinstance(n.attrs["involved_dim"], list)
                    or len(n.attrs["involved_dim"]) < dims
                    or not any(n.attrs["involved_dim"][:dims])
                )
                and not n.pg_name.strip("0")  # (a process group ignores it)
            ),
            None,
        )
        if short is not None:
            # (ASTRA-sim indexes the list by dimension, past its end for a short one; with no
            # dimension involved the collective has no stream and never finishes)
            raise _refuse(
                key,
                f"asks for a native collective whose node's involved_dim {short[2]!r} (rank {short[0]}, "
                f"node {short[1]}) does not name each of the {dims} dimensions, or involves none",
            )
        out[coll] = _settings(cfg, dim_sizes or ())
    others = sorted(c.value for c in used if c is not None and c not in out and c is not Collective.BROADCAST)
    if out and others:
        # (ASTRA-sim 518bd51 itself never finishes such a workload: the custom collective's
        # hardware resource is never released, "Hardware Resource ... has unreleased nodes")
        raise _refuse(
            "all-reduce-implementation",
            f"asks for a native all-reduce next to {others[0]} served by "
            "another (custom) implementation, a mix ASTRA-sim 518bd51 itself never finishes",
        )
    return out


_MAX_DIMS = 12  # one engine resource class per dimension queue (classes 4-15)
_QUEUE_CAP = range(1, 2**31)  # a queue's slots: the engine's int32 counters


def _is_count(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v in _QUEUE_CAP


def _settings(cfg: Mapping[str, Any], dims: tuple[int, ...]) -> NativeRing:
    splits, delay, bw = cfg.get("preferred-dataset-splits"), cfg.get("endpoint-delay", 10), cfg.get("local-mem-bw")
    if not isinstance(splits, int) or isinstance(splits, bool) or splits < 1:
        raise _refuse("preferred-dataset-splits", f": must be an integer >= 1, got {splits!r}")
    if not isinstance(delay, int) or isinstance(delay, bool) or delay < 1:
        raise _refuse("endpoint-delay", f": must be an integer >= 1 (0 aborts ASTRA-sim), got {delay!r}")
    if isinstance(bw, bool) or not isinstance(bw, (int, float)) or not bw > 0:
        raise _refuse("local-mem-bw", f": must be a number > 0 (GB/s), got {bw!r}")
    active = cfg.get("active-chunks-per-dimension", 1)
    bw_aware = cfg.get("collective-optimization", "baseline") == "localBWAware"
    return NativeRing(splits, delay, float(bw), active, bw_aware, dims)


def stuck_native(exc: SimulationError) -> SimulationError:
    """The error for a workload with native collectives that never finishes: their streams wait for
    each other across the dimension queues (with ``localBWAware`` on 3 or more dimensions a stream
    visits a middle dimension's queue twice, and when the ranks start at different times their
    queues serve different streams). ASTRA-sim 518bd51 never finishes such a workload either
    ("Hardware Resource ... has unreleased nodes"; tests/sim/test_native_streams.py,
    benchmarks/bench_native.py)."""
    return SimulationError(
        f"the workload never finishes: {exc.message}; ASTRA-sim's native streams deadlock here too "
        "(its scheduler runs the same queues), so it reports no finish time either",
        hint='use collective-optimization baseline, or the custom path ("all-reduce-implementation-custom")',
    )
