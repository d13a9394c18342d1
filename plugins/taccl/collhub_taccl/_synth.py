"""``taccl.synthesize``: the three TACCL stages around a greedy warm start, then build and verify.

Per base problem (an all-gather or all-to-all; a reduce-scatter is an all-gather on the
transposed network, reversed):

0. greedy warm start inside the shortest-path DAGs (always feasible), and for all-gather an
   unrestricted greedy (may use longer paths);
1. routing MILP (HiGHS) from that incumbent, under the time limit;
2. ordering heuristic on the MILP routes, ``restarts`` times with seeded perturbations;
3. exact timing of each ordering (real serialization on every link and port).

The fastest of the stage-3 schedule and the greedy schedules is returned (its origin is in the
metadata). Everything is seeded; HiGHS runs single-threaded, so a solve that finishes within its
time limit is reproducible (one stopped by the limit may not be).
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Any

from hub.chakra import Algorithm, AlgorithmMeta, Collective
from hub.errors import AlgorithmError, HubError, ImportFormatError, TopologyFormatError

from ._bounds import lower_bound
from ._build import build
from ._params import SynthesizeParams
from ._problem import Problem, build_problem
from ._progress import Progress
from ._routing import solve_routing
from ._schedule import Prepared, Schedule, greedy, list_schedule, timed
from ._taccl_files import Network, load_taccl

__all__ = ["Solved", "load_network", "produce_synthesize", "synthesize"]

#: largest number of (chunk, DAG edge) decisions handed to the joint CP-SAT re-routing
_JOINT_LIMIT = 4000


@dataclass
class Solved:
    """One base problem solved: the schedule and what each stage did."""

    schedule: Schedule
    stats: dict[str, Any] = field(default_factory=dict)


def load_network(params: SynthesizeParams) -> Network:
    """The network of ``params``: a collhub topology, or TACCL's profile + sketch."""
    if params.network is not None:
        from hub.topology import load_topology

        topo = load_topology(params.network)
        graph = topo.to_link_graph()
        try:
            label = topo.to_string()
        except HubError:
            label = graph.describe()
        net = Network(graph, label)
        net.network_string = label if params.network and not params.network.endswith((".yml", ".yaml")) else None
        return net
    from hub.sim import parse_size

    chunk = parse_size(params.profile_chunk) if params.profile_chunk is not None else None
    assert params.topology is not None and params.sketch is not None
    return load_taccl(params.topology, params.sketch, kind=params.topology_kind, profile_chunk=chunk)


def _where(net: Network) -> str:
    return f"{net.path}: " if net.path else f"network {net.label!r}: "


def _unreachable(net: Network, problem: Problem, msg: str, collective: str) -> HubError:
    if net.topology_path and not _connected(problem):
        return ImportFormatError(
            f"{msg}: the topology is disconnected",
            path=net.topology_path,
            hint="every GPU needs links to and from the others (links[dst][src] > 0)",
        )
    if net.path:
        return ImportFormatError(
            f"{msg}: the sketch cannot serve {collective}",
            path=net.path,
            hint="check internode_conn / gpus_to_sender_rev_map: every chunk needs a route",
        )
    return TopologyFormatError(
        f"{_where(net)}{msg} (the topology is disconnected for {collective})",
        hint="every rank must reach every other rank over the links",
    )


def _connected(problem: Problem) -> bool:
    """Whether every rank reaches every other one over the links alone (no sketch rules)."""
    return all(min(problem.hops_from(r, lambda ei: True)) >= 0 for r in range(problem.ranks))


def _check_symmetries(net: Network, problem: Problem) -> None:
    for key, perm in zip(net.symmetry_keys or [""] * len(problem.symmetries), problem.symmetries, strict=False):
        for e in problem.edges:
            j = problem.edge_of.get((perm[e.src], perm[e.dst]))
            img = problem.edges[j] if j is not None else None
            if img is None or (img.arrive, img.hold, img.remote, len(img.resources)) != (
                e.arrive,
                e.hold,
                e.remote,
                len(e.resources),
            ):
                msg = (
                    f"{key}: not a symmetry of the topology: link {e.src}->{e.dst} maps to "
                    f"{perm[e.src]}->{perm[e.dst]}, which {'differs' if img else 'does not exist'}"
                )
                raise ImportFormatError(
                    msg, path=net.path, hint="use offsets that map the topology onto itself, or none ([])"
                )


