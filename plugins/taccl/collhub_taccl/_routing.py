"""Stage 1: the routing MILP (HiGHS through ``highspy``).

Variables exist only inside each chunk's shortest-path DAG (TACCL prunes the same way):

* ``x[k,e]`` binary: chunk k crosses logical edge e;
* ``t[k,v]`` arrival time of chunk k at rank v, only where DAG paths to v differ in cost
  (elsewhere the arrival is a constant and only bounds ``T``);
* ``T`` the relaxed makespan.

Constraints: every destination receives each chunk exactly once (others at most once, and
only after receiving it themselves); ``t[v] >= t[u] + arrive(e)`` when ``x[k,e]`` with the tight
big-M ``M = L(u) + arrive(e) - S(v)`` (L/S = longest/shortest DAG arrival); the relaxed load
bound ``T >= sum(hold(e) * x[k,e])`` for every resource (links, switch ports); symmetry ties
``x[k,e] = x[s(k), s(e)]`` for every rank permutation s of the sketch. Objective: ``T`` plus,
for switch sketches, TACCL's ``uc-min``/``uc-max`` term on the distinct pairs used.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._problem import Problem
from ._schedule import Schedule

__all__ = ["RoutingResult", "solve_routing"]

Progress = Callable[[str, float | None, float | None], None]


@dataclass
class RoutingResult:
    routes: list[list[int]]
    status: str
    objective: float
    bound: float
    gap: float
    seconds: float
    binaries: int
    rows: int
    time_limited: bool
    solver: str
    warm_start: bool = False
    notes: list[str] = field(default_factory=list)


def _highspy() -> Any:
    """The ``highspy`` module, or a PluginError (exit 4) with the install hint."""
    try:
        import highspy
    except ImportError as exc:
        from hub.errors import PluginError

        raise PluginError(
            f"taccl.synthesize needs the HiGHS solver (highspy), which cannot be imported: {exc}",
            hint="pip install 'highspy>=1.7' (a dependency of collhub-taccl)",
        ) from None
    return highspy


def _highs() -> Any:
    highspy = _highspy()
    # HiGHS prints a banner on stdout when the first instance is built; keep stdout clean
    # for `collhub ... --format json`
    fd = os.dup(1)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            h = highspy.Highs()
    finally:
        os.dup2(fd, 1)
        os.close(fd)
    h.setOptionValue("output_flag", False)
    return h


def _dag_costs(problem: Problem, k: int, dag: Sequence[int]) -> tuple[dict[int, int], dict[int, int]]:
    """Shortest and longest arrival times at every DAG node of chunk k (DAG is hop-layered)."""
    src = problem.chunks[k].src
    by_src: dict[int, list[int]] = {}
    for ei in dag:
        by_src.setdefault(problem.edges[ei].src, []).append(ei)
    short, long_ = {src: 0}, {src: 0}
    frontier = [src]
    while frontier:
        nxt: list[int] = []
        for u in frontier:
            for ei in by_src.get(u, ()):
                e = problem.edges[ei]
                a = short[u] + e.arrive
                b = long_[u] + e.arrive
                if e.dst not in short:
                    nxt.append(e.dst)
                    short[e.dst], long_[e.dst] = a, b
                else:
                    short[e.dst] = min(short[e.dst], a)
                    long_[e.dst] = max(long_[e.dst], b)
        frontier = sorted(set(nxt))
    return short, long_


class _Model:
    def __init__(self) -> None:
        self.cost: list[float] = []
        self.lo: list[float] = []
        self.hi: list[float] = []
        self.integer: list[int] = []
        self.r_lo: list[float] = []
        self.r_hi: list[float] = []
        self.r_idx: list[list[int]] = []
        self.r_val: list[list[float]] = []

    def col(self, cost: float, lo: float, hi: float, integer: bool = False) -> int:
        self.cost.append(cost)
        self.lo.append(lo)
        self.hi.append(hi)
        if integer:
            self.integer.append(len(self.cost) - 1)
        return len(self.cost) - 1

    def row(self, lo: float, hi: float, idx: list[int], val: list[float]) -> None:
        self.r_lo.append(lo)
        self.r_hi.append(hi)
        self.r_idx.append(idx)
        self.r_val.append(val)


def _formulate(
    problem: Problem, dags: Sequence[Sequence[int]], switch_terms: Sequence[tuple[str, Sequence[int]]], inf: float
) -> tuple[_Model, dict[tuple[int, int], int], dict[tuple[int, int], int], int, int]:
    """The MILP of the module docstring: model, x and t columns, T's column, symmetry ties."""
    m = _Model()
    T = m.col(1.0, 0.0, inf)
    x: dict[tuple[int, int], int] = {}
    tvar: dict[tuple[int, int], int] = {}
    load: dict[int, tuple[list[int], list[float]]] = {}
    t_floor = 0
    for ch in problem.chunks:
        k = ch.id
        dag = dags[k]
        for ei in dag:
            x[(k, ei)] = m.col(0.0, 0.0, 1.0, True)
            e = problem.edges[ei]
            for r in e.resources:
                idx, val = load.setdefault(r, ([T], [1.0]))
                idx.append(x[(k, ei)])
                val.append(-float(e.hold))
        short, long_ = _dag_costs(problem, k, dag)
        into: dict[int, list[int]] = {}
        for ei in dag:
            into.setdefault(problem.edges[ei].dst, []).append(ei)
        dests = set(ch.dests)
        for v, eis in into.items():
            lo = 1.0 if v in dests else 0.0
            m.row(lo, 1.0, [x[(k, ei)] for ei in eis], [1.0] * len(eis))
        if ch.dst >= 0:  # all-to-all: a relay forwards only what it received
            for ei in dag:
                u = problem.edges[ei].src
                if u != ch.src:
                    m.row(
                        0.0,
                        inf,
                        [x[(k, e2)] for e2 in into.get(u, [])] + [x[(k, ei)]],
                        [1.0] * len(into.get(u, [])) + [-1.0],
                    )
        for v in into:
            if long_[v] > short[v]:
                tvar[(k, v)] = m.col(0.0, float(short[v]), float(long_[v]))
        for ei in dag:
            e = problem.edges[ei]
            tv = tvar.get((k, e.dst))
            if tv is None:
                continue
            big_m = long_[e.src] + e.arrive - short[e.dst]
            if big_m <= 0:
                continue
            idx, val = [tv, x[(k, ei)]], [1.0, -float(big_m)]
            tu = tvar.get((k, e.src))
            rhs = float(e.arrive - big_m)
            if tu is None:
                rhs += short[e.src]
            else:
                idx.append(tu)
                val.append(-1.0)
            m.row(rhs, inf, idx, val)
        for v in dests:
            tv = tvar.get((k, v))
            if tv is None:
                t_floor = max(t_floor, short.get(v, 0))
            else:
                m.row(0.0, inf, [T, tv], [1.0, -1.0])
    m.lo[T] = float(t_floor)
    for r in sorted(load):
        idx, val = load[r]
        m.row(0.0, inf, idx, val)
    ties = _symmetry_rows(problem, dags, x, m)
    mu = 0.01 * min((e.hold for e in problem.edges), default=1)
    by_edge: dict[int, list[int]] = {}
    if switch_terms:
        for (_k, ei), xi in x.items():
            by_edge.setdefault(ei, []).append(xi)
    for strategy, term_edges in switch_terms:
        for ei in term_edges:
            ks = by_edge.get(ei, [])
            if not ks:
                continue
            y = m.col(mu if strategy == "uc-min" else -mu, 0.0, 1.0, True)
            if strategy == "uc-min":
                for xi in ks:
                    m.row(0.0, inf, [y, xi], [1.0, -1.0])
            else:
                m.row(0.0, inf, ks + [y], [1.0] * len(ks) + [-1.0])
    return m, x, tvar, T, ties


