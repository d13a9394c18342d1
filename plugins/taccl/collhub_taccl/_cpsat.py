"""Stage 3 with OR-Tools CP-SAT (optional): exact timing that may also reorder.

With the routes fixed, every transfer is an interval of length ``hold`` on each resource of its
edge (``NoOverlap`` per link and port: real serialization), it starts after its chunk arrived
(``start >= start(pred) + arrive(pred)``), and the makespan is the latest arrival. CP-SAT starts
from the stage-2 schedule (a hint) and improves the order per link. It runs single-threaded
with a *deterministic* time budget, so a result is reproducible for a seed. Without ``ortools``
the fixed-order timing of stage 2 stands (this module is then never imported).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._problem import Problem
from ._schedule import Prepared, Schedule, Transfer, timed

__all__ = ["CpSatResult", "available", "improve"]


@dataclass
class CpSatResult:
    schedule: Schedule
    status: str
    bound: float
    seconds: float


def available() -> bool:
    try:
        import ortools.sat.python.cp_model  # noqa: F401
    except ImportError:
        return False
    return True


def improve(problem: Problem, prep: Prepared, incumbent: Schedule, *, budget: float, seed: int) -> CpSatResult:
    """Minimise the makespan over per-resource orders, from ``incumbent`` (same routes as ``prep``)."""
    import time

    from ortools.sat.python import cp_model

    t0 = time.perf_counter()
    edges = problem.edges
    items, pred = prep.items, prep.pred
    start_of = {(t.chunk, t.edge): t.start for t in incumbent.transfers}
    horizon = int(incumbent.makespan)
    m = cp_model.CpModel()
    starts = []
    per_res: dict[int, list[object]] = {}
    for k, ei in items:
        e = edges[ei]
        s = m.NewIntVar(0, max(horizon - e.arrive, 0), "")
        starts.append(s)
        iv = m.NewFixedSizeIntervalVar(s, e.hold, "")
        for r in e.resources:
            per_res.setdefault(r, []).append(iv)
        m.AddHint(s, start_of[(k, ei)])
    for t, p in enumerate(pred):
        if p >= 0:
            m.Add(starts[t] >= starts[p] + edges[items[p][1]].arrive)
    for ivs in per_res.values():
        if len(ivs) > 1:
            m.AddNoOverlap(ivs)
    mk = m.NewIntVar(0, horizon, "makespan")
    for t, (_k, ei) in enumerate(items):
        m.Add(mk >= starts[t] + edges[ei].arrive)
    m.Minimize(mk)
    solver = _solver(budget, seed)
    try:
        status = solver.Solve(m)
    except Exception as exc:  # a solver failure keeps the stage-2 schedule
        return CpSatResult(incumbent, f"failed: {exc}", 0.0, time.perf_counter() - t0)
    name = solver.StatusName(status)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return CpSatResult(incumbent, name, 0.0, time.perf_counter() - t0)
    out = [
        Transfer(k, ei, int(solver.Value(starts[t])), int(solver.Value(starts[t])) + edges[ei].arrive)
        for t, (k, ei) in enumerate(items)
    ]
    sched = timed(problem, Schedule(out, max(x.end for x in out), "milp"))
    best = sched if sched.makespan < incumbent.makespan else incumbent
    return CpSatResult(best, name, float(solver.BestObjectiveBound()), time.perf_counter() - t0)


def improve_routes(
    problem: Problem, dags: list[list[int]], incumbent: Schedule, *, budget: float, seed: int
) -> CpSatResult:
    """Route and schedule together inside the shortest-path DAGs (optional intervals), from
    ``incumbent`` (a schedule whose routes lie in the DAGs): what stage 1's relaxed load bound
    cannot see, link serialization, decides the routes here."""
    import time

    from ortools.sat.python import cp_model

    t0 = time.perf_counter()
    edges = problem.edges
    horizon = int(incumbent.makespan)
    used = {(t.chunk, t.edge): t.start for t in incumbent.transfers}
    m = cp_model.CpModel()
    per_res: dict[int, list[object]] = {}
    mk = m.NewIntVar(0, horizon, "makespan")
    keys: list[tuple[int, int]] = []
    svars = []
    for ch in problem.chunks:
        k = ch.id
        arr = {ch.src: 0}
        into: dict[int, list[Any]] = {}  # CP-SAT literals
        for ei in dags[k]:
            v = edges[ei].dst
            if v not in arr:
                arr[v] = m.NewIntVar(0, horizon, "")
        hint_arr = {ch.src: 0}
        for (kk, ei), s in used.items():
            if kk == k:
                hint_arr[edges[ei].dst] = s + edges[ei].arrive
        for ei in dags[k]:
            e = edges[ei]
            x = m.NewBoolVar("")
            s = m.NewIntVar(0, max(horizon - e.arrive, 0), "")
            iv = m.NewOptionalFixedSizeIntervalVar(s, e.hold, x, "")
            for r in e.resources:
                per_res.setdefault(r, []).append(iv)
            m.Add(s >= arr[e.src]).OnlyEnforceIf(x)
            m.Add(arr[e.dst] == s + e.arrive).OnlyEnforceIf(x)
            into.setdefault(e.dst, []).append(x)
            on = (k, ei) in used
            m.AddHint(x, on)
            m.AddHint(s, used.get((k, ei), 0))
            keys.append((k, ei))
            svars.append((x, s))
        for v, xs in into.items():
            if v in ch.dests:
                m.AddExactlyOne(xs)
                m.Add(mk >= arr[v])
            else:
                m.AddAtMostOne(xs)
        for v, a in arr.items():
            if v != ch.src and v in hint_arr:
                m.AddHint(a, hint_arr[v])
        if ch.dst >= 0:  # all-to-all: a relay forwards only what it received
            for ei in dags[k]:
                u = edges[ei].src
                if u != ch.src:
                    x = svars[keys.index((k, ei))][0]
                    m.Add(sum(into.get(u, [])) >= 1).OnlyEnforceIf(x)
    for ivs in per_res.values():
        if len(ivs) > 1:
            m.AddNoOverlap(ivs)
    m.Minimize(mk)
    solver = _solver(budget, seed)
    status = solver.Solve(m)
    name = solver.StatusName(status)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return CpSatResult(incumbent, name, 0.0, time.perf_counter() - t0)
    out = []
    for (k, ei), (x, s) in zip(keys, svars, strict=False):
        if solver.Value(x):
            v = int(solver.Value(s))
            out.append(Transfer(k, ei, v, v + edges[ei].arrive))
    sched = timed(problem, _prune(problem, Schedule(out, max(t.end for t in out), "milp")))
    best = sched if sched.makespan < incumbent.makespan else incumbent
    return CpSatResult(best, name, float(solver.BestObjectiveBound()), time.perf_counter() - t0)


def _solver(budget: float, seed: int) -> Any:
    """A single-threaded, seeded CP-SAT solver: deterministic for a seed, bounded by ``budget``
    in deterministic time and (on loaded machines) wall-clock time."""
    from ortools.sat.python import cp_model

    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = int(seed) % 2_147_483_647
    solver.parameters.max_deterministic_time = max(float(budget), 0.05)
    solver.parameters.max_time_in_seconds = max(float(budget), 0.1)
    return solver


def _prune(problem: Problem, sched: Schedule) -> Schedule:
    """Drop all-to-all transfers that lead nowhere (a relay that received a chunk it need not pass on)."""
    if problem.collective != "alltoall":
        return sched
    keep: list[Transfer] = []
    by_chunk: dict[int, dict[int, Transfer]] = {}
    for t in sched.transfers:
        by_chunk.setdefault(t.chunk, {})[problem.edges[t.edge].dst] = t
    for k, into in by_chunk.items():
        ch = problem.chunks[k]
        v = ch.dst
        while v != ch.src:
            t = into[v]
            keep.append(t)
            v = problem.edges[t.edge].src
    return Schedule(keep, max(t.end for t in keep), sched.origin)


def improve_symmetric(
    problem: Problem,
    dags: list[list[int]],
    group: list[tuple[int, ...]],
    incumbent: Schedule,
    *,
    budget: float,
    seed: int,
) -> CpSatResult:
    """All-gather on a translation-symmetric network: choose rank 0's trees (one per chunk slot)
    and their times; rank r's chunks follow the same trees moved by ``group[r]`` at the same times.
    A link then carries one transfer per tree edge of its translation class, so serialization
    becomes ``NoOverlap`` per class: a model of one rank's chunks instead of all ranks'."""
    import time

    from ortools.sat.python import cp_model

    t0 = time.perf_counter()
    edges = problem.edges
    p = problem.ranks
    inverse = [tuple(sorted(range(p), key=perm.__getitem__)) for perm in group]

    def klass(ei: int) -> int:  # the edge out of rank 0 that this edge is a translate of
        e = edges[ei]
        back = inverse[e.src]
        return problem.edge_of[(back[e.src], back[e.dst])]

    horizon = int(incumbent.makespan)
    m = cp_model.CpModel()
    mk = m.NewIntVar(0, horizon, "makespan")
    per_class: dict[int, list[object]] = {}
    chosen: list[tuple[int, int, object, object]] = []
    for ch in problem.chunks:
        if ch.src != 0:
            continue
        arr: dict[int, object] = {0: 0}
        for ei in dags[ch.id]:
            v = edges[ei].dst
            if v not in arr:
                arr[v] = m.NewIntVar(0, horizon, "")
        into: dict[int, list[Any]] = {}  # CP-SAT literals
        for ei in dags[ch.id]:
            e = edges[ei]
            x = m.NewBoolVar("")
            s = m.NewIntVar(0, max(horizon - e.arrive, 0), "")
            per_class.setdefault(klass(ei), []).append(m.NewOptionalFixedSizeIntervalVar(s, e.hold, x, ""))
            m.Add(s >= arr[e.src]).OnlyEnforceIf(x)
            m.Add(arr[e.dst] == s + e.arrive).OnlyEnforceIf(x)
            into.setdefault(e.dst, []).append(x)
            chosen.append((ch.index, ei, x, s))
        for v, xs in into.items():
            m.AddExactlyOne(xs)
            m.Add(mk >= arr[v])
    for ivs in per_class.values():
        if len(ivs) > 1:
            m.AddNoOverlap(ivs)
    m.Minimize(mk)
    solver = _solver(budget, seed)
    try:
        status = solver.Solve(m)
    except Exception as exc:  # a solver failure keeps the incumbent
        return CpSatResult(incumbent, f"failed: {exc}", 0.0, time.perf_counter() - t0)
    name = solver.StatusName(status)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return CpSatResult(incumbent, name, 0.0, time.perf_counter() - t0)
    slot = {(ch.src, ch.index): ch.id for ch in problem.chunks}
    out = []
    for j, ei, x, s in chosen:
        if not solver.Value(x):
            continue
        v = int(solver.Value(s))
        e = edges[ei]
        for r in range(p):
            perm = group[r]
            out.append(Transfer(slot[(r, j)], problem.edge_of[(perm[e.src], perm[e.dst])], v, v + e.arrive))
    sched = timed(problem, Schedule(out, max(t.end for t in out), "milp"))
    best = sched if sched.makespan < incumbent.makespan else incumbent
    return CpSatResult(best, name, float(solver.BestObjectiveBound()), time.perf_counter() - t0)