@dataclass
class _Stages:
    """One base problem's solve in progress: what every stage reads, the clock and the stats."""

    problem: Problem
    dags: list[Any]
    params: SynthesizeParams
    progress: Progress
    what: str
    budget: float
    t0: float
    stats: dict[str, Any]

    def left(self) -> float:
        """Seconds of the budget still unspent."""
        return self.budget - (time.perf_counter() - self.t0)


def _solve(
    problem: Problem,
    net: Network,
    budget: float,
    params: SynthesizeParams,
    progress: Progress,
    what: str,
    group: list[tuple[int, ...]] | None = None,
) -> Solved:
    t0 = time.perf_counter()
    lb, _ = lower_bound(problem, net.node_size)
    try:
        dags = [problem.dag(ch) for ch in problem.chunks]
    except ValueError as exc:
        raise _unreachable(net, problem, str(exc), params.collective) from None
    candidates = _greedy_candidates(problem, dags, params.seed)
    t_greedy = time.perf_counter() - t0
    progress(f"{what}: greedy", float(min(c.makespan for c in candidates)), None)
    switch_terms = []
    for strategy, pairs in net.switch_terms:
        eis = [problem.edge_of[pr] for pr in pairs if pr in problem.edge_of]
        switch_terms.append((strategy, eis))
    left = max(budget - (time.perf_counter() - t0), 0.05)
    stats: dict[str, Any] = {"greedy_s": round(t_greedy, 4), "greedy_makespan": min(c.makespan for c in candidates)}
    run = _Stages(problem, dags, params, progress, what, budget, t0, stats)
    from . import _cpsat

    use_cpsat = params.stage3 in ("cpsat", "cpsat-routes") and _cpsat.available()
    try:
        routing = solve_routing(
            problem,
            dags,
            candidates[0],
            time_limit=(0.75 if use_cpsat else 0.9) * left,
            seed=params.seed,
            switch_terms=switch_terms,
            progress=progress,
        )
    except RuntimeError as exc:  # no incumbent within the limit, or the solver failed: keep the greedy
        stats.update(milp_status=str(exc), time_limited="time limit" in str(exc).lower())
        print(
            f"note: taccl.synthesize: stage 1 returned no routing ({exc}); keeping the greedy schedule", file=sys.stderr
        )
        routing = None
    if routing is not None:
        stats.update(_routing_stats(routing))
        t2 = time.perf_counter()
        floor = max(lb, routing.bound if routing.status == "Optimal" else 0.0)
        best, prep = _order(run, routing.routes, floor)
        stats["stage2_makespan"] = best.makespan
        stats["stage3"] = "cp-sat" if use_cpsat else "fixed-order"
        if use_cpsat:
            best = _stage3(run, best, prep, floor, group)
        stats["stage23_s"] = round(time.perf_counter() - t2, 4)
        stats["stage3_makespan"] = best.makespan
        candidates.insert(0, best)
    winner = min(candidates, key=lambda s: s.makespan)  # ties keep the MILP schedule (first)
    stats["origin"] = winner.origin
    stats["makespan_ns"] = winner.makespan
    return Solved(winner, stats)


def _greedy_candidates(problem: Problem, dags: list[Any], seed: int) -> list[Schedule]:
    """Stage 0: the greedy inside the shortest-path DAGs (first: the MILP's warm start) and, for
    all-gather, the best unrestricted greedy."""
    candidates = [timed(problem, greedy(problem, dags, seed))]
    if problem.collective == "allgather":
        # the unrestricted greedy may use longer paths (idle links); its tie-breaks are seeded,
        # so a few seeds are a cheap search
        free = [timed(problem, greedy(problem, None, seed + i)) for i in range(2)]
        candidates.append(min(free, key=lambda s: s.makespan))
    return candidates


def _routing_stats(routing: Any) -> dict[str, Any]:
    """What stage 1 (the routing MILP) did, for the metadata."""
    return {
        "solver": routing.solver,
        "milp_status": routing.status,
        "milp_objective": round(routing.objective, 3),
        "milp_bound": round(routing.bound, 3),
        "milp_gap": round(routing.gap, 6),
        "milp_s": round(routing.seconds, 3),
        "milp_binaries": routing.binaries,
        "milp_rows": routing.rows,
        "time_limited": routing.time_limited,
        "warm_start": routing.warm_start,
    }


