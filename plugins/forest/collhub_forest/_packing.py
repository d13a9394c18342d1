"""Spanning-tree packing: ``R`` trees per root whose link loads approach the cut optimum.

Rules:

* Every root gets ``R`` spanning out-trees on the logical graph (``_logical.py``), each carrying
  ``1/R`` of the root's shard; equal trees of one root are merged, their shares added, so a
  root's trees carry rational rates ``count/R``.
* The trees are grown in rounds, root after root (multiplicative weights): each tree is a
  least-cost path tree from its root where a logical edge costs the sum over its physical route
  of ``exp(ETA · u_l) / b_l``, ``u_l`` = the link's load so far over what the optimum allows it
  (``b_l · x* · R`` tree-units). Loaded links get dear, so later trees go round them; path
  trees stay shallow, which keeps the pipeline short.
* The packing's quality is exact: ``load_ratio = max_l load_l / (R · b_l · x*)``, 1.0 = every
  link within the cut bound (the bandwidth term of the schedule is ``load_ratio`` times the
  optimum). ``R`` = 1, 2, 4, ... until ``load_ratio`` ≤ 1 + :data:`GOOD` or the budget ends;
  the best packing wins. Above 1 + :data:`GOOD` (up to :data:`LP_GPUS` GPUs) its trees seed the
  column-generation LP of ``_refine.py``, which reaches the optimum's loads.
* On a pure switch fabric too large to enumerate, every root's tree is its star (the root sends
  to every GPU itself): on a single switch and on a full-bisection fat tree that loads every GPU
  port exactly as the ingress bound allows.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from ._logical import LogicalGraph

__all__ = ["ETA", "GOOD", "Forest", "Tree", "pack_trees"]

ETA = 8.0
GOOD = 0.01
#: largest R tried
MAX_ROUNDS = 16
#: the LP refinement (column generation, ``_refine.py``) runs up to this many GPUs
LP_GPUS = 64


@dataclass(frozen=True)
class Tree:
    """A spanning tree of ``root``: ``parent_edge[v]`` = logical edge into ``v`` (-1 at the root),
    carrying ``count / rounds`` of the root's shard."""

    root: int
    count: int
    parent_edge: tuple[int, ...]


@dataclass(frozen=True)
class Forest:
    rounds: int
    trees: tuple[Tree, ...]
    load_ratio: float | None  # None: not computed (stars on a fabric too large to enumerate)
    method: str  # "packing" or "stars"
    seconds: float

    def depth(self, lg: LogicalGraph) -> int:
        """Most logical hops from a root to a GPU over all trees."""
        if self.method == "stars":
            return 1
        best = 0
        for t in self.trees:
            memo: dict[int, int] = {t.root: 0}
            for v in range(lg.npus):
                chain = []
                while v not in memo:
                    chain.append(v)
                    v = lg.src[t.parent_edge[v]]
                d = memo[v]
                for w in reversed(chain):
                    d += 1
                    memo[w] = d
            best = max(best, max(memo.values()))
        return best


def pack_trees(
    lg: LogicalGraph, x_star: Fraction, rounds: int | None = None, budget_s: float = 4.0, multiple_of: int = 1
) -> Forest:
    """The best packing found (see the module docstring); ``rounds`` fixes ``R``; ``multiple_of``
    keeps ``R`` a multiple of it (an all-reduce's two forests share one chunking of the shard)."""
    t0 = time.perf_counter()
    if not lg.enumerated:
        stars = tuple(Tree(r, 1, tuple(-1 for _ in range(lg.npus))) for r in range(lg.npus))
        return Forest(1, stars, None, "stars", time.perf_counter() - t0)
    best: Forest | None = None
    tries = [rounds] if rounds else [r * multiple_of for r in (1, 2, 4, 8, MAX_ROUNDS) if r * multiple_of <= MAX_ROUNDS]
    for r in tries or [multiple_of]:
        trees, ratio = _pack(lg, float(x_star), r)
        if best is None or best.load_ratio is None or ratio < best.load_ratio - 1e-12:
            best = Forest(r, trees, ratio, "packing", 0.0)
        if ratio <= 1 + GOOD or time.perf_counter() - t0 > budget_s / 4:
            break
    assert best is not None and best.load_ratio is not None
    if best.load_ratio > 1 + GOOD and rounds is None and lg.npus <= LP_GPUS:
        from ._refine import lp_packing, round_rates

        seeds = [(t.root, t.parent_edge) for t in best.trees]
        frac, z = lp_packing(lg, float(x_star), seeds, budget_s - (time.perf_counter() - t0))
        r, rounded, ratio = round_rates(lg, float(x_star), frac, z, multiple_of)
        if ratio < best.load_ratio - 1e-12:
            best = Forest(r, tuple(Tree(root, c, pe) for root, pe, c in rounded), ratio, "packing+lp", 0.0)
    return Forest(best.rounds, best.trees, best.load_ratio, best.method, time.perf_counter() - t0)


