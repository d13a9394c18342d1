"""Lower bounds on the makespan of a problem, in the model's ns (``conventions.md`` §3).

* ingress: rank v must receive N_v chunks; its ingress ports (the last link of each logical
  edge into v) each take one chunk per ``hold`` ns, so T >= N_v / sum(1 / hold), and with k equal
  ports T >= (ceil(N_v / k) - 1) * hold + arrive (whole chunks; the last one must arrive);
* egress (all-to-all): the same for the chunks a rank must send;
* cut (multi-node): the chunks that must enter a node, over the ports into it;
* latency: the cheapest uncontended arrival of every chunk at every destination.
"""

from __future__ import annotations

import heapq
from collections import defaultdict

from ._problem import Problem

__all__ = ["lower_bound"]


def _port_bound(problem: Problem, edge_ids: list[int], end: str, n: int) -> float:
    """Time to pass ``n`` chunks through the ports of ``edge_ids``.

    Equal ports (the usual case): some port takes ceil(n/k) chunks one after the other, and its
    last one still has to arrive: ``(ceil(n/k) - 1) * hold + min arrive``. Otherwise the fluid
    bound ``n / sum(1/hold)``."""
    best: dict[int, int] = defaultdict(lambda: 1 << 62)
    arrive = 1 << 62
    for ei in edge_ids:
        e = problem.edges[ei]
        port = e.last if end == "in" else e.resources[0]
        best[port] = min(best[port], e.hold)
        arrive = min(arrive, e.arrive)
    if not best or n <= 0:
        return 0.0
    holds = set(best.values())
    if len(holds) == 1:
        (h,) = holds
        return float((-(-n // len(best)) - 1) * h + arrive)
    return n / sum(1.0 / h for h in best.values())


def _latency(problem: Problem) -> int:
    worst = 0
    for src in sorted({ch.src for ch in problem.chunks}):
        dist = {src: 0}
        heap = [(0, src)]
        while heap:
            d, u = heapq.heappop(heap)
            if d > dist.get(u, 1 << 62):
                continue
            for ei in problem.out_edges[u]:
                e = problem.edges[ei]
                nd = d + e.arrive
                if nd < dist.get(e.dst, 1 << 62):
                    dist[e.dst] = nd
                    heapq.heappush(heap, (nd, e.dst))
        for ch in problem.chunks:
            if ch.src == src:
                worst = max(worst, max((dist.get(v, 0) for v in ch.dests), default=0))
    return worst


def _cut(problem: Problem, group: set[int]) -> float:
    need = sum(1 for ch in problem.chunks if ch.src not in group and any(d in group for d in ch.dests))
    best: dict[int, int] = defaultdict(lambda: 1 << 62)
    for v in group:
        for ei in problem.in_edges[v]:
            e = problem.edges[ei]
            if e.src not in group:
                best[e.last] = min(best[e.last], e.hold)
    rate = sum(1.0 / h for h in best.values())
    return need / rate if rate else 0.0


def lower_bound(problem: Problem, node_size: int | None = None) -> tuple[float, str]:
    """The best of the bounds above and which one it is (``node_size``: ranks per node, for cuts)."""
    need_in: dict[int, int] = defaultdict(int)
    need_out: dict[int, int] = defaultdict(int)
    for ch in problem.chunks:
        for v in ch.dests:
            need_in[v] += 1
        need_out[ch.src] += 1 if problem.collective == "allgather" else len(ch.dests)
    best, which = 0.0, "none"
    for v, n in need_in.items():
        b = _port_bound(problem, problem.in_edges[v], "in", n)
        if b > best:
            best, which = b, f"ingress of rank {v}"
    if problem.collective == "alltoall":
        for v, n in need_out.items():
            b = _port_bound(problem, problem.out_edges[v], "out", n)
            if b > best:
                best, which = b, f"egress of rank {v}"
    if node_size and problem.ranks > node_size:
        for n in range(problem.ranks // node_size):
            cut = _cut(problem, set(range(n * node_size, (n + 1) * node_size)))
            if cut > best:
                best, which = cut, f"cut into node {n}"
    lat = _latency(problem)
    if lat > best:
        best, which = float(lat), "latency (cheapest path)"
    return best, which
