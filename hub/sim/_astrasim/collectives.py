"""Which of a system.json's native collectives hub.simulate reproduces, and the refusals.

Reproduced exactly (ASTRA-sim 518bd51; ``docs/simulator.md`` has the table): per network
dimension, one entry of the ``*-implementation`` list: ``ring`` for all four collectives,
``direct`` and ``directN`` (any window N >= 1) for all four, ``halvingDoubling`` for all-reduce,
all-gather and reduce-scatter, ``doubleBinaryTree`` for all four (ASTRA-sim runs its all-reduce
tree for each); on a 1-D network ``oneRing``, ``oneDirect[N]`` and ``oneHalvingDoubling`` are the
same algorithms. With any ``preferred-dataset-splits`` (>= 1), ``endpoint-delay`` (>= 1, as 0
aborts ASTRA-sim), ``local-mem-bw``, ``active-chunks-per-dimension`` (>= 1),
``scheduling-policy``, ``collective-optimization`` ``baseline`` or ``localBWAware``, in process
groups, next to compute and next to workload-level SEND/RECV. The streams, phases and queues are
``hub.sim._astrasim.streams``; each phase's body is its algorithm's module (``ring``,
``direct``, ``halving_doubling``, ``double_binary_tree``; shared rules in ``ops``). The
rank's finish is its COMM_COLL's end, not the arrival of its last send
(``hub.sim._views.breakdown.workload_finish``).

Refused, naming the key, with the custom path as the way out (:func:`native_collectives`):
a ``directN`` window of 0 (ASTRA-sim sends nothing), halving-doubling all-to-all (ASTRA-sim exits) or on a
non-power-of-two number of NPUs, a double binary tree on a non-power-of-two number (ASTRA-sim
crashes) or in a process group smaller than the network (ASTRA-sim casts its ring to a tree), the ``one*`` variants on a
multi-dimensional network (one ring over every NPU: not reproduced yet), an implementation list
whose length is not the number of dimensions, a topology that is not a dimensional network,
``model-shared-bus``, a node's ``involved_dim`` that is shorter than the dimensions or involves
none (ASTRA-sim reads past it / never finishes; a full one is followed), an all-gather whose
chunks would be 0 bytes, and a native collective next to collectives served by a custom
implementation (a mix ASTRA-sim never finishes). Streams that never finish (as ASTRA-sim's do
not either) are one error (:func:`stuck_native`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from ...chakra import Collective, NodeType, Workload
from ...errors import SimulationError
from ...workload import observed_members

__all__ = ["NativeRing", "native_collectives", "stuck_native"]

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
_MAX_DIMS = 12  # one engine resource class per dimension queue (classes 4-15)
_QUEUE_CAP = range(1, 2**31)  # a queue's slots: the engine's int32 counters


@dataclass(frozen=True)
class NativeRing:
    """The system.json settings a native collective depends on: its algorithm per dimension
    (``ring``, ``direct``, ``halvingDoubling`` or ``doubleBinaryTree``), and the network's NPUs
    per dimension (``hub.sim._astrasim.streams``)."""

    splits: int
    endpoint_delay: int
    local_mem_bw: float  # GB/s (decimal)
    impls: tuple[str, ...] = ("ring",)
    active_chunks: int = 1
    local_bw_aware: bool = False
    dims: tuple[int, ...] = ()
    windows: tuple[int | None, ...] = ()  # per dimension: directN's N (None: n-1)


def _refuse(key: str, why: str, coll: Collective = Collective.ALLREDUCE) -> SimulationError:
    stem = _STEMS.get(coll, "all-reduce")
    sep = "" if why.startswith(":") else " "
    return SimulationError(
        f"system.json key {key}{sep}{why}; hub.simulate reproduces ASTRA-sim's native ring, direct, "
        "halvingDoubling and doubleBinaryTree as docs/simulator.md lists (no shared bus)",
        hint=f'use the custom path: "{stem}-implementation-custom": ["<ET prefix>"] (e.g. written by collhub '
        f"produce hub.ring), or algorithm_for={{'{coll.value}': 'ring'}}",
    )


def _algorithm(key: str, impl: Any, name: Any, coll: Collective, n: int, dims: int) -> str:
    """The algorithm the list entry ``name`` (of ``impl``) names, if hub.simulate reproduces it for
    ``coll`` on ``n`` NPUs; else the refusal, saying why."""
    win = _WINDOW.fullmatch(name) if isinstance(name, str) else None
    algo = _NAMES.get(win.group(1) if win else name) if isinstance(name, str) else None
    if algo is None:
        raise _refuse(key, f": {impl!r} is not ASTRA-sim's native implementation list (a name it knows)", coll)
    if dims > 1 and name.startswith("one"):
        raise _refuse(key, f"asks for ASTRA-sim's native {name!r} (one ring over every NPU) on {dims} dimensions", coll)
    pow2 = n & (n - 1) == 0
    if algo == "direct" and _window(name) == 0:
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
    return algo


def _window(name: Any) -> int | None:
    """A ``direct``/``oneDirect`` entry's window N (None: ``n-1``; stoi of at most 5 digits, as
    CollectiveImplLookup)."""
    win = _WINDOW.fullmatch(name) if isinstance(name, str) else None
    return int(win.group(2)[:5]) if win else None


def _implementations(
    key: str, impl: Any, coll: Collective, sizes: tuple[int, ...], groups: list[int]
) -> tuple[str, ...]:
    """The algorithm per dimension, each checked on the NPUs it runs over (the dimension's, and
    every process group's smaller than the network); else the refusal."""
    dims = len(sizes)
    if not isinstance(impl, list) or len(impl) != dims:
        n = len(impl) if isinstance(impl, list) else "no"
        # (ASTRA-sim runs a shorter list but builds its rings from it alone: meaningless numbers)
        raise _refuse(key, f": {impl!r} has {n} entries, not one per network dimension ({dims})", coll)
    algos = tuple(_algorithm(key, impl, name, coll, m, dims) for name, m in zip(impl, sizes, strict=True))
    for g in groups:  # (CommunicatorGroup: the only entry, or ring for a longer list)
        name = impl[0] if dims == 1 else "ring"
        if _algorithm(key, impl, name, coll, g, 1) == "doubleBinaryTree":
            raise _refuse(key, f"asks for ASTRA-sim's native {impl!r} in a process group of {g} NPUs", coll)
    return algos


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
    from .system import has_custom

    used = {n.collective for nodes in wl.ranks for n in nodes if n.type == NodeType.COLL}
    out: dict[Collective, NativeRing] = {}
    for coll, stem in _STEMS.items():
        key = f"{stem}-implementation"
        if coll not in used or coll in skip or has_custom(cfg, stem) or not cfg.get(key):
            continue
        if not dims:
            raise _refuse(key, "asks for a native collective on a topology that is not a dimensional network", coll)
        sizes = dim_sizes or (wl.rank_count,) * dims
        npus = math.prod(sizes)
        if wl.rank_count != npus:
            # (ASTRA-sim reads one workload file per NPU; a smaller workload is not its input)
            raise _refuse(
                key, f"asks for a native collective on {npus} NPUs in a workload of {wl.rank_count} ranks", coll
            )
        if dims > _MAX_DIMS:
            raise _refuse(key, f"asks for a native collective on {dims} dimensions (at most {_MAX_DIMS})", coll)
        _check_settings(cfg)
        nodes = [(r, n) for r, nodes in enumerate(wl.ranks) for n in nodes if n.collective is coll]
        groups = sorted({len(observed_members(wl, n.pg_name)) for _, n in nodes if n.pg_name.strip("0")} - {npus})
        algos = _implementations(key, cfg[key], coll, sizes, groups)
        _check_involved(key, coll, nodes, dims)
        settings = replace(_settings(cfg, dim_sizes or (), algos), windows=tuple(map(_window, cfg[key])))
        if coll is Collective.ALLGATHER:
            small = min((n.comm_size for _, n in nodes if n.comm_size is not None), default=settings.splits)
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


def _check_settings(cfg: Mapping[str, Any]) -> None:
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


def _check_involved(key: str, coll: Collective, nodes: list[tuple[int, Any]], dims: int) -> None:
    short = next(
        (
            (r, n.id, n.attrs["involved_dim"])
            for r, n in nodes
            if "involved_dim" in n.attrs
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
            coll,
        )


def _is_count(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v in _QUEUE_CAP


def _settings(cfg: Mapping[str, Any], dims: tuple[int, ...], algos: tuple[str, ...]) -> NativeRing:
    splits, delay, bw = cfg.get("preferred-dataset-splits"), cfg.get("endpoint-delay", 10), cfg.get("local-mem-bw")
    if not isinstance(splits, int) or isinstance(splits, bool) or splits < 1:
        raise _refuse("preferred-dataset-splits", f": must be an integer >= 1, got {splits!r}")
    if not isinstance(delay, int) or isinstance(delay, bool) or delay < 1:
        raise _refuse("endpoint-delay", f": must be an integer >= 1 (0 aborts ASTRA-sim), got {delay!r}")
    if isinstance(bw, bool) or not isinstance(bw, (int, float)) or not bw > 0:
        raise _refuse("local-mem-bw", f": must be a number > 0 (GB/s), got {bw!r}")
    active = cfg.get("active-chunks-per-dimension", 1)
    bw_aware = cfg.get("collective-optimization", "baseline") == "localBWAware"
    return NativeRing(splits, delay, float(bw), algos, active, bw_aware, dims)


def stuck_native(exc: SimulationError) -> SimulationError:
    """The error for a workload with native collectives that never finishes: their streams wait for
    each other across the dimension queues (with ``localBWAware`` on 3 or more dimensions a stream
    visits a middle dimension's queue twice, and when the ranks start at different times their
    queues serve different streams). ASTRA-sim 518bd51 never finishes such a workload either
    ("Hardware Resource ... has unreleased nodes"; tests/sim/astrasim/test_streams.py,
    benchmarks/bench_native.py)."""
    return SimulationError(
        f"the workload never finishes: {exc.message}; ASTRA-sim's native streams deadlock here too "
        "(its scheduler runs the same queues), so it reports no finish time either",
        hint='use collective-optimization baseline, or the custom path ("*-implementation-custom")',
    )