def _pack(lg: LogicalGraph, x: float, rounds: int) -> tuple[tuple[Tree, ...], float]:
    g = lg.physical
    bw = [ln.bandwidth for ln in g.links]
    allow = [b * x * rounds for b in bw]  # tree-units each link may carry at the optimum
    load = [0.0] * len(bw)
    n = lg.npus
    found: dict[tuple[int, tuple[int, ...]], int] = {}
    for _ in range(rounds):
        for root in range(n):
            cost = [sum(math.exp(ETA * load[li] / allow[li]) / bw[li] for li in rt) for rt in lg.routes]
            pe = _path_tree(lg, root, cost)
            for v in range(n):
                if v != root:
                    for li in lg.routes[pe[v]]:
                        load[li] += 1.0
            key = (root, pe)
            found[key] = found.get(key, 0) + 1
    ratio = max((load[i] / allow[i] for i in range(len(bw)) if load[i]), default=1.0)
    trees = tuple(Tree(root, c, pe) for (root, pe), c in sorted(found.items()))
    return trees, ratio


def _path_tree(lg: LogicalGraph, root: int, cost: list[float]) -> tuple[int, ...]:
    """Least-cost path tree from ``root`` (Dijkstra); ties go to fewer hops, then lower ids."""
    n = lg.npus
    dist = [math.inf] * n
    hops = [0] * n
    pe = [-1] * n
    dist[root] = 0.0
    heap: list[tuple[float, int, int]] = [(0.0, 0, root)]
    done = [False] * n
    while heap:
        d, h, u = heapq.heappop(heap)
        if done[u]:
            continue
        done[u] = True
        for e in lg.out_edges[u]:
            v = lg.dst[e]
            nd = d + cost[e]
            if not done[v] and (nd < dist[v] - 1e-12 or (abs(nd - dist[v]) <= 1e-12 and h + 1 < hops[v])):
                dist[v], hops[v], pe[v] = nd, h + 1, e
                heapq.heappush(heap, (nd, h + 1, v))
    missing = [v for v in range(n) if not done[v]]
    if missing:
        raise ValueError(f"GPU {missing[0]} cannot be reached from GPU {root}")
    return tuple(pe)


def reversed_forest(ag: tuple[LogicalGraph, Forest], rev: LogicalGraph, x_rev: Fraction) -> Forest | None:
    """The all-gather trees as reduce-scatter trees on ``rev`` (the reversed network's logical
    graph): tree edge ``p -> c`` becomes the message ``c -> p``. None when a message has no
    logical edge there, or when the reversed messages load some link more than the all-gather
    packing loaded any (a router whose path ``c -> p`` is not ``p -> c`` backwards, e.g. one
    that spreads pairs over a fat tree's spines by source: equal bandwidths, other links)."""
    lg, forest = ag
    if not lg.enumerated:
        return forest if not rev.enumerated else None
    index = {(rev.src[e], rev.dst[e]): e for e in range(rev.edges)}
    trees = []
    for t in forest.trees:
        pe = []
        for v, e in enumerate(t.parent_edge):
            if e < 0:
                pe.append(-1)
                continue
            r = index.get((lg.src[e], v))
            if r is None:
                return None
            pe.append(r)
        trees.append(Tree(t.root, t.count, tuple(pe)))
    ratio = load_ratio(rev, trees, float(x_rev), forest.rounds)
    if forest.load_ratio is None or ratio > forest.load_ratio + 1e-9:
        return None
    return Forest(forest.rounds, tuple(trees), ratio, forest.method, 0.0)


def load_ratio(lg: LogicalGraph, trees: Sequence[Tree], x: float, rounds: int) -> float:
    """``max_l load_l / (R · b_l · x*)`` of ``trees`` (each edge loading every link of its route)."""
    bw = [ln.bandwidth for ln in lg.physical.links]
    load = [0.0] * len(bw)
    for t in trees:
        for e in t.parent_edge:
            if e >= 0:
                for li in lg.routes[e]:
                    load[li] += t.count
    return max((load[i] / (bw[i] * x * rounds) for i in range(len(bw)) if load[i]), default=1.0)
