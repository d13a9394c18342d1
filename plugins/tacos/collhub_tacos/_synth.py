"""``tacos.synthesize``: topology -> network -> greedy schedules -> verified Algorithm."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from hub.chakra import Algorithm, Collective
from hub.errors import AlgorithmError, SynthesisInputError
from hub.topology import Topology

from ._bounds import ingress_bound
from ._build import Phase, build_algorithm, forward_phase, reversed_phase
from ._fallback import with_fallback
from ._greedy import Schedule, greedy_allgather, has_mixed_speeds
from ._linkfile import load_any_topology
from ._network import Network, network_of
from ._params import SynthesizeParams
from ._progress import progress_bar

__all__ = ["Synthesis", "synthesize", "synthesize_schedule"]

_COLLECTIVES = (Collective.ALLGATHER, Collective.REDUCESCATTER, Collective.ALLREDUCE)
#: TACOS's setting when no size is given: 1 MiB contributed per rank.
DEFAULT_PER_RANK = 1 << 20
_COST = {
    "tacos": "link busy alpha + chunk/beta per chunk, one chunk at a time (TACOS TEN)",
    "pipelined": "link busy chunk/beta per chunk, lands alpha later (ASTRA-sim store-and-forward link)",
}


@dataclass(frozen=True)
class Synthesis:
    """What the greedy found, before it becomes an Algorithm."""

    collective: Collective
    network: Network
    chunks: int
    chunk_bytes: float
    phases: list[Phase]
    makespan_us: float
    bound_us: float
    seed: int
    seconds: float
    events: int
    replaced: int
    cancelled: int


def _check(params: SynthesizeParams) -> tuple[Collective, Topology]:
    coll = Collective.parse(params.collective)
    if coll not in _COLLECTIVES:
        raise AlgorithmError(
            f"tacos.synthesize does not implement {coll.value}", hint="allgather, reducescatter or allreduce"
        )
    if params.chunks <= 0:
        raise SynthesisInputError(
            f"tacos.synthesize: chunks must be >= 1 per rank, got {params.chunks}",
            hint="chunks is how many pieces each rank's contribution is cut into",
        )
    if params.seeds <= 0:
        raise SynthesisInputError(f"tacos.synthesize: seeds must be >= 1, got {params.seeds}")
    return coll, load_any_topology(params.network)


def _best(
    net: Network,
    k: int,
    busy: np.ndarray,
    delay: np.ndarray,
    seed: int,
    seeds: int,
    phase: Callable[[str], Callable[[int, int], None]] | None,
    label: str,
    bound: float,
    policy: str,
) -> tuple[Schedule, int]:
    """Best of ``seeds`` tries; stops early once a try meets the lower bound (nothing can beat it)."""
    best: Schedule | None = None
    best_seed = seed
    # on mixed-speed networks every seed is tried with and without the slow-link rule
    rules = (True, False) if has_mixed_speeds(net, delay) else (True,)
    for s in range(seed, seed + seeds):
        for rule in rules:
            upd = phase(f"{label} seed {s}") if phase else None
            sch = greedy_allgather(net, k, busy, delay, np.random.default_rng(s), upd, policy, rule)
            if best is None or sch.makespan < best.makespan - 1e-9:
                best, best_seed = sch, s
            if best.makespan <= bound * (1 + 1e-12):
                break
        if best is not None and best.makespan <= bound * (1 + 1e-12):
            break
    assert best is not None
    return best, best_seed


def synthesize_schedule(
    params: SynthesizeParams,
    phase: Callable[[str], Callable[[int, int], None]] | None = None,
    network: Network | None = None,
) -> Synthesis:
    """Run the greedy (best of ``seeds`` tries per phase) and compute the bound; no Algorithm yet.

    ``phase``: a progress-bar factory (see :func:`progress_bar`); default: make one here."""
    t0 = time.perf_counter()
    coll, topo = _check(params)
    net = network if network is not None else network_of(topo)
    n, k = net.npus, params.chunks
    if params.ranks is not None and params.ranks != n:
        raise SynthesisInputError(
            f"tacos.synthesize: ranks={params.ranks} but topology {net.label!r} has {n} NPUs",
            hint=f"drop ranks or pass ranks={n}",
        )
    from hub.sim import parse_size

    size = parse_size(params.size) if params.size is not None else n * DEFAULT_PER_RANK
    if size <= 0:
        raise SynthesisInputError(f"tacos.synthesize: size must be > 0 bytes, got {size}")
    chunk = size / (n * k)
    busy, delay = net.link_times_us(chunk, params.model)
    C = n * k
    phases: list[Phase] = []
    with progress_bar(f"tacos {coll.value} {net.label}", params.progress, _big(net, k)) as own:
        phase = phase or own
        if coll in (Collective.REDUCESCATTER, Collective.ALLREDUCE):
            rev = net.reversed()
            bound = ingress_bound(rev, C - k, busy, delay)
            rs, seed = _best(
                rev, k, busy, delay, params.seed, params.seeds, phase, "reduce-scatter", bound, params.policy
            )
            phases.append(reversed_phase(net, rs))
            events, replaced, cancelled = rs.events, rs.replaced, rs.cancelled
        if coll in (Collective.ALLGATHER, Collective.ALLREDUCE):
            ag_bound = ingress_bound(net, C - k, busy, delay)
            ag, seed = _best(
                net, k, busy, delay, params.seed, params.seeds, phase, "all-gather", ag_bound, params.policy
            )
            offset = phases[0].makespan if phases else 0.0
            phases.append(forward_phase(net, ag, offset))
            if coll == Collective.ALLGATHER:
                bound = ag_bound
                events, replaced, cancelled = ag.events, ag.replaced, ag.cancelled
            else:  # every rank receives 2(C-k) chunk volumes (Patarasuk & Yuan)
                bound = ingress_bound(net, 2 * (C - k), busy, delay)
                events += ag.events
                replaced += ag.replaced
                cancelled += ag.cancelled
    makespan = sum(p.makespan for p in phases)
    return Synthesis(
        coll, net, k, chunk, phases, makespan, bound, seed, time.perf_counter() - t0, events, replaced, cancelled
    )


def _big(net: Network, k: int) -> bool:
    """Worth a progress bar: about a second or more of matching."""
    return net.links * net.npus * k > 4_000_000


def synthesize(params: SynthesizeParams, ctx: Any = None) -> Algorithm:
    """Factory of ``tacos.synthesize``: the verified algorithm with its provenance in metadata."""
    net0 = network_of(_check(params)[1])
    with progress_bar(
        f"tacos {params.collective} {net0.label}", params.progress, _big(net0, max(params.chunks, 1))
    ) as phase:
        return _synthesize(params, phase, net0)


def _synthesize(
    params: SynthesizeParams, phase: Callable[[str], Callable[[int, int], None]] | None, net0: Network
) -> Algorithm:
    syn = synthesize_schedule(params, phase, net0)
    step = phase("building the algorithm") if phase else None
    if step:
        step(0, 1)
    t0 = time.perf_counter()
    net = syn.network
    name = params.name or f"tacos-{syn.collective.value}-{net.label.split('@')[0].replace(':', '')}"
    ratio = syn.makespan_us / syn.bound_us if syn.bound_us > 0 else 1.0
    extra_base: list[tuple[str, str | int | float | bool]] = [
        ("tacos.topology", net.label),
        ("tacos.links", net.links),
        ("tacos.unwound_links", net.unwound),
        ("tacos.chunks_per_rank", syn.chunks),
        ("tacos.chunk_bytes", float(syn.chunk_bytes)),
        ("tacos.model", params.model),
        ("tacos.cost_model", _COST[params.model]),
        ("tacos.seed", syn.seed),
        ("tacos.seeds", params.seeds),
        ("tacos.policy", params.policy),
        ("model_makespan_us", round(syn.makespan_us, 6)),
        ("lower_bound_us", round(syn.bound_us, 6)),
        ("bound_ratio", round(ratio, 6)),
        ("tacos.events", syn.events),
        ("tacos.replaced", syn.replaced),
        ("tacos.cancelled", syn.cancelled),
    ]
    alg = build_algorithm(
        syn.collective,
        net.npus,
        syn.chunks,
        syn.phases,
        name=name,
        reduction_comp=params.reduction_comp,
        extra=tuple(extra_base),
    )
    build_s = time.perf_counter() - t0
    if step:
        step(1, 1)
    verify_s = 0.0
    if params.verify:
        from hub.verify import check

        step = phase("verifying (hub.verify, semantics)") if phase else None
        if step:
            step(0, 1)
        t1 = time.perf_counter()
        check(alg)
        if step:
            step(1, 1)
        verify_s = time.perf_counter() - t1
    timing = (
        ("synthesis_s", round(syn.seconds + build_s, 4)),
        ("tacos.greedy_s", round(syn.seconds, 4)),
        ("tacos.verified", bool(params.verify)),
        ("tacos.verify_s", round(verify_s, 4)),
    )
    from dataclasses import replace

    alg = Algorithm(replace(alg.meta, extra=alg.meta.extra + timing), alg.graphs)
    from hub.sim import parse_size

    if params.size is not None:
        alg = alg.bind(parse_size(params.size))
    if params.fallback == "direct" and net.unwound > 0:
        size = parse_size(params.size) if params.size is not None else net.npus * DEFAULT_PER_RANK
        step = phase("comparing with hub.direct (hub.simulate, aware)") if phase else None
        if step:
            step(0, 1)
        alg = with_fallback(alg, load_any_topology(params.network), net.label, size, params.reduction_comp)
        if step:
            step(1, 1)
    return alg