def solve_routing(
    problem: Problem,
    dags: Sequence[Sequence[int]],
    warm: Schedule | None,
    *,
    time_limit: float,
    seed: int,
    switch_terms: Sequence[tuple[str, Sequence[int]]] = (),
    progress: Progress | None = None,
) -> RoutingResult:
    """Solve the stage-1 MILP; ``warm`` (a schedule inside the DAGs) is the starting incumbent."""
    highspy = _highspy()
    t0 = time.perf_counter()
    m, x, tvar, T, ties = _formulate(problem, dags, switch_terms, highspy.kHighsInf)
    h = _highs()
    ncol = len(m.cost)
    h.addCols(
        ncol,
        np.array(m.cost),
        np.array(m.lo),
        np.array(m.hi),
        0,
        np.zeros(0, dtype=np.int32),
        np.zeros(0, dtype=np.int32),
        np.zeros(0),
    )
    if m.integer:
        ints = np.array(m.integer, dtype=np.int32)
        h.changeColsIntegrality(len(ints), ints, np.array([highspy.HighsVarType.kInteger] * len(ints)))
    starts = np.cumsum([0] + [len(i) for i in m.r_idx[:-1]]).astype(np.int32) if m.r_idx else np.zeros(0, np.int32)
    idx = np.array([i for row in m.r_idx for i in row], dtype=np.int32)
    val = np.array([v for row in m.r_val for v in row], dtype=np.float64)
    h.addRows(len(m.r_lo), np.array(m.r_lo), np.array(m.r_hi), len(idx), starts, idx, val)
    for name, value in (
        ("time_limit", max(float(time_limit), 0.05)),
        ("mip_rel_gap", 1e-6),
        ("random_seed", int(seed) % 2_147_483_647),
        ("threads", 1),
        ("presolve", "on"),
    ):
        h.setOptionValue(name, value)
    warm_ok = False
    if warm is not None:
        warm_ok = _warm_start(h, problem, warm, x, tvar, T, ncol, m, highspy)
    if progress is not None:

        def on_event(e: object) -> None:
            d = e.data_out  # type: ignore[attr-defined]
            progress("stage 1: routing MILP", d.objective_function_value, d.mip_dual_bound)

        h.cbMipImprovingSolution.subscribe(on_event)
        h.cbMipInterrupt.subscribe(on_event)
    try:
        h.run()
        status = h.modelStatusToString(h.getModelStatus())
        info = h.getInfo()
        sol = np.asarray(h.getSolution().col_value) if info.primal_solution_status else None
    except Exception as exc:  # a solver failure must not lose the greedy incumbent
        raise RuntimeError(f"HiGHS failed: {exc}") from exc
    seconds = time.perf_counter() - t0
    limited = status.lower().startswith("time limit")
    if sol is None or len(sol) != ncol:
        raise RuntimeError(f"HiGHS returned no solution ({status})")
    routes = _extract(problem, dags, x, sol)
    return RoutingResult(
        routes,
        status,
        float(info.objective_function_value),
        float(info.mip_dual_bound),
        float(info.mip_gap),
        seconds,
        len(x),
        len(m.r_lo),
        limited,
        f"HiGHS {highspy.Highs().version()}",
        warm_ok,
        [f"{ties} symmetry ties"] if ties else [],
    )


