"""The logical graph trees are packed on: GPU-to-GPU edges that the network routes without a GPU
in between.

Rules:

* A message between two GPUs follows the network's own routing (collhub simulates every SEND on
  its router's path), so a tree edge ``u -> t`` costs bandwidth on every physical link of
  ``route(u, t)``. Switches only forward; a GPU forwards only what a tree tells it to.
* A logical edge ``u -> t`` exists when ``t`` is reachable from ``u`` through switches only (or by a
  direct link) and the router's path between them has no GPU inside. Direct-link networks keep
  their GPU links; on a switch fabric every pair inside the fabric is an edge.
* A *pure switch fabric* (no GPU-GPU link; every GPU has a link to and from one connected switch
  network) with more than :data:`EXPLICIT_PAIRS` ordered pairs is not enumerated: there the
  forest is the star of every root (see ``_packing.py``).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from hub.topology import LinkGraph

__all__ = ["EXPLICIT_PAIRS", "LogicalGraph", "logical_graph"]

#: most ordered GPU pairs whose routes are enumerated on a pure switch fabric
EXPLICIT_PAIRS = 64 * 63


@dataclass
class LogicalGraph:
    """Logical edges ``src[i] -> dst[i]`` over the physical links ``routes[i]`` of ``physical``."""

    physical: LinkGraph
    npus: int
    src: list[int] = field(default_factory=list)
    dst: list[int] = field(default_factory=list)
    routes: list[tuple[int, ...]] = field(default_factory=list)
    out_edges: list[list[int]] = field(default_factory=list)
    #: a pure switch fabric: every ordered pair is an edge (maybe not enumerated)
    fabric: bool = False
    enumerated: bool = True

    @property
    def edges(self) -> int:
        return len(self.src)


def _pure_fabric(g: LinkGraph) -> bool:
    n = g.npus
    if any(ln.src < n and ln.dst < n for ln in g.links):
        return False
    comp = list(range(g.devices))

    def find(a: int) -> int:
        while comp[a] != a:
            comp[a] = comp[comp[a]]
            a = comp[a]
        return a

    for ln in g.links:
        if ln.src >= n and ln.dst >= n:
            comp[find(ln.src)] = find(ln.dst)
    roots = set()
    for u in range(n):
        ups = {find(g.links[li].dst) for li in g.out_links[u]}
        downs = {find(g.links[li].src) for li in g.in_links[u]}
        if not ups or not downs:
            return False
        roots |= ups | downs
    return len(roots) == 1


def logical_graph(g: LinkGraph, reverse: bool = False) -> LogicalGraph:
    """The logical graph of ``g`` (``reverse``: of the reversed network, for reduce-scatter trees;
    an edge ``u -> t`` there is the message ``t -> u`` on ``g``, over ``route(t, u)``)."""
    n = g.npus
    lg = LogicalGraph(g, n, out_edges=[[] for _ in range(n)])
    lg.fabric = _pure_fabric(g)
    if lg.fabric and n * (n - 1) > EXPLICIT_PAIRS:
        lg.enumerated = False
        return lg
    for u in range(n):
        for t in _reachable(g, u, reverse):
            a, b = (t, u) if reverse else (u, t)
            route = g.route(a, b)
            if any(g.links[li].dst < n for li in route[:-1]):
                continue  # the router sends this pair through another GPU
            lg.out_edges[u].append(len(lg.src))
            lg.src.append(u)
            lg.dst.append(t)
            lg.routes.append(route)
    return lg


def _reachable(g: LinkGraph, u: int, reverse: bool) -> list[int]:
    """GPUs reachable from GPU ``u`` through switches only (against the links with ``reverse``)."""
    n = g.npus
    seen = {u}
    out: list[int] = []
    todo = deque([u])
    while todo:
        v = todo.popleft()
        for li in g.in_links[v] if reverse else g.out_links[v]:
            w = g.links[li].src if reverse else g.links[li].dst
            if w in seen:
                continue
            seen.add(w)
            if w < n:
                out.append(w)
            else:
                todo.append(w)
    return sorted(out)
