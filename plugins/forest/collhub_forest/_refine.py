"""Exact-as-possible tree rates: a column-generation LP over spanning trees (HiGHS).

Rules:

* Master LP over candidate trees ``t`` (each of one root): ``min z`` s.t. for every root
  ``Σ y_t = 1`` and for every physical link ``Σ_t y_t · uses(t, l) ≤ z · b_l · x*``. ``z`` is the
  load ratio of the fractional packing (1 = at the cut optimum).
* Pricing: with link prices ``π`` (the duals of the link rows) the best new tree of a root is a
  minimum-cost spanning arborescence (Edmonds / Chu-Liu) on the logical graph, an edge costing
  the prices of its route plus a tiny per-hop cost (shallow trees at equal price). A tree enters
  when its reduced cost is negative. ForestColl's optimum says a packing with ``z = 1`` exists
  when every logical edge may use its whole route (always on direct-link networks).
* Depth: a second phase keeps ``z`` (within :data:`DEPTH_SLACK`) and minimises the
  rate-weighted depth of the trees, adding least-cost path trees (one per hop plus the link
  prices) as columns: deep trees carry few chunks over many hops, which the pipeline pays for.
* Rates: ``y_t · R`` rounded per root by largest remainder, for ``R`` = 1, 2, 3, ... up to
  :data:`MAX_R` (an LP vertex is rational: DGX-1's needs ``R`` = 30); the smallest ``R``
  within :data:`ROUND_SLACK` of the LP's ``z`` wins (fewer distinct trees, fewer chunks), else
  the best rounded one.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from ._logical import LogicalGraph

__all__ = ["MAX_R", "ROUND_SLACK", "lp_packing", "min_arborescence"]

MAX_R = 64
ROUND_SLACK = 0.01
#: the depth phase may give up this much of the LP's z
DEPTH_SLACK = 0.002
DEPTH_ROUNDS = 20
_EPS_HOP = 1e-6


def min_arborescence(n: int, edges: list[tuple[int, int, float]], root: int) -> list[int]:
    """Indices of the edges of a minimum-cost spanning arborescence rooted at ``root``
    (Edmonds' algorithm, contracting cycles; every vertex must be reachable)."""
    best: list[int] = [-1] * n
    for i, (u, v, w) in enumerate(edges):
        if v != root and u != v and (best[v] < 0 or w < edges[best[v]][2]):
            best[v] = i
    if any(best[v] < 0 for v in range(n) if v != root):
        raise ValueError("a GPU has no tree edge into it")
    comp = [-1] * n
    seen = [-1] * n
    count = 0
    cycles: list[list[int]] = []
    for v in range(n):
        x = v
        while x != root and seen[x] < 0 and comp[x] < 0:
            seen[x] = v
            x = edges[best[x]][0]
        if x != root and comp[x] < 0 and seen[x] == v:
            cyc = []
            y = x
            while True:
                comp[y] = count
                cyc.append(y)
                y = edges[best[y]][0]
                if y == x:
                    break
            cycles.append(cyc)
            count += 1
    if not cycles:
        return [best[v] for v in range(n) if v != root]
    for v in range(n):
        if comp[v] < 0:
            comp[v] = count
            count += 1
    sub: list[tuple[int, int, float]] = []
    origin: list[int] = []
    for i, (u, v, w) in enumerate(edges):
        cu, cv = comp[u], comp[v]
        if cu != cv and v != root:
            sub.append((cu, cv, w - edges[best[v]][2]))
            origin.append(i)
    chosen = [origin[j] for j in min_arborescence(count, sub, comp[root])]
    entered = {edges[i][1] for i in chosen}
    for cyc in cycles:
        chosen += [best[y] for y in cyc if y not in entered]
    return chosen


def _uses(lg: LogicalGraph, parent_edge: tuple[int, ...]) -> dict[int, int]:
    out: dict[int, int] = {}
    for e in parent_edge:
        if e >= 0:
            for li in lg.routes[e]:
                out[li] = out.get(li, 0) + 1
    return out


def lp_packing(
    lg: LogicalGraph, x: float, seeds: list[tuple[int, tuple[int, ...]]], budget_s: float
) -> tuple[list[tuple[int, tuple[int, ...], float]], float]:
    """Column generation from the ``seeds`` (root, parent_edge); returns (root, parent_edge, y)
    with ``y > 0`` and the LP's ``z``."""
    import highspy

    t0 = time.perf_counter()
    g = lg.physical
    n, nl = lg.npus, len(g.links)
    h = _quiet_highs(highspy)
    inf = highspy.kHighsInf
    # rows 0..nl-1: links (<= 0), nl..nl+n-1: roots (= 1); column 0: z
    for _ in range(nl):
        h.addRow(-inf, 0.0, 0, [], [])
    for _ in range(n):
        h.addRow(1.0, 1.0, 0, [], [])
    h.addCol(1.0, 0.0, inf, nl, list(range(nl)), [-ln.bandwidth * x for ln in g.links])
    cols: list[tuple[int, tuple[int, ...]]] = []
    known: set[tuple[int, tuple[int, ...]]] = set()

    def add(root: int, pe: tuple[int, ...]) -> None:
        if (root, pe) in known:
            return
        known.add((root, pe))
        uses = _uses(lg, pe)
        idx = sorted(uses)
        h.addCol(0.0, 0.0, inf, len(idx) + 1, idx + [nl + root], [float(uses[i]) for i in idx] + [1.0])
        cols.append((root, pe))

    for root, pe in seeds:
        add(root, pe)
    hops = [_EPS_HOP * len(rt) for rt in lg.routes]
    while True:
        h.run()
        sol = h.getSolution()
        if time.perf_counter() - t0 > budget_s:
            break
        duals = sol.row_dual
        price = [max(0.0, -duals[i]) for i in range(nl)]
        scale = max(price) or 1.0
        added = 0
        for root in range(n):
            edges = [
                (lg.src[e], lg.dst[e], sum(price[li] for li in lg.routes[e]) + hops[e] * scale) for e in range(lg.edges)
            ]
            chosen = min_arborescence(n, edges, root)
            parent = [-1] * n
            for e in chosen:
                parent[lg.dst[e]] = e
            tree = tuple(parent)
            cost = sum(price[li] * k for li, k in _uses(lg, tree).items())
            if cost < duals[nl + root] - 1e-9 * scale and (root, tree) not in known:
                add(root, tree)
                added += 1
        if not added:
            break
    z = h.getSolution().col_value[0]
    _shallow(h, lg, cols, add, z, t0, budget_s)
    sol = h.getSolution()
    out = [(root, pe, sol.col_value[j + 1]) for j, (root, pe) in enumerate(cols) if sol.col_value[j + 1] > 1e-9]
    return out, z


def _quiet_highs(highspy: Any) -> Any:
    """A HiGHS instance, its first-instance banner kept off stdout (``--format json`` stays clean)."""
    fd = os.dup(1)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            h = highspy.Highs()
    finally:
        os.dup2(fd, 1)
        os.close(fd)
    h.setOptionValue("output_flag", False)
    # HiGHS starts one process-wide scheduler with the first solve's thread count, and a later
    # instance asking for another count fails (collhub-taccl asks for 1): ask for 1 as well
    h.setOptionValue("threads", 1)
    return h


def depth_of(lg: LogicalGraph, pe: tuple[int, ...]) -> int:
    """Most logical hops from the root to a GPU."""
    memo: dict[int, int] = {}
    for v in range(len(pe)):
        chain = []
        while v not in memo and pe[v] >= 0:
            chain.append(v)
            v = lg.src[pe[v]]
        d = memo.get(v, 0)
        for w in reversed(chain):
            d += 1
            memo[w] = d
    return max(memo.values(), default=0)


def _shallow(
    h: Any,
    lg: LogicalGraph,
    cols: list[tuple[int, tuple[int, ...]]],
    add: Callable[[int, tuple[int, ...]], None],
    z: float,
    t0: float,
    budget_s: float,
) -> None:
    """Second phase: keep ``z`` within :data:`DEPTH_SLACK` and minimise the rate-weighted tree
    depth (a deep tree pipelines its few chunks over many hops). New columns: least-cost path
    trees under the link prices plus one per hop (shallow by construction)."""
    from ._packing import _path_tree

    nl, n = len(lg.physical.links), lg.npus
    h.changeColBounds(0, 0.0, z * (1 + DEPTH_SLACK))
    h.changeColCost(0, 0.0)
    for j, (_root, pe) in enumerate(cols):
        h.changeColCost(j + 1, float(depth_of(lg, pe)))
    for _ in range(DEPTH_ROUNDS):
        h.run()
        if time.perf_counter() - t0 > budget_s:
            return
        duals = h.getSolution().row_dual
        price = [max(0.0, -duals[i]) for i in range(nl)]
        before = len(cols)
        for root in range(n):
            cost = [1.0 + sum(price[li] for li in rt) for rt in lg.routes]
            pe = _path_tree(lg, root, cost)
            red = depth_of(lg, pe) + sum(price[li] * k for li, k in _uses(lg, pe).items()) - duals[nl + root]
            if red < -1e-9:
                add(root, pe)
                h.changeColCost(len(cols), float(depth_of(lg, pe)))
        if len(cols) == before:
            break
    h.run()


def round_rates(
    lg: LogicalGraph, x: float, frac: list[tuple[int, tuple[int, ...], float]], z: float, multiple_of: int = 1
) -> tuple[int, list[tuple[int, tuple[int, ...], int]], float]:
    """(R, [(root, parent_edge, count)], exact load ratio) per the module docstring; ``R`` a
    multiple of ``multiple_of`` (that alone where it exceeds :data:`MAX_R`)."""
    g = lg.physical
    allow = [ln.bandwidth * x for ln in g.links]
    by_root: dict[int, list[tuple[tuple[int, ...], float]]] = {}
    for root, pe, y in frac:
        by_root.setdefault(root, []).append((pe, y))
    best: tuple[int, list[tuple[int, tuple[int, ...], int]], float] | None = None
    for r in range(multiple_of, max(MAX_R, multiple_of) + 1, multiple_of):
        trees: list[tuple[int, tuple[int, ...], int]] = []
        for root in sorted(by_root):
            items = by_root[root]
            tot = sum(y for _, y in items)
            want = [y / tot * r for _, y in items]
            base = [int(w) for w in want]
            rest = r - sum(base)
            order = sorted(range(len(items)), key=lambda i: -(want[i] - base[i]))
            for i in order[:rest]:
                base[i] += 1
            trees += [(root, items[i][0], base[i]) for i in range(len(items)) if base[i]]
        load = [0.0] * len(allow)
        for _root, pe, c in trees:
            for li, k in _uses(lg, pe).items():
                load[li] += c * k
        ratio = max((load[i] / (allow[i] * r) for i in range(len(allow)) if load[i]), default=1.0)
        if best is None or ratio < best[2] - 1e-12:
            best = (r, trees, ratio)
        if ratio <= z * (1 + ROUND_SLACK):
            break
    assert best is not None
    return best