def _symmetry_rows(problem: Problem, dags: Sequence[Sequence[int]], x: dict[tuple[int, int], int], m: _Model) -> int:
    if not problem.symmetries:
        return 0
    chunk_of = {(ch.src, ch.dst, ch.index): ch.id for ch in problem.chunks}
    n = 0
    for perm in problem.symmetries:
        for (k, ei), xi in x.items():
            ch = problem.chunks[k]
            e = problem.edges[ei]
            k2 = chunk_of[(perm[ch.src], perm[ch.dst] if ch.dst >= 0 else -1, ch.index)]
            e2 = problem.edge_of.get((perm[e.src], perm[e.dst]))
            x2 = x.get((k2, e2)) if e2 is not None else None
            if x2 is None:
                m.hi[xi] = 0.0  # its image is not a candidate: neither is it
            elif x2 != xi:
                m.row(0.0, 0.0, [xi, x2], [1.0, -1.0])
                n += 1
    return n


def _warm_start(
    h: object,
    problem: Problem,
    warm: Schedule,
    x: dict[tuple[int, int], int],
    tvar: dict[tuple[int, int], int],
    T: int,
    ncol: int,
    m: _Model,
    highspy: object,
) -> bool:
    vals = np.zeros(ncol)
    arrival: dict[tuple[int, int], int] = {}
    order = sorted(warm.transfers, key=lambda t: t.start)
    for ch in problem.chunks:
        arrival[(ch.id, ch.src)] = 0
    loads: dict[int, float] = {}
    for t in order:
        key = (t.chunk, t.edge)
        if key not in x:
            return False
        vals[x[key]] = 1.0
        e = problem.edges[t.edge]
        arrival[(t.chunk, e.dst)] = arrival[(t.chunk, e.src)] + e.arrive
        for r in e.resources:
            loads[r] = loads.get(r, 0.0) + e.hold
    for (k, v), ti in tvar.items():
        vals[ti] = arrival.get((k, v), m.lo[ti])
    vals[T] = max([m.lo[T], *loads.values(), *(vals[ti] for ti in tvar.values())])
    for i in range(ncol):  # auxiliary switch-term columns: the solver repairs them
        vals[i] = min(max(vals[i], m.lo[i]), m.hi[i])
    sol = highspy.HighsSolution()  # type: ignore[attr-defined]
    sol.col_value = list(vals)
    return str(h.setSolution(sol)).endswith("kOk")  # type: ignore[attr-defined]


def _extract(
    problem: Problem, dags: Sequence[Sequence[int]], x: dict[tuple[int, int], int], sol: np.ndarray
) -> list[list[int]]:
    routes: list[list[int]] = []
    for ch in problem.chunks:
        chosen = {problem.edges[ei].dst: ei for ei in dags[ch.id] if sol[x[(ch.id, ei)]] > 0.5}
        if ch.dst < 0:
            routes.append(sorted(chosen.values()))
            continue
        path: list[int] = []
        v = ch.dst
        while v != ch.src:
            ei = chosen[v]
            path.append(ei)
            v = problem.edges[ei].src
        routes.append(path[::-1])
    return routes
