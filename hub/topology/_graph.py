"""Explicit directed link graphs and their deterministic routing policies.

Devices ``0..npus-1`` are NPUs; switch devices follow (``npus..npus+switches-1``). A link is a
unidirectional FIFO server with a bandwidth (GB/s meaning 2^30 B/s) and a latency (ns).

Routing is a property of the graph, so a simulator never guesses:

* :class:`ShortestPathRouter` (the default for hand-made graphs): fewest hops; at each step the
  next device is the one with the smallest id among those on a shortest path.
* :class:`DimensionOrderRouter`: dimension 0 first (NPU id = dimension-0-fastest coordinates);
  per dimension Ring = shorter direction with ties going "clockwise" (+1, like ASTRA-sim),
  Line = straight, FullyConnected = direct, Switch = through the group's switch.
* :class:`FatTreeRouter`: NPU -> leaf -> (spine ``dst mod spines`` when leaving the leaf) -> leaf -> NPU.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..errors import TopologyFormatError, UsageError
from ._base import Topology

__all__ = [
    "DimensionOrderRouter",
    "FatTreeRouter",
    "Link",
    "LinkGraph",
    "Router",
    "ShortestPathRouter",
]


@dataclass(frozen=True)
class Link:
    """A unidirectional link ``src -> dst`` (device ids), ``bandwidth`` GB/s (2^30 B/s), ``latency`` ns."""

    src: int
    dst: int
    bandwidth: float
    latency: float


class Router:
    """Maps (src NPU, dst NPU) to the device sequence of the route, both ends included."""

    def path(self, graph: LinkGraph, src: int, dst: int) -> list[int]:  # pragma: no cover - abstract
        raise NotImplementedError

    def describe(self) -> str:
        return type(self).__name__


class ShortestPathRouter(Router):
    """Fewest hops; ties broken by the smallest next-device id at every step."""

    def __init__(self) -> None:
        self._dist: dict[int, list[int]] = {}

    def _distances_to(self, graph: LinkGraph, dst: int) -> list[int]:
        dist = self._dist.get(dst)
        if dist is None:
            inf = 1 << 60
            dist = [inf] * graph.devices
            dist[dst] = 0
            todo = deque([dst])
            while todo:
                v = todo.popleft()
                for li in graph.in_links[v]:
                    u = graph.links[li].src
                    if dist[u] == inf:
                        dist[u] = dist[v] + 1
                        todo.append(u)
            self._dist[dst] = dist
        return dist

    def path(self, graph: LinkGraph, src: int, dst: int) -> list[int]:
        dist = self._distances_to(graph, dst)
        if dist[src] >= 1 << 60:
            raise UsageError(f"topology {graph.to_string()!r}: no route from NPU {src} to NPU {dst}")
        out = [src]
        cur = src
        while cur != dst:
            want = dist[cur] - 1
            cur = min(graph.links[li].dst for li in graph.out_links[cur] if dist[graph.links[li].dst] == want)
            out.append(cur)
        return out

    def describe(self) -> str:
        return "shortest path (ties: smallest next device id)"


class DimensionOrderRouter(Router):
    """Dimension-ordered routing over stacked blocks (see the module docstring).

    ``blocks`` lists ``(kind, n)`` per dimension with kind in Ring / Line / FullyConnected / Switch;
    ``switch_of[d]`` maps a group key (the NPU id with coordinate d zeroed) to the switch device of
    that group in dimension d (only for Switch dimensions).
    """

    def __init__(self, blocks: Sequence[tuple[str, int]], switch_of: dict[int, dict[int, int]] | None = None) -> None:
        self.blocks = tuple(blocks)
        self.switch_of = switch_of or {}
        strides = []
        s = 1
        for _, n in self.blocks:
            strides.append(s)
            s *= n
        self.strides = tuple(strides)

    def path(self, graph: LinkGraph, src: int, dst: int) -> list[int]:
        out = [src]
        cur = src
        for d, (kind, n) in enumerate(self.blocks):
            stride = self.strides[d]
            a = (cur // stride) % n
            b = (dst // stride) % n
            if a == b:
                continue
            base = cur - a * stride
            if kind == "Ring":
                fwd = (b - a) % n
                step = 1 if fwd <= n - fwd else -1  # ties go clockwise (i -> i+1), like ASTRA-sim
                while a != b:
                    a = (a + step) % n
                    out.append(base + a * stride)
            elif kind == "Line":
                step = 1 if b > a else -1
                while a != b:
                    a += step
                    out.append(base + a * stride)
            elif kind == "FullyConnected":
                out.append(base + b * stride)
            elif kind == "Switch":
                out.append(self.switch_of[d][base])
                out.append(base + b * stride)
            else:  # pragma: no cover - blocks are validated by the builders
                raise UsageError(f"unknown block kind {kind!r}")
            cur = base + b * stride
        return out

    def describe(self) -> str:
        return "dimension order (dim 0 first; rings: shorter way, ties clockwise)"


class FatTreeRouter(Router):
    """Two-level fat tree: up to the leaf, across spine ``dst mod spines`` when needed, down."""

    def __init__(self, leaves: int, per_leaf: int, spines: int, leaf_base: int, spine_base: int) -> None:
        self.leaves, self.per_leaf, self.spines = leaves, per_leaf, spines
        self.leaf_base, self.spine_base = leaf_base, spine_base

    def path(self, graph: LinkGraph, src: int, dst: int) -> list[int]:
        ls, ld = src // self.per_leaf, dst // self.per_leaf
        if ls == ld:
            return [src, self.leaf_base + ls, dst]
        spine = self.spine_base + dst % self.spines
        return [src, self.leaf_base + ls, spine, self.leaf_base + ld, dst]

    def describe(self) -> str:
        return "up/down (spine = dst mod spines)"


class LinkGraph(Topology):
    """An explicit directed link graph of ``npus`` NPUs plus ``switches`` switch devices.

    ``spec`` is the compact string it was built from (presets), used by :meth:`to_string`.
    At most one link per ordered device pair (parallel NVLinks are one link with summed bandwidth).
    """

    def __init__(
        self,
        npus: int,
        links: Iterable[Link],
        *,
        switches: int = 0,
        router: Router | None = None,
        spec: str | None = None,
        name: str = "link graph",
    ) -> None:
        if npus < 1:
            raise TopologyFormatError(f"a link graph needs at least 1 NPU, got {npus}")
        self._npus = int(npus)
        self.switches = int(switches)
        self.links: tuple[Link, ...] = tuple(links)
        self.router: Router = router or ShortestPathRouter()
        self.spec = spec
        self.name = name
        self.devices = self._npus + self.switches
        self.out_links: list[list[int]] = [[] for _ in range(self.devices)]
        self.in_links: list[list[int]] = [[] for _ in range(self.devices)]
        self._link_of: dict[tuple[int, int], int] = {}
        for i, ln in enumerate(self.links):
            for end in (ln.src, ln.dst):
                if not 0 <= end < self.devices:
                    raise TopologyFormatError(
                        f"link {i} ({ln.src}->{ln.dst}) names device {end}, but there are {self.devices} devices",
                        hint=f"NPUs are 0..{self._npus - 1}, switches {self._npus}..{self.devices - 1}",
                    )
            if ln.src == ln.dst:
                raise TopologyFormatError(f"link {i} is a self-loop on device {ln.src}")
            if not ln.bandwidth > 0:
                raise TopologyFormatError(f"link {i} ({ln.src}->{ln.dst}) has bandwidth {ln.bandwidth}; must be > 0")
            if not ln.latency >= 0:
                raise TopologyFormatError(f"link {i} ({ln.src}->{ln.dst}) has latency {ln.latency}; must be >= 0")
            if (ln.src, ln.dst) in self._link_of:
                raise TopologyFormatError(
                    f"two links {ln.src}->{ln.dst}", hint="merge parallel links into one with the summed bandwidth"
                )
            self._link_of[(ln.src, ln.dst)] = i
            self.out_links[ln.src].append(i)
            self.in_links[ln.dst].append(i)
        self._routes: dict[tuple[int, int], tuple[int, ...]] = {}

    # -- Topology ---------------------------------------------------------------------------
    @property
    def npus(self) -> int:
        return self._npus

    def to_string(self) -> str:
        if self.spec is None:
            raise UsageError(
                "this link graph was built by hand and has no compact string form",
                hint="use a preset such as 'torus:4x4', 'mesh:4x4', 'hypercube:3', 'dgx1' or 'fattree:4x8'",
            )
        return self.spec

    def describe(self) -> str:
        label = self.spec or self.name
        return (
            f"{label}: link graph, {self._npus} NPUs, {self.switches} switches, {len(self.links)} directed links; "
            f"routing: {self.router.describe()}"
        )

    def to_link_graph(self) -> LinkGraph:
        return self

    # -- routing ----------------------------------------------------------------------------
    def link_between(self, src: int, dst: int) -> int:
        """Index of the link ``src -> dst``; :class:`UsageError` if there is none."""
        try:
            return self._link_of[(src, dst)]
        except KeyError:
            raise UsageError(f"topology {self.spec or self.name}: no link {src}->{dst}") from None

    def route(self, src: int, dst: int) -> tuple[int, ...]:
        """Link indices from NPU ``src`` to NPU ``dst`` (cached; empty when src == dst)."""
        key = (src, dst)
        r = self._routes.get(key)
        if r is None:
            if src == dst:
                r = ()
            else:
                devs = self.router.path(self, src, dst)
                r = tuple(self.link_between(a, b) for a, b in zip(devs, devs[1:], strict=False))
            self._routes[key] = r
        return r

    def in_bandwidth(self, device: int) -> float:
        """Sum of the bandwidths (GB/s) of the links into ``device``."""
        return sum(self.links[i].bandwidth for i in self.in_links[device])

    def out_bandwidth(self, device: int) -> float:
        """Sum of the bandwidths (GB/s) of the links out of ``device``."""
        return sum(self.links[i].bandwidth for i in self.out_links[device])

    def diameter(self) -> int:
        """Largest route length in hops over all NPU pairs (following this graph's routing)."""
        return max((len(self.route(a, b)) for a in range(self._npus) for b in range(self._npus) if a != b), default=0)
