"""``forest.synthesize``: network -> certificate -> tree packing -> pipelined, verified Algorithm.

Pipeline pieces (rule): a chunk moves whole from GPU to GPU (store and forward), so a tree of
depth ``D`` finishes about ``(D − 1)`` piece-times after its bandwidth term; ``P`` pieces per
shard make that a ``D/P`` share. ``P`` is a multiple of ``R`` (the trees per root, so every tree
keeps its exact rate): ``PIECES_PER_HOP · D`` rounded *up* to a multiple of ``R`` (rounding down
left a 12-hop packing with ``R`` = 35 at 14 pieces per hop, 1.11x the bound), then capped by
``shard / MIN_CHUNK`` and ``MESSAGE_BUDGET / (N(N−1) · phases)`` (again a multiple of ``R``),
and at least ``R``. Where latency binds (small sizes) more pieces only add messages, so there
``P`` = ``R``.

Export fit (rule): where both are simulated (the tuning below), the largest multiple of ``R``
whose messages fit an MSCCL export (:data:`EXPORT_STEPS` nodes per rank) is kept instead,
unless the count above is more than :data:`EXPORT_SLACK` faster (a 12-hop packing is; a 4x4
torus all-reduce is not, and stays exportable).

Pacing (rule): the first candidate (window = a hop's latency in serializations on the fastest
link + 2, no clock) is used as is on large problems; on small ones (at most
:data:`TUNE_MESSAGES` messages, a network the aware model takes) a few (window, clock) choices,
the window counted on the slowest link among them, are built and simulated with
``hub.simulate`` (aware) and the fastest is returned (``forest.tuned`` says which happened).

Reduce-scatter: the all-gather trees reversed where that loads no link more (a router whose path
``v -> u`` is not ``u -> v`` backwards loads other links), else a packing of its own; for
all-reduce its ``R`` is kept a multiple of the all-gather's, so one chunking serves both phases.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from hub.chakra import Algorithm, Collective
from hub.errors import AlgorithmError, SynthesisInputError
from hub.sim import certify, network_facts, parse_size
from hub.topology import LinkGraph, Topology, bytes_per_ns, load_topology

from ._build import build_forest_algorithm
from ._logical import logical_graph
from ._packing import pack_trees, reversed_forest
from ._params import SynthesizeParams

__all__ = ["MESSAGE_BUDGET", "MIN_CHUNK", "PIECES_PER_HOP", "synthesize"]

_COLLECTIVES = (Collective.ALLGATHER, Collective.REDUCESCATTER, Collective.ALLREDUCE)
PIECES_PER_HOP = 32
MIN_CHUNK = 4096
MESSAGE_BUDGET = 400_000
WINDOW_EXTRA = 2
#: MSCCL runtimes parse at most this many XML nodes per rank; a rank sends and receives about
#: 2(N−1) messages per piece and phase
EXPORT_STEPS = 4096
#: the export-fitting piece count is kept unless the one the depth asks for is this much faster
EXPORT_SLACK = 0.01
#: candidates are simulated (and the fastest kept) while one algorithm has at most this many messages
TUNE_MESSAGES = 150_000


def _pieces(n: int, size: int, rounds: int, depth: int, phases: int, latency_bound: bool, want: int | None) -> int:
    """Chunks per shard ``C`` (a multiple of ``rounds``); see the module docstring."""
    if want is not None:
        return rounds * max(1, math.ceil(want / rounds))
    if latency_bound:
        return rounds
    target = rounds * -(-PIECES_PER_HOP * max(depth, 1) // rounds)  # rounded up to a multiple of R
    by_size = max(1, (size // n) // MIN_CHUNK)
    by_msgs = max(1, MESSAGE_BUDGET // max(1, n * (n - 1) * phases))
    c = min(target, by_size, by_msgs)
    return rounds * max(1, c // rounds)


def _window(graph: LinkGraph, chunk: float, slowest: bool = False) -> int:
    """Sends in flight per (rank, peer): enough to cover a hop's latency with serializations on
    the fastest link (``slowest``: on the slowest, fewer, which keeps the slow links' queues short
    on a network of mixed bandwidths)."""
    pick = min if slowest else max
    ser = chunk / pick(bytes_per_ns(ln.bandwidth) for ln in graph.links)
    lat = max(ln.latency for ln in graph.links)
    return int(math.ceil(lat / max(ser, 1e-9))) + WINDOW_EXTRA


def synthesize(params: SynthesizeParams, ctx: Any = None) -> Algorithm:
    """Factory of ``forest.synthesize``: the verified, bound algorithm with its certificate in metadata."""
    t0 = time.perf_counter()
    coll = Collective.parse(params.collective)
    if coll not in _COLLECTIVES:
        raise AlgorithmError(
            f"forest.synthesize does not implement {coll.value}", hint="allgather, reducescatter or allreduce"
        )
    size = parse_size(params.size)
    if size <= 0:
        raise SynthesisInputError(f"forest.synthesize: size must be > 0 bytes, got {size}")
    for what, v in (("pieces", params.pieces), ("rounds", params.rounds)):
        if v is not None and not 1 <= v <= 4096:
            raise SynthesisInputError(f"forest.synthesize: {what} must be in 1..4096, got {v}")
    topo = load_topology(params.network)
    graph = topo.to_link_graph()
    n = graph.npus
    if n < 2:
        raise SynthesisInputError(f"forest.synthesize: {params.network!r} has {n} NPU; a collective needs >= 2")
    facts = network_facts(topo)
    if facts.ag is None or facts.rs is None:
        raise SynthesisInputError(
            f"forest.synthesize: network {params.network!r} is not connected", hint="every GPU must reach every other"
        )
    ag = rs = None
    try:
        symmetric = facts.ag.x == facts.rs.x
        if coll in (Collective.ALLGATHER, Collective.ALLREDUCE) or symmetric:
            lg = logical_graph(graph)
            ag = (lg, pack_trees(lg, facts.ag.x, params.rounds))
        if coll in (Collective.REDUCESCATTER, Collective.ALLREDUCE):
            lg = logical_graph(graph, reverse=True)
            # a network whose links all have equal twins: the all-gather trees, reversed, are as
            # good (same x*), and all-reduce keeps one chunking for both phases
            mirrored = reversed_forest(ag, lg, facts.rs.x) if ag is not None and symmetric else None
            # all-reduce: one chunking serves both phases, so R_rs is a multiple of R_ag (an
            # independent R_rs makes the chunk count their lcm: 39 and 47 give 1,833 chunks)
            keep = ag[1].rounds if ag is not None and coll == Collective.ALLREDUCE and not params.rounds else 1
            rs = (lg, mirrored or pack_trees(lg, facts.rs.x, params.rounds, multiple_of=keep))
        if coll == Collective.REDUCESCATTER:
            ag = None
    except ValueError as exc:  # a GPU the trees cannot reach under the network's routing
        raise SynthesisInputError(
            f"forest.synthesize: {exc}", hint="the network's routing must connect all GPUs"
        ) from None
    forests = [f for f in (rs, ag) if f is not None]
    rounds = math.lcm(*(f[1].rounds for f in forests))
    depth = max(f[1].depth(f[0]) for f in forests)
    cert = certify(topo, coll, size)
    latency_bound = cert is not None and cert.term == "latency"
    c_total = _pieces(n, size, rounds, depth, len(forests), latency_bound, params.pieces)
    name = params.name or f"forest-{coll.value}-{topo.to_string().split('@')[0].replace(':', '')}"
    ratios = [f[1].load_ratio for f in forests]
    load_ratio = None if any(r is None for r in ratios) else max(r for r in ratios if r is not None)
    extra: list[tuple[str, str | int | float | bool]] = [
        ("forest.network", topo.to_string()),
        ("forest.method", forests[0][1].method),
        ("forest.trees", sum(len(f[1].trees) for f in forests)),
        ("forest.rounds", rounds),
        ("forest.depth", depth),
        ("forest.x_star", str(facts.ag.x if ag else facts.rs.x)),
        ("forest.logical_edges", sum(f[0].edges for f in forests)),
    ]
    if load_ratio is not None:
        extra.append(("forest.load_over_cut", round(load_ratio, 6)))
    if cert is not None:
        extra += [("bound_ns", round(cert.bound_ns, 3)), ("bound_term", cert.term)]
    fixed = params.window is not None or params.clock is not None or not params.tune

    def tuned(c: int) -> tuple[Algorithm, str, int | None]:
        w0 = _window(graph, size / (n * c))
        w_slow = _window(graph, size / (n * c), slowest=True)
        candidates = [(w0 if params.window is None else params.window, params.clock or 0)]
        if not fixed:
            candidates += [(0, 0), (1, 0), (2, 0), (w_slow, 0), (2 * w0, 0), (0, 4), (0, 8), (w0, 8)]
        if coll == Collective.ALLREDUCE or coll == Collective.REDUCESCATTER:
            candidates = [(w, 0) for w, _ in candidates]  # the all-gather phase is paced by the reductions
        candidates = list(dict.fromkeys(candidates))

        def build(window: int, clock: int) -> Algorithm:
            more = extra + [("forest.chunks_per_shard", c), ("forest.window", window), ("forest.clock", clock)]
            return build_forest_algorithm(
                coll,
                ag,
                rs,
                c,
                reduction_comp=params.reduction_comp,
                window=window,
                clock=clock,
                size=size,
                name=name,
                extra=more,
            )

        return _tune(build, candidates, topo, n * (n - 1) * c * len(forests), fixed)

    alg, tried, t_many = tuned(c_total)
    c_fit = rounds * (EXPORT_STEPS // (2 * (n - 1) * len(forests)) // rounds)
    if t_many is not None and params.pieces is None and 0 < c_fit < c_total:
        # the pieces the depth asks for overflow an MSCCL export: fewer, unless that costs > 1 %
        fit, tried_fit, t_fit = tuned(c_fit)
        if t_fit is not None and t_fit * (1 - EXPORT_SLACK) <= t_many:
            alg, tried = fit, f"{tried_fit}; {c_fit} pieces (fit an MSCCL export) kept over {c_total}"
        else:
            tried += f"; {c_total} pieces kept over {c_fit} (fit an MSCCL export, but slower by more than 1 %)"
    extra_tune = ("forest.tuned", tried)
    build_s = time.perf_counter() - t0
    if params.verify:
        from hub.verify import check

        check(alg)
    from dataclasses import replace

    timing = (
        ("synthesis_s", round(build_s, 4)),
        ("forest.packing_s", round(sum(f[1].seconds for f in forests), 4)),
        ("forest.verified", bool(params.verify)),
        extra_tune,
    )
    alg = Algorithm(replace(alg.meta, extra=alg.meta.extra + timing), alg.graphs)
    return alg


def _tune(
    build: Callable[[int, int], Algorithm],
    candidates: list[tuple[int, int]],
    topo: Topology,
    messages: int,
    fixed: bool,
) -> tuple[Algorithm, str, int | None]:
    """The candidate (window, clock) whose algorithm hub.simulate (aware) finds fastest, and its
    time; only the first (time None) when fixed, or when one simulation would cost more than
    :data:`TUNE_MESSAGES` messages."""
    if fixed or len(candidates) == 1 or messages > TUNE_MESSAGES or not _aware_ok(topo):
        return build(*candidates[0]), "no", None
    from hub.sim import simulate

    best: tuple[int, Algorithm] | None = None
    for w, c in candidates:
        alg = build(w, c)
        t = simulate(alg, topo, mode="aware").time_ns
        if best is None or t < best[0]:
            best = (t, alg)
    assert best is not None
    return best[1], f"best of {len(candidates)} (window, clock) by hub.simulate aware", best[0]


def _aware_ok(topo: Topology) -> bool:
    from hub.topology import DimensionalTopology

    return not (isinstance(topo, DimensionalTopology) and len(topo.dims) > 1)