def _order(run: _Stages, routes: Any, floor: float) -> tuple[Schedule, Prepared]:
    """Stage 2: the ordering heuristic on the MILP's routes, restarted with seeded noise until it
    reaches ``floor`` or the budget is spent."""
    problem, params = run.problem, run.params
    best: Schedule | None = None
    prep = Prepared(problem, routes)
    for i in range(params.restarts):
        run.progress(f"{run.what}: stage 2 ordering {i + 1}/{params.restarts}", best.makespan if best else None, floor)
        s = timed(problem, list_schedule(problem, prep, seed=params.seed + i, noise=0.0 if i == 0 else 0.25))
        if best is None or s.makespan < best.makespan:
            best = s
        if best.makespan <= floor:  # provably optimal for these routes: no restart can do better
            break
        if time.perf_counter() - run.t0 > run.budget:  # out of time (a loaded machine): keep what we have
            run.stats["restarts_cut"] = i + 1
            break
    assert best is not None
    return best, prep


def _stage3(
    run: _Stages, best: Schedule, prep: Prepared, floor: float, group: list[tuple[int, ...]] | None
) -> Schedule:
    """Stage 3 with CP-SAT: the symmetric model (all-gather on a translation group), the exact
    order on fixed routes, then (``cpsat-routes``, small problems) routes and order together."""
    from . import _cpsat

    problem, params, progress, what, stats = run.problem, run.params, run.progress, run.what, run.stats
    left = run.left()
    if group is not None and problem.collective == "allgather" and best.makespan > floor:
        # translation-invariant trees: one rank's chunks decide everything (and fast)
        progress(f"{what}: stage 3 CP-SAT (symmetric)", float(best.makespan), floor)
        # measured: on torus 8x8 the best symmetric schedule of 60 s is found within 2 s
        sym = _cpsat.improve_symmetric(
            problem, [list(d) for d in run.dags], group, best, budget=min(0.5 * left, 10.0), seed=params.seed
        )
        if sym.schedule is not best:
            best, prep = sym.schedule, Prepared(problem, sym.schedule.routes(len(problem.chunks)))
        stats.update(cpsat_symmetric_status=sym.status, cpsat_symmetric_s=round(sym.seconds, 3))
        left = run.left()
    if best.makespan > floor and left > 0.1:
        progress(f"{what}: stage 3 CP-SAT", float(best.makespan), floor)
        cp = _cpsat.improve(problem, prep, best, budget=0.9 * left, seed=params.seed)
        best = cp.schedule
        stats.update(cpsat_status=cp.status, cpsat_bound=cp.bound, cpsat_s=round(cp.seconds, 3))
        left = run.left()
        # the joint model grows with every DAG edge of every chunk: measured useless beyond a
        # few thousand (torus 8x8: 0.15 % in 50 s), so larger problems keep their time
        small = sum(len(d) for d in run.dags) <= _JOINT_LIMIT
        if params.stage3 == "cpsat-routes" and small and best.makespan > floor and left > 0.5:
            # the order is optimal (or the budget spent) for these routes: let the routes move too
            progress(f"{what}: stage 3 CP-SAT routes", float(best.makespan), floor)
            cr = _cpsat.improve_routes(problem, [list(d) for d in run.dags], best, budget=0.9 * left, seed=params.seed)
            best = cr.schedule
            stats.update(cpsat_routes_status=cr.status, cpsat_routes_s=round(cr.seconds, 3))
    return best


def _meta_extra(stats: dict[str, Any], prefix: str) -> list[tuple[str, str | int | float | bool]]:
    out: list[tuple[str, str | int | float | bool]] = []
    for k, v in stats.items():
        if isinstance(v, (str, int, float, bool)):
            out.append((f"{prefix}{k}", v))
    return out


