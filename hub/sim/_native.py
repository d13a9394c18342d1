"""ASTRA-sim's native ``ring`` all-reduce on a 1-D network, node for node (system.json path).

Rules, read in ASTRA-sim 518bd51 and checked against its binaries:

* **Chunks** (``Sys::determine_chunk_size``, ``Sys::generate_collective``): the collective of S
  bytes is cut into chunks of ``c = S // preferred-dataset-splits`` bytes (at least one byte per
  NPU: if ``c < npus``, ``c = npus``), ``ceil(S' / c)`` of them, each of ``c`` bytes (S' = S, or
  ``splits * npus`` after that correction). Each chunk is one stream.
* **One stream at a time** per NPU with ``active-chunks-per-dimension`` 1 (``SchedulerUnit``:
  a stream is initialised when the previous one is removed, at the same tick).
* **The ring** (``Ring.cc``): ``2(n-1)`` messages of ``c // n`` bytes to the next NPU, each sent
  when the previous packet is processed; a packet is processed after a memory-bus transfer of
  ``endpoint-delay`` ns (``MemBus``, a non-local dimension without ``model-shared-bus``) and, for
  the first ``n-1`` received packets (the reduce-scatter half), a reduction of
  ``3 * trunc(bytes / local-mem-bw)`` ns (``PacketBundle::call``: two reads and a write, each
  truncated). The stream's first packet passes the bus too, so ``2n-1`` bus transfers per chunk.
  A receive is posted with its send; the stream ends when its last packet is processed, not
  when its last send arrives.
* The collective (the workload's COMM_COLL) ends when its last stream ends
  (``DataSet::notify_stream_finished``).

* The rank's finish is its COMM_COLL's end, not the arrival of its last send
  (``hub.sim._breakdown.workload_finish``).

Everything else native (other collectives and implementations, multi-dimensional networks,
``localBWAware``, more active chunks, a process group, a shared-bus model, a workload that also
has workload-level SEND/RECV nodes) is refused naming the key (:func:`native_collectives`).
"""

from __future__ import annotations

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
        f"system.json key {key}{sep}{why}; hub.simulate reproduces ASTRA-sim's native collectives only for a "
        "ring all-reduce on a 1-D network (baseline, one active chunk, no process group, no shared bus)",
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
        if cfg.get("collective-optimization", "baseline") not in ("baseline", "localBWAware"):
            raise _refuse("collective-optimization", f": {cfg['collective-optimization']!r} (baseline or localBWAware)")
        if not _is_count(cfg.get("active-chunks-per-dimension", 1)):
            raise _refuse("active-chunks-per-dimension", f": {cfg['active-chunks-per-dimension']!r} (an integer >= 1)")
        if cfg.get("model-shared-bus", 0):
            raise _refuse("model-shared-bus", "asks for the LogGP shared-bus model")
        dimmed = next(
            (
                (r, n.id)
                for r, nodes in enumerate(wl.ranks)
                for n in nodes
                if n.collective is coll and "involved_dim" in n.attrs
            ),
            None,
        )
        if dimmed is not None:
            raise _refuse(
                key,
                f"asks for a native collective whose node sets involved_dim (rank {dimmed[0]}, node {dimmed[1]}), "
                "which hub.simulate does not reproduce",
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
    each other across the dimension queues (``localBWAware`` visits a dimension twice, and with
    several active chunks the ranks' queues can serve different streams). ASTRA-sim 518bd51 never
    finishes such a workload either ("Hardware Resource ... has unreleased nodes"; checked on the
    3-D cases of tests/sim/test_native_streams.py)."""
    return SimulationError(
        f"the workload never finishes: {exc.message}; ASTRA-sim's native streams deadlock here too "
        "(its scheduler runs the same queues), so it reports no finish time either",
        hint="use collective-optimization baseline, active-chunks-per-dimension 1, or the custom path "
        '("all-reduce-implementation-custom")',
    )
