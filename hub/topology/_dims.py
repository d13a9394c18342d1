"""ASTRA-sim-style dimensional topologies (Ring / FullyConnected / Switch per dimension)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import TopologyFormatError
from ._base import Topology
from ._graph import DimensionOrderRouter, Link, LinkGraph

__all__ = ["KINDS", "Dimension", "DimensionalTopology", "blocks_link_graph"]

#: ASTRA-sim's building blocks, spelled as in network.yml (case-sensitive there).
KINDS: tuple[str, ...] = ("Ring", "FullyConnected", "Switch")
#: Short names used in topology strings.
SHORT: dict[str, str] = {"Ring": "ring", "FullyConnected": "fc", "Switch": "switch"}


def _fmt(x: float) -> str:
    """A number without a useless '.0' (50.0 -> '50', 12.5 -> '12.5')."""
    return str(int(x)) if float(x).is_integer() else repr(float(x))


@dataclass(frozen=True)
class Dimension:
    """One dimension: ``kind`` (Ring / FullyConnected / Switch), ``npus`` (> 1), ``bandwidth`` in
    GB/s meaning 2^30 B/s per link and direction, ``latency`` in ns per hop."""

    kind: str
    npus: int
    bandwidth: float
    latency: float

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise TopologyFormatError(f"unknown dimension kind {self.kind!r}", hint="one of: " + ", ".join(KINDS))
        if int(self.npus) != self.npus or self.npus < 2:
            raise TopologyFormatError(f"{self.kind} dimension needs at least 2 NPUs, got {self.npus}")
        if not self.bandwidth > 0:
            raise TopologyFormatError(f"{self.kind} dimension: bandwidth must be > 0 GB/s, got {self.bandwidth}")
        if not self.latency >= 0:
            raise TopologyFormatError(f"{self.kind} dimension: latency must be >= 0 ns, got {self.latency}")

    def hops(self, a: int, b: int) -> int:
        """Hops between coordinates ``a`` and ``b`` in this dimension (ASTRA-sim's unaware model)."""
        if a == b:
            return 0
        if self.kind == "Ring":
            d = abs(a - b)
            return min(d, self.npus - d)
        return 1 if self.kind == "FullyConnected" else 2

    def to_string(self) -> str:
        return f"{SHORT[self.kind]}:{self.npus}@bw={_fmt(self.bandwidth)},lat={_fmt(self.latency)}"


class DimensionalTopology(Topology):
    """Stacked ASTRA-sim dimensions; NPU ids decompose with dimension 0 varying fastest."""

    def __init__(self, dims: Sequence[Dimension]) -> None:
        if not dims:
            raise TopologyFormatError("a topology needs at least one dimension")
        self.dims: tuple[Dimension, ...] = tuple(dims)
        strides = []
        s = 1
        for d in self.dims:
            strides.append(s)
            s *= d.npus
        self.strides: tuple[int, ...] = tuple(strides)
        self._npus = s
        self._graph: LinkGraph | None = None

    @property
    def npus(self) -> int:
        return self._npus

    def coords(self, npu: int) -> tuple[int, ...]:
        """Per-dimension coordinates of ``npu`` (dimension 0 fastest): for [2, 8, 4], 47 -> (1, 7, 2)."""
        return tuple((npu // st) % d.npus for st, d in zip(self.strides, self.dims, strict=False))

    def to_string(self) -> str:
        return ",".join(d.to_string() for d in self.dims)

    def describe(self) -> str:
        parts = [f"{d.kind} {d.npus} ({_fmt(d.bandwidth)} GB/s, {_fmt(d.latency)} ns)" for d in self.dims]
        return f"{' x '.join(parts)} = {self._npus} NPUs (dimension 0 fastest)"

    def network_yml(self) -> str:
        """ASTRA-sim's analytical ``network.yml`` (four lists of equal length)."""

        def lst(values: Sequence[object]) -> str:
            return "[ " + ", ".join(str(v) for v in values) + " ]"

        return (
            f"topology: {lst([d.kind for d in self.dims])}\n"
            f"npus_count: {lst([d.npus for d in self.dims])}\n"
            f"bandwidth: {lst([float(d.bandwidth) for d in self.dims])}  # GB/s (2^30 B/s)\n"
            f"latency: {lst([float(d.latency) for d in self.dims])}  # ns\n"
        )

    def to_link_graph(self) -> LinkGraph:
        """The equivalent link graph: per dimension and group, ring links in both directions, all
        pairs for FullyConnected, and one switch device per Switch group (for 1-D Switch its id is
        ``npus``, as in ASTRA-sim's congestion-aware backend); routing in dimension order."""
        if self._graph is None:
            self._graph = blocks_link_graph(
                [(d.kind, d.npus, d.bandwidth, d.latency) for d in self.dims], spec=self.to_string()
            )
        return self._graph

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DimensionalTopology) and self.dims == other.dims

    def __hash__(self) -> int:
        return hash(self.dims)


def blocks_link_graph(
    blocks: Sequence[tuple[str, int, float, float]], *, spec: str | None = None, name: str = "link graph"
) -> LinkGraph:
    """A link graph from stacked blocks ``(kind, n, bandwidth, latency)``; kind in Ring, Line,
    FullyConnected, Switch. A Ring of 2 is a single pair of links (no duplicates)."""
    strides = []
    total = 1
    for _, n, _, _ in blocks:
        strides.append(total)
        total *= n
    links: list[Link] = []
    seen: set[tuple[int, int]] = set()
    switch_of: dict[int, dict[int, int]] = {}
    next_switch = total

    def add(a: int, b: int, bw: float, lat: float) -> None:
        if (a, b) not in seen:
            seen.add((a, b))
            links.append(Link(a, b, bw, lat))

    for d, (kind, n, bw, lat) in enumerate(blocks):
        st = strides[d]
        # group bases: NPU ids whose coordinate d is 0
        bases = [npu for npu in range(total) if (npu // st) % n == 0]
        for base in bases:
            members = [base + i * st for i in range(n)]
            if kind == "Ring":
                for i in range(n):
                    a, b = members[i], members[(i + 1) % n]
                    add(a, b, bw, lat)
                    add(b, a, bw, lat)
            elif kind == "Line":
                for i in range(n - 1):
                    add(members[i], members[i + 1], bw, lat)
                    add(members[i + 1], members[i], bw, lat)
            elif kind == "FullyConnected":
                for a in members:
                    for b in members:
                        if a != b:
                            add(a, b, bw, lat)
            elif kind == "Switch":
                sw = next_switch
                next_switch += 1
                switch_of.setdefault(d, {})[base] = sw
                for a in members:
                    add(a, sw, bw, lat)
                    add(sw, a, bw, lat)
            else:
                raise TopologyFormatError(f"unknown block kind {kind!r}")
    router = DimensionOrderRouter([(k, n) for k, n, _, _ in blocks], switch_of)
    return LinkGraph(total, links, switches=next_switch - total, router=router, spec=spec, name=name)