def synthesize(params: SynthesizeParams, *, progress: bool | None = None) -> Algorithm:
    """Synthesize, verify and return the algorithm ``params`` asks for (see the module docstring)."""
    from hub.verify import check

    t0 = time.perf_counter()
    net = load_network(params)
    p = net.graph.npus
    if p < 2:
        raise AlgorithmError(f"{_where(net)}synthesis needs at least 2 ranks, got {p}")
    c, size, chunk_bytes = _sizes(params, net, p)
    coll = params.collective
    problem, group = _base_problem(net, "alltoall" if coll == "alltoall" else "allgather", c, chunk_bytes)
    with Progress(f"taccl {coll} on {p} ranks", enabled=progress) as prog:
        sol = _solve_collective(problem, net, params, prog, group)
    makespan = sum(s.makespan for s in (sol.sched, sol.sched_t) if s is not None)
    stats = sol.stats
    limited = any(v for k, v in stats.items() if k.endswith("time_limited"))
    extra: list[tuple[str, str | int | float | bool]] = [
        ("taccl.network", net.network_string or net.label),
        ("taccl.sketch", net.path or "none"),
        ("taccl.chunk_bytes", chunk_bytes),
        ("taccl.size", size),
        ("taccl.makespan_ns", makespan),
        ("taccl.lower_bound_ns", round(sol.lb, 3)),
        ("taccl.lower_bound", sol.which),
        ("taccl.ratio", round(makespan / sol.lb, 4) if sol.lb else 0.0),
        ("taccl.time_limit_s", params.time_limit),
        ("taccl.time_limited", limited),
        ("taccl.seed", params.seed),
        *_meta_extra(stats, "taccl."),
    ]
    meta = AlgorithmMeta(
        collective=Collective.parse(coll),
        ranks=p,
        in_chunks=c,
        out_chunks=c,
        name=f"taccl-{coll}-{p}",
        producer="taccl.synthesize",
    )
    alg, order = _built(coll, problem, sol, meta, params, net, size)
    extra += order
    extra.append(("taccl.total_s", round(time.perf_counter() - t0, 3)))
    from dataclasses import replace

    alg = Algorithm(replace(alg.meta, extra=tuple(extra)), alg.graphs)
    check(alg)  # every synthesized algorithm is proven correct before it leaves
    if limited:
        gap = next((v for k, v in stats.items() if k.endswith("milp_gap")), None)
        print(
            f"note: taccl.synthesize: the routing MILP stopped at the {params.time_limit:g} s time limit; "
            f"returning the best incumbent (MILP gap {gap if gap is not None else 'unknown'})",
            file=sys.stderr,
        )
    return alg


def _built(
    coll: str, problem: Problem, sol: Any, meta: AlgorithmMeta, params: SynthesizeParams, net: Network, size: int
) -> tuple[Algorithm, list[tuple[str, str | int | float | bool]]]:
    """The algorithm in the requested link order; ``auto`` simulates both orders (aware, at
    ``size``) and keeps the faster, ties to ``queued``.

    Why both: when several SENDs of one link are released by one completion, the simulator (as
    ASTRA-sim) issues them in its hash-set order, not the schedule's, so making a SEND wait for
    its predecessor's data can swap the planned order; without it, a SEND may overtake one the
    schedule put first. Which costs less depends on the schedule: on DGX-1 (8 MiB all-gather)
    queued wins at 3-5 chunks per rank, data at 8-12 (27,517 ns at 12)."""
    kw = {"reduction_comp": params.reduction_comp}
    if params.link_order != "auto":
        q = params.link_order == "queued"
        alg = build(coll, problem, sol.sched, sol.problem_t, sol.sched_t, meta, queued=q, **kw)
        return alg, [("taccl.link_order", params.link_order)]
    from hub.sim import simulate

    times: dict[str, int] = {}
    algs: dict[str, Algorithm] = {}
    for name in ("queued", "data"):
        algs[name] = build(coll, problem, sol.sched, sol.problem_t, sol.sched_t, meta, queued=name == "queued", **kw)
        try:
            times[name] = simulate(algs[name], net.graph, size=size, mode="aware").time_ns
        except HubError:  # a network the aware model refuses: the schedule's own order stands
            return algs["queued"], [("taccl.link_order", "queued")]
    pick = "data" if times["data"] < times["queued"] else "queued"
    facts: list[tuple[str, str | int | float | bool]] = [
        ("taccl.link_order", pick),
        ("taccl.queued_aware_ns", int(times["queued"])),
        ("taccl.data_aware_ns", int(times["data"])),
    ]
    return algs[pick], facts


