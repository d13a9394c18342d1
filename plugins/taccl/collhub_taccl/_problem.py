"""The synthesis problem: logical edges between ranks, the resources they occupy, the chunks.

Every input (a collhub topology, an ASTRA-sim network.yml, or TACCL's profile + sketch) becomes
a :class:`~hub.topology.LinkGraph` first, so the model and ``hub.simulate`` see one network.
A *logical edge* is an ordered rank pair whose route in that graph crosses no other rank (a
direct link, or a path through switch devices). Its costs follow the congestion-aware model of
``hub.simulate`` for one chunk: ``arrive`` = sum over hops of ``floor(latency + bytes/B')`` and
``hold`` = ``floor(bytes/B')`` of the slowest hop, during which every link of the route (its
*resources*: links and switch ports) is busy. Costs are integer nanoseconds.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from hub.errors import UsageError
from hub.topology import LinkGraph, bytes_per_ns

__all__ = ["Chunk", "Edge", "Problem", "RelayRule", "build_problem"]


@dataclass(frozen=True)
class Edge:
    """A logical edge ``src -> dst`` (ranks) with its one-chunk costs in ns."""

    src: int
    dst: int
    arrive: int
    hold: int
    resources: tuple[int, ...]
    remote: bool = False  # crosses nodes (TACCL relay rules apply)
    last: int = -1  # the route's last link (the destination's ingress port)


@dataclass(frozen=True)
class Chunk:
    """Chunk ``id``: starts at rank ``src`` (slot ``index`` of that rank's data), must reach ``dests``."""

    id: int
    src: int
    index: int
    dests: tuple[int, ...]
    dst: int = -1  # all-to-all: the one destination; -1 for all-gather


@dataclass(frozen=True)
class RelayRule:
    """TACCL's relay sketch: which chunks a sender may put on an inter-node edge."""

    gpus_per_node: int
    rev_map: dict[int, frozenset[int]] | None  # sender local id -> local ids of chunk sources
    enforce_ordering: bool = False
    reversed: bool = False  # on a transposed problem the sender is the edge's dst

    def sender(self, edge: Edge) -> int:
        return edge.dst if self.reversed else edge.src

    def allows(self, chunk_src: int, edge: Edge) -> bool:
        if not edge.remote or self.rev_map is None:
            return True
        allowed = self.rev_map.get(self.sender(edge) % self.gpus_per_node)
        return allowed is not None and chunk_src % self.gpus_per_node in allowed


@dataclass
class Problem:
    """A non-combining collective (``allgather`` or ``alltoall``) to route and schedule."""

    ranks: int
    edges: list[Edge]
    resources: list[str]
    chunks: list[Chunk]
    collective: str
    chunks_per_rank: int
    chunk_bytes: int
    relay: RelayRule | None = None
    symmetries: list[tuple[int, ...]] = field(default_factory=list)  # rank permutations
    resource_of_port: dict[str, int] = field(default_factory=dict)
    out_edges: list[list[int]] = field(init=False)
    in_edges: list[list[int]] = field(init=False)
    edge_of: dict[tuple[int, int], int] = field(init=False)

    def __post_init__(self) -> None:
        self.out_edges = [[] for _ in range(self.ranks)]
        self.in_edges = [[] for _ in range(self.ranks)]
        self.edge_of = {}
        for i, e in enumerate(self.edges):
            self.out_edges[e.src].append(i)
            self.in_edges[e.dst].append(i)
            self.edge_of[(e.src, e.dst)] = i

    def allowed(self, chunk: Chunk, ei: int) -> bool:
        return self.relay is None or self.relay.allows(chunk.src, self.edges[ei])

    def transposed(self) -> Problem:
        """The same network with every edge reversed (a reduce-scatter is a reversed all-gather
        on it); edge i of the result is the reverse of edge i here."""

        def ingress(e: Edge) -> int:  # reversed, the original egress port is the ingress
            outs = [r for r in e.resources if self.resources[r].endswith(":remote-out")]
            return outs[0] if outs else e.resources[0]

        edges = [Edge(e.dst, e.src, e.arrive, e.hold, e.resources, e.remote, ingress(e)) for e in self.edges]
        relay = None
        if self.relay is not None:
            # reversed, the restriction applies to the receiving end of the transposed edge
            relay = RelayRule(
                self.relay.gpus_per_node, self.relay.rev_map, self.relay.enforce_ordering, not self.relay.reversed
            )
        return Problem(
            self.ranks,
            edges,
            self.resources,
            self.chunks,
            self.collective,
            self.chunks_per_rank,
            self.chunk_bytes,
            relay,
            self.symmetries,
        )

    def is_symmetric(self) -> bool:
        """Whether every edge has a reverse with the same costs."""
        for e in self.edges:
            j = self.edge_of.get((e.dst, e.src))
            if j is None or self.edges[j].arrive != e.arrive or self.edges[j].hold != e.hold:
                return False
        return True

    # -- shortest-path structure ---------------------------------------------------------------
    def hops_from(self, src: int, ok: Callable[[int], bool]) -> list[int]:
        """BFS hop distances from ``src`` over the edges ``ok`` accepts (-1: unreachable)."""
        dist = [-1] * self.ranks
        dist[src] = 0
        todo = deque([src])
        while todo:
            u = todo.popleft()
            for ei in self.out_edges[u]:
                v = self.edges[ei].dst
                if dist[v] < 0 and ok(ei):
                    dist[v] = dist[u] + 1
                    todo.append(v)
        return dist

    def hops_to(self, dst: int, ok: Callable[[int], bool]) -> list[int]:
        dist = [-1] * self.ranks
        dist[dst] = 0
        todo = deque([dst])
        while todo:
            v = todo.popleft()
            for ei in self.in_edges[v]:
                u = self.edges[ei].src
                if dist[u] < 0 and ok(ei):
                    dist[u] = dist[v] + 1
                    todo.append(u)
        return dist

    def dag(self, chunk: Chunk) -> list[int]:
        """Edges on some shortest (fewest-hop) path from the chunk's source to a destination.

        Raises :class:`ValueError` naming the first unreachable destination."""
        ok: Callable[[int], bool] = lambda ei: self.allowed(chunk, ei)  # noqa: E731
        ds = self.hops_from(chunk.src, ok)
        for d in chunk.dests:
            if ds[d] < 0:
                raise ValueError(f"rank {d} cannot be reached from rank {chunk.src}")
        if chunk.dst < 0:
            return [ei for ei, e in enumerate(self.edges) if ds[e.src] >= 0 and ds[e.dst] == ds[e.src] + 1 and ok(ei)]
        dt = self.hops_to(chunk.dst, ok)
        total = ds[chunk.dst]
        return [
            ei
            for ei, e in enumerate(self.edges)
            if ds[e.src] >= 0 and dt[e.dst] >= 0 and ds[e.src] + 1 + dt[e.dst] == total and ok(ei)
        ]


def _logical_edges(graph: LinkGraph, chunk_bytes: int, node_size: int | None) -> tuple[list[Edge], list[str]]:
    npus = graph.npus
    labels = []
    for ln in graph.links:
        src = str(ln.src) if ln.src < npus else f"sw{ln.src - npus}"
        dst = str(ln.dst) if ln.dst < npus else f"sw{ln.dst - npus}"
        labels.append(f"{src}->{dst}")
    # candidate pairs: neighbours, or NPUs that meet behind switch devices only
    cand: set[tuple[int, int]] = set()
    for a in range(npus):
        seen = {a}
        todo = deque([a])
        while todo:
            u = todo.popleft()
            for li in graph.out_links[u]:
                v = graph.links[li].dst
                if v in seen:
                    continue
                seen.add(v)
                if v < npus:
                    cand.add((a, v))
                else:
                    todo.append(v)
    edges = []
    for a, b in sorted(cand):
        route = graph.route(a, b)
        devs = [graph.links[li].dst for li in route[:-1]]
        if any(d < npus for d in devs):
            continue  # the router sends this pair through another rank: not one logical hop
        arrive = 0
        hold = 0
        for li in route:
            ln = graph.links[li]
            ser = chunk_bytes / bytes_per_ns(ln.bandwidth)
            arrive += int(ln.latency + ser)
            hold = max(hold, int(ser))
        remote = node_size is not None and a // node_size != b // node_size
        edges.append(Edge(a, b, max(arrive, 1), max(hold, 1), tuple(route), remote, route[-1]))
    return edges, labels


def build_problem(
    graph: LinkGraph,
    collective: str,
    chunks_per_rank: int,
    chunk_bytes: int,
    *,
    ranks: int | None = None,
    node_size: int | None = None,
    relay: RelayRule | None = None,
    symmetries: Sequence[tuple[int, ...]] = (),
    extra_ports: Sequence[tuple[str, Sequence[tuple[int, int]]]] = (),
) -> Problem:
    """The problem of ``collective`` (``allgather``/``alltoall``) on ``graph``.

    ``extra_ports``: named shared resources, each a list of rank pairs whose edges use it (TACCL's
    per-GPU inter-node ports when there are more than two nodes).
    """
    p = graph.npus if ranks is None else ranks
    if p < 2:
        raise UsageError(f"synthesis needs at least 2 ranks, the network has {p}")
    edges, labels = _logical_edges(graph, chunk_bytes, node_size)
    edges = [e for e in edges if e.src < p and e.dst < p]
    if extra_ports:
        where = {(e.src, e.dst): i for i, e in enumerate(edges)}
        for name, pairs in extra_ports:
            rid = len(labels)
            labels.append(name)
            for pair in pairs:
                i = where.get(pair)
                if i is not None:
                    e = edges[i]
                    # an in-port shared by several links is the destination's ingress (for bounds)
                    last = rid if name.endswith(":remote-in") else e.last
                    edges[i] = Edge(e.src, e.dst, e.arrive, e.hold, (*e.resources, rid), e.remote, last)
    c = chunks_per_rank
    chunks: list[Chunk] = []
    if collective == "allgather":
        for r in range(p):
            for j in range(c):
                chunks.append(Chunk(len(chunks), r, j, tuple(d for d in range(p) if d != r)))
    elif collective == "alltoall":
        for s in range(p):
            for d in range(p):
                if s != d:
                    for j in range(c):
                        chunks.append(Chunk(len(chunks), s, j, (d,), d))
    else:  # pragma: no cover - the synthesizer only asks for the two base collectives
        raise ValueError(collective)
    return Problem(p, edges, labels, chunks, collective, c, chunk_bytes, relay, list(symmetries))
