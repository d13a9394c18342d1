"""The cut bound of all-gather / reduce-scatter on any link graph, exactly (ForestColl's optimum).

Rules (``../shared/reference/forestcoll.md`` §2-3, in our words):

* ``x* = max over vertex sets S that miss a GPU of |S ∩ GPUs| / B⁺(S)``, switches included on
  either side; ``B⁺(S)`` is the bandwidth of the links leaving ``S``. An all-gather of ``M``
  bytes takes at least ``(M/N)·x*`` (bandwidth term); reduce-scatter is the same on the
  reversed graph.
* Test of a value ``x = p/q`` (integer-scaled bandwidths ``b``): a source with capacity ``q`` to
  every GPU, capacity ``p·b_e`` on every link; ``x ≥ x*`` iff every GPU ``v`` receives a max-flow
  of ``N·q``. A smaller flow's min cut ``S`` (source side) has ratio above ``x``.
* Newton / Dinkelbach: start at the ingress ratio ``(N−1)/min B_in``, move to the ratio of the
  violating cut, stop when no sink is short. Every step raises ``x`` strictly; all arithmetic is
  on integers, so the result is an exact fraction with its certificate cut.
* Sinks: GPUs that colour refinement (1-dimensional Weisfeiler-Leman on the weighted directed
  graph) cannot tell apart usually have equal flows (always on vertex-transitive graphs), so the
  search tests one sink per colour class, and afterwards (``verify``) every sink, by default up
  to :data:`VERIFY_ALL` GPUs; certificates skip that check (it is N max-flows). Whatever is
  tested, the value returned is the ratio of a real cut, hence a valid lower bound;
  ``verified`` says whether every sink confirmed it is also the maximum.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from fractions import Fraction
from math import gcd, lcm

from ...topology import LinkGraph

__all__ = ["CutOptimum", "VERIFY_ALL", "cut_optimum", "integer_bandwidths"]

#: Up to this many GPUs every sink is checked at the optimum (N max-flows), so the value is proven
#: to be the maximum; above it one sink per colour class is (see the module docstring).
VERIFY_ALL = 128


@dataclass(frozen=True)
class CutOptimum:
    """``x = |S ∩ GPUs| / B⁺(S)`` in GPUs per GB/s for the cut ``S`` (device ids, switches included).

    ``verified``: every GPU's max-flow was checked at ``x`` (``x`` is the maximum, not only a bound).
    """

    x: Fraction
    cut: frozenset[int]
    gpus_in_cut: int
    cut_bandwidth: Fraction
    verified: bool
    steps: int


def integer_bandwidths(values: list[float]) -> tuple[list[int], Fraction]:
    """Scale bandwidths to integers: ``(ints, unit)`` with ``value = int · unit`` (exact for
    decimals with few digits; floats are read as their shortest decimal)."""
    fr = [Fraction(repr(float(v))) for v in values]
    den = lcm(*(f.denominator for f in fr)) if fr else 1
    ints = [int(f * den) for f in fr]
    g = 0
    for v in ints:
        g = gcd(g, v)
    g = g or 1
    return [v // g for v in ints], Fraction(g, den)


class _FlowNet:
    """A fixed directed graph (source = vertex ``n``) whose capacities change per test."""

    def __init__(self, n: int, edges: list[tuple[int, int]]) -> None:
        self.n = n + 1
        self.to: list[int] = []
        self.adj: list[list[int]] = [[] for _ in range(self.n)]
        for a, b in edges:  # edge 2i: a -> b, edge 2i+1: its residual twin
            self.adj[a].append(len(self.to))
            self.to.append(b)
            self.adj[b].append(len(self.to))
            self.to.append(a)

    def maxflow(self, caps: list[int], s: int, t: int, limit: int) -> tuple[int, list[int]]:
        """Dinic's max-flow from ``s`` to ``t`` (stops at ``limit``); returns the value and the residual."""
        cap = [0] * len(self.to)
        cap[0::2] = caps
        to, adj, n = self.to, self.adj, self.n
        flow = 0
        while flow < limit:
            level = [-1] * n
            level[s] = 0
            q = deque([s])
            while q:
                u = q.popleft()
                for e in adj[u]:
                    if cap[e] > 0 and level[to[e]] < 0:
                        level[to[e]] = level[u] + 1
                        q.append(to[e])
            if level[t] < 0:
                break
            it = [0] * n
            while flow < limit:
                pushed = self._augment(cap, level, it, s, t, limit - flow)
                if not pushed:
                    break
                flow += pushed
        return flow, cap

    def _augment(self, cap: list[int], level: list[int], it: list[int], s: int, t: int, want: int) -> int:
        """One blocking-flow path (iterative DFS along the level graph)."""
        to, adj = self.to, self.adj
        path: list[int] = []
        u = s
        while True:
            if u == t:
                f = min([want] + [cap[e] for e in path])
                for e in path:
                    cap[e] -= f
                    cap[e ^ 1] += f
                return f
            edges = adj[u]
            while it[u] < len(edges):
                e = edges[it[u]]
                v = to[e]
                if cap[e] > 0 and level[v] == level[u] + 1:
                    break
                it[u] += 1
            else:
                if not path:
                    return 0
                level[u] = -1  # dead end: prune
                e = path.pop()
                u = to[e ^ 1]
                it[u] += 1
                continue
            path.append(edges[it[u]])
            u = to[edges[it[u]]]

    def source_side(self, cap: list[int], s: int) -> set[int]:
        seen = {s}
        q = deque([s])
        while q:
            u = q.popleft()
            for e in self.adj[u]:
                if cap[e] > 0 and self.to[e] not in seen:
                    seen.add(self.to[e])
                    q.append(self.to[e])
        return seen