def _sizes(params: SynthesizeParams, net: Network, p: int) -> tuple[int, int, int]:
    """(chunks per rank, the collective's bytes, bytes per chunk)."""
    from hub.sim import parse_size

    c = params.chunks * net.chunkup
    if params.size is not None:
        size = parse_size(params.size)
    elif net.profile_chunk is not None:
        size = net.profile_chunk * p * c
    else:
        size = 1 << 20
    return c, size, max(-(-size // (p * c)), 1)


def _base_problem(net: Network, base: str, c: int, chunk_bytes: int) -> tuple[Problem, list[tuple[int, ...]] | None]:
    """The base problem (all-gather or all-to-all) on ``net`` and, on a collhub network, the
    translation group of its symmetries (TACCL's symmetry ties, found instead of given)."""
    problem = build_problem(
        net.graph,
        base,
        c,
        chunk_bytes,
        node_size=net.node_size,
        relay=net.relay,
        symmetries=net.symmetries,
        extra_ports=net.extra_ports,
    )
    _check_symmetries(net, problem)
    group = None
    if net.path is None and net.relay is None:
        from ._symmetry import translations

        found = translations(net.graph, problem)
        if found is not None:
            group, problem.symmetries = found
    return problem, group


@dataclass
class _Solution:
    """The schedules of a collective: ``sched`` on the base problem, ``sched_t`` on its transpose
    (reduce-scatter, the first half of all-reduce); the stats and the lower bound."""

    sched: Schedule | None = None
    sched_t: Schedule | None = None
    problem_t: Problem | None = None
    stats: dict[str, Any] = field(default_factory=dict)
    lb: float = 0.0
    which: str = ""


def _solve_collective(
    problem: Problem, net: Network, params: SynthesizeParams, prog: Progress, group: list[tuple[int, ...]] | None
) -> _Solution:
    coll = params.collective
    if coll in ("allgather", "alltoall"):
        solved = _solve(problem, net, params.time_limit, params, prog, coll, group)
        lb, which = lower_bound(problem, net.node_size)
        return _Solution(sched=solved.schedule, stats=solved.stats, lb=lb, which=which)
    problem_t = problem.transposed()
    mirror_ok = problem.is_symmetric() and (problem.relay is None or problem.relay.rev_map is None)
    share = params.time_limit if coll == "reducescatter" or mirror_ok else params.time_limit / 2
    rs = _solve(problem_t, net, share, params, prog, "reduce-scatter", group)
    sol = _Solution(sched_t=rs.schedule, problem_t=problem_t, stats={f"rs_{k}": v for k, v in rs.stats.items()})
    sol.lb, sol.which = lower_bound(problem_t, net.node_size)
    if coll != "allreduce":
        return sol
    if mirror_ok:
        sol.sched = _mirrored(problem, problem_t, rs.schedule)
        sol.stats.update({f"ag_{k}": v for k, v in rs.stats.items()})
        sol.stats["ag_makespan_ns"] = sol.sched.makespan
    else:
        ag = _solve(problem, net, params.time_limit / 2, params, prog, "all-gather", group)
        sol.sched = ag.schedule
        sol.stats.update({f"ag_{k}": v for k, v in ag.stats.items()})
    lb_ag, _ = lower_bound(problem, net.node_size)
    sol.lb, sol.which = sol.lb + lb_ag, "reduce-scatter + all-gather ingress/egress"
    return sol


def _mirrored(problem: Problem, problem_t: Problem, sched_t: Schedule) -> Schedule:
    """The all-gather that mirrors a reduce-scatter schedule: every transfer on the reverse link."""
    mirror = [problem.edge_of[(problem_t.edges[t.edge].src, problem_t.edges[t.edge].dst)] for t in sched_t.transfers]
    return timed(
        problem,
        Schedule(
            [type(t)(t.chunk, ei, t.start, t.end) for t, ei in zip(sched_t.transfers, mirror, strict=False)],
            0,
            sched_t.origin,
        ),
    )


def produce_synthesize(params: SynthesizeParams, ctx: Any = None) -> Algorithm:
    """Producer factory of ``taccl.synthesize``."""
    return synthesize(params)
