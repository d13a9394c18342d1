"""ASTRA-sim's native collectives on a 1-D network, node for node (system.json path).

Rules, read in ASTRA-sim 518bd51 and checked against its binaries:

* **What is reproduced** (``docs/simulator.md`` has the table): ``ring`` for all four collectives,
  ``direct`` and ``directN`` (any window N >= 1) for all four, ``halvingDoubling`` for all-reduce,
  all-gather and reduce-scatter, ``doubleBinaryTree`` for all four (ASTRA-sim runs its all-reduce
  tree for each), on a 1-D Ring, Switch or FullyConnected network; ``oneRing``,
  ``oneDirect[N]`` and ``oneHalvingDoubling`` are the same algorithms on one dimension. Each
  algorithm's per-rank message schedule is its own module (``_native_ring``, ``_native_direct``,
  ``_native_hd``, ``_native_dbt``; shared rules in ``_native_ops``).
* **Chunks** (``Sys::determine_chunk_size``, ``Sys::generate_collective``): the collective of S
  bytes is cut into chunks of ``c = S // preferred-dataset-splits`` bytes, ``ceil(S' / c)`` of
  them, each of ``c`` bytes; except in an all-gather, ``c`` is at least one byte per NPU (if
  ``c < npus``, ``c = npus`` and ``S' = splits * npus``; else ``S' = S``). Each chunk is one stream.
* **One stream at a time** per NPU with ``active-chunks-per-dimension`` 1 (``SchedulerUnit``:
  a stream is initialised when the previous one is removed, at the same tick).
* The collective (the workload's COMM_COLL) ends when its last stream ends
  (``DataSet::notify_stream_finished``); the rank's finish is its COMM_COLL's end, not the
  arrival of its last send (``hub.sim._breakdown.workload_finish``).

Everything else native is refused naming the key (:func:`native_collectives`): a ``directN``
window of 0 (ASTRA-sim sends nothing), halving-doubling all-to-all (ASTRA-sim exits) or on a non-power-of-two
number of NPUs, a double binary tree on a non-power-of-two number, multi-dimensional networks,
``localBWAware``, more active chunks, a process group, a shared-bus model, a workload that also
has workload-level SEND/RECV nodes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..chakra import Collective, NodeType, Workload
from ..errors import SimulationError
from ._native_dbt import dbt_schedule
from ._native_direct import direct_schedule
from ._native_hd import hd_schedule
from ._native_ops import Schedule
from ._native_ring import ring_schedule

__all__ = ["NativeRing", "chunking", "native_collectives", "native_schedule"]

_STEMS = {
    Collective.ALLREDUCE: "all-reduce",
    Collective.ALLGATHER: "all-gather",
    Collective.REDUCESCATTER: "reduce-scatter",
    Collective.ALLTOALL: "all-to-all",
}
#: the names CollectiveImplLookup knows -> the algorithm (the ``one`` variants are the same on one
#: dimension); ``direct``/``oneDirect`` may carry a window: a number, of which stoi reads 5 digits
_NAMES = {
    "ring": "ring",
    "oneRing": "ring",
    "direct": "direct",
    "oneDirect": "direct",
    "halvingDoubling": "halvingDoubling",
    "oneHalvingDoubling": "halvingDoubling",
    "doubleBinaryTree": "doubleBinaryTree",
}
_WINDOW = re.compile(r"(direct|oneDirect)(\d+)")


@dataclass(frozen=True)
class NativeRing:
    """The system.json settings a native collective depends on, and its implementation
    (``ring``, ``direct``, ``halvingDoubling`` or ``doubleBinaryTree``)."""

    splits: int
    endpoint_delay: int
    local_mem_bw: float  # GB/s (decimal)
    impl: str = "ring"
    window: int | None = None  # directN's N (None: n-1)


def _refuse(key: str, why: str, coll: Collective = Collective.ALLREDUCE) -> SimulationError:
    stem = _STEMS.get(coll, "all-reduce")
    sep = "" if why.startswith(":") else " "
    return SimulationError(
        f"system.json key {key}{sep}{why}; hub.simulate reproduces ASTRA-sim's native collectives only on a "
        "1-D network (baseline, one active chunk, no process group, no shared bus; docs/simulator.md)",
        hint=f'use the custom path: "{stem}-implementation-custom": ["<ET prefix>"] (e.g. written by collhub '
        f"produce hub.ring), or algorithm_for={{'{coll.value}': 'ring'}}",
    )


def _implementation(key: str, impl: Any, coll: Collective, n: int) -> tuple[str, int | None]:
    """The algorithm ``impl`` (the key's one-entry list) names and its window (directN), if
    hub.simulate reproduces it for ``coll`` on ``n`` NPUs; else the refusal, saying why."""
    name = impl[0] if isinstance(impl, list) and len(impl) == 1 else None
    win = _WINDOW.fullmatch(name) if isinstance(name, str) else None
    algo = _NAMES.get(win.group(1) if win else name) if isinstance(name, str) else None
    if algo is None:
        why = "one entry per network dimension" if not isinstance(impl, list) or len(impl) != 1 else "a name it knows"
        raise _refuse(key, f": {impl!r} is not ASTRA-sim's native implementation list ({why})", coll)
    pow2 = n & (n - 1) == 0
    window = int(win.group(2)[:5]) if win else None  # (stoi of at most 5 digits, as CollectiveImplLookup)
    if algo == "direct" and window == 0:
        why = "a window of 0 sends nothing (ASTRA-sim never finishes the collective)"
        raise _refuse(key, f"asks for ASTRA-sim's native {impl!r}: {why}", coll)
    if algo == "halvingDoubling":
        if coll is Collective.ALLTOALL:
            raise _refuse(key, f"asks for ASTRA-sim's native {impl!r} all-to-all, which ASTRA-sim exits on", coll)
        if not pow2:
            raise _refuse(key, f"asks for ASTRA-sim's native {impl!r} on {n} NPUs, not a power of two", coll)
    elif algo == "doubleBinaryTree" and not pow2:
        raise _refuse(
            key, f"asks for ASTRA-sim's native {impl!r} on {n} NPUs, not a power of two (ASTRA-sim crashes)", coll
        )
    return algo, window


def native_collectives(
    cfg: Mapping[str, Any], wl: Workload, dims: int | None, skip: frozenset[Collective] = frozenset()
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
        if dims != 1:
            where = f"a {dims}-dimensional network" if dims else "a topology that is not a dimensional network"
            raise _refuse(key, f"asks for a native collective on {where}", coll)
        algo, window = _implementation(key, impl, coll, wl.rank_count)
        if cfg.get("collective-optimization", "baseline") != "baseline":
            raise _refuse("collective-optimization", f": {cfg['collective-optimization']!r} (only baseline)")
        if cfg.get("active-chunks-per-dimension", 1) != 1:
            raise _refuse("active-chunks-per-dimension", f": {cfg['active-chunks-per-dimension']!r} (only 1)")
        if cfg.get("model-shared-bus", 0):
            raise _refuse("model-shared-bus", "asks for the LogGP shared-bus model")
        p2p = next(
            ((r, n.id) for r, nodes in enumerate(wl.ranks) for n in nodes if n.type in (NodeType.SEND, NodeType.RECV)),
            None,
        )
        if p2p is not None:
            # (checked against the binary: exact alone, and next to compute and custom collectives;
            # next to workload-level SEND/RECV it is not yet: dlrm8 with its all-to-alls inlined
            # ends up to one message earlier on some ranks)
            raise _refuse(
                key,
                f"asks for a native collective in a workload with SEND/RECV nodes (rank {p2p[0]}, "
                f"node {p2p[1]}), which hub.simulate does not reproduce exactly yet",
            )
        groups = sorted(
            {n.pg_name for nodes in wl.ranks for n in nodes if n.type == NodeType.COLL and n.collective is coll}
            - {"", "0"}
        )
        if groups:
            raise _refuse(key, f"asks for a native collective in process group {groups[0]!r}")
        settings = replace(_settings(cfg), impl=algo, window=window)
        if coll is Collective.ALLGATHER:
            small = min(
                (n.comm_size for nodes in wl.ranks for n in nodes if n.collective is coll and n.comm_size is not None),
                default=settings.splits,
            )
            if small < settings.splits:
                # (ASTRA-sim's all-gather chunks have no minimum size: chunks of 0 bytes, and then a
                # division by zero)
                raise _refuse(
                    "preferred-dataset-splits",
                    f": {settings.splits} splits of a {small}-byte all-gather leave chunks of 0 bytes",
                    coll,
                )
        out[coll] = settings
    others = sorted(c.value for c in used if c is not None and c not in out and c is not Collective.BROADCAST)
    if out and others:
        # (ASTRA-sim 518bd51 itself never finishes such a workload: the custom collective's
        # hardware resource is never released, "Hardware Resource ... has unreleased nodes")
        first = next(iter(out))
        raise _refuse(
            f"{_STEMS[first]}-implementation",
            f"asks for a native {_STEMS[first]} next to {others[0]} served by "
            "another (custom) implementation, a mix ASTRA-sim 518bd51 itself never finishes",
            first,
        )
    return out


def _settings(cfg: Mapping[str, Any]) -> NativeRing:
    splits, delay, bw = cfg.get("preferred-dataset-splits"), cfg.get("endpoint-delay", 10), cfg.get("local-mem-bw")
    if not isinstance(splits, int) or isinstance(splits, bool) or splits < 1:
        raise _refuse("preferred-dataset-splits", f": must be an integer >= 1, got {splits!r}")
    if not isinstance(delay, int) or isinstance(delay, bool) or delay < 1:
        raise _refuse("endpoint-delay", f": must be an integer >= 1 (0 aborts ASTRA-sim), got {delay!r}")
    if isinstance(bw, bool) or not isinstance(bw, (int, float)) or not bw > 0:
        raise _refuse("local-mem-bw", f": must be a number > 0 (GB/s), got {bw!r}")
    return NativeRing(splits, delay, float(bw))


def chunking(ring: NativeRing, coll: Collective, size: int, npus: int) -> tuple[int, int]:
    """``(chunks, chunk bytes)`` of a native collective of ``size`` bytes over ``npus`` NPUs
    (module doc)."""
    chunk = size // ring.splits
    total = size
    if coll is not Collective.ALLGATHER and npus > chunk:
        chunk = npus
        total = ring.splits * chunk
    return math.ceil(total / chunk), chunk


def native_schedule(ring: NativeRing, coll: Collective, n: int, pos: int, chunk: int, chunk_no: int) -> Schedule:
    """What position ``pos`` of ``n`` does for one chunk of ``chunk`` bytes, its ``chunk_no``-th of
    this collective kind (which of the double binary trees it uses)."""
    d, bw = ring.endpoint_delay, ring.local_mem_bw
    if ring.impl == "ring":
        return ring_schedule(coll, n, pos, chunk, d, bw)
    if ring.impl == "direct":
        return direct_schedule(coll, n, pos, chunk, d, bw, ring.window)
    if ring.impl == "halvingDoubling":
        return hd_schedule(coll, n, pos, chunk, d, bw)
    return dbt_schedule(n, pos, chunk, chunk_no, d, bw)