def colour_classes(graph: LinkGraph, reverse: bool = False) -> list[list[int]]:
    """GPUs grouped by colour refinement (equal colour: indistinguishable by weighted degrees)."""
    links = graph.links
    ins: list[list[tuple[int, float]]] = [[] for _ in range(graph.devices)]
    outs: list[list[tuple[int, float]]] = [[] for _ in range(graph.devices)]
    for ln in links:
        a, b = (ln.dst, ln.src) if reverse else (ln.src, ln.dst)
        outs[a].append((b, ln.bandwidth))
        ins[b].append((a, ln.bandwidth))
    colour = [0 if v < graph.npus else 1 for v in range(graph.devices)]
    count = len(set(colour))
    for _ in range(graph.devices):
        sig = [
            (
                colour[v],
                tuple(sorted((colour[u], w) for u, w in ins[v])),
                tuple(sorted((colour[u], w) for u, w in outs[v])),
            )
            for v in range(graph.devices)
        ]
        ids: dict[object, int] = {}
        colour = [ids.setdefault(s, len(ids)) for s in sig]
        if len(ids) == count:
            break
        count = len(ids)
    groups: dict[int, list[int]] = {}
    for v in range(graph.npus):
        groups.setdefault(colour[v], []).append(v)
    return list(groups.values())


def cut_optimum(graph: LinkGraph, reverse: bool = False, verify: bool | None = None) -> CutOptimum:
    """The exact ``x*`` of all-gather on ``graph`` (reduce-scatter with ``reverse``) and its cut.

    ``verify``: check every sink at the end (default: up to :data:`VERIFY_ALL` GPUs); the value
    is a valid bound either way, the check proves it is the maximum."""
    n, dev = graph.npus, graph.devices
    ints, unit = integer_bandwidths([ln.bandwidth for ln in graph.links])
    pairs = [(ln.dst, ln.src) if reverse else (ln.src, ln.dst) for ln in graph.links]
    src = dev
    net = _FlowNet(dev, pairs + [(src, v) for v in range(n)])
    b_in = [0] * dev
    for (_a, b), w in zip(pairs, ints, strict=True):
        b_in[b] += w
    v0 = min(range(n), key=lambda v: b_in[v])
    if b_in[v0] == 0:
        raise ValueError(f"GPU {v0} has no link in: the network is not connected")
    cut = frozenset(range(dev)) - {v0}
    x = Fraction(n - 1, b_in[v0])
    reps = [g[0] for g in colour_classes(graph, reverse)]
    steps = 0
    while True:
        steps += 1
        better = _violated(net, ints, x, n, reps)
        if better is None:
            break
        cut, x = better
    verified = n <= VERIFY_ALL if verify is None else verify
    if verified and len(reps) < n:
        better = _violated(net, ints, x, n, [v for v in range(n) if v not in set(reps)])
        while better is not None:  # colour classes hid a tighter sink: continue from there
            cut, x = better
            better = _violated(net, ints, x, n, list(range(n)))
    bw = sum((w for (a, b), w in zip(pairs, ints, strict=True) if a in cut and b not in cut), 0)
    gpus = sum(1 for v in cut if v < n)
    return CutOptimum(x / unit, cut, gpus, bw * unit, verified, steps)


def _violated(
    net: _FlowNet, ints: list[int], x: Fraction, n: int, sinks: list[int]
) -> tuple[frozenset[int], Fraction] | None:
    """The tightest violating cut among ``sinks`` at ``x`` (None when every sink gets ``N·q``)."""
    p, q = x.numerator, x.denominator
    caps = [p * w for w in ints] + [q] * n
    s = net.n - 1
    best: tuple[frozenset[int], Fraction] | None = None
    for t in sinks:
        flow, res = net.maxflow(caps, s, t, n * q)
        if flow >= n * q:
            continue
        side = net.source_side(res, s) - {s}
        gpus = sum(1 for v in side if v < n)
        out = sum(w for (e, w) in enumerate(ints) if net.to[2 * e + 1] in side and net.to[2 * e] not in side)
        if out == 0:
            raise ValueError("a group of GPUs has no link out: the network is not connected")
        ratio = Fraction(gpus, out)
        if ratio > x and (best is None or ratio > best[1]):
            best = (frozenset(side), ratio)
    return best
