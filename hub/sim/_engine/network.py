"""The two analytical network models (ASTRA-sim's, to the nanosecond).

Unaware: ``delay = floor(hops * latency + bytes / B')`` per message, truncated once, no
contention. Multi-dimensional: only the first dimension where the coordinates differ counts.
On a link graph: ``floor(sum of route latencies + bytes / B'_min)`` (B'_min = slowest link).

Aware: per hop ``serialization = floor(bytes / B')`` (the link is held that long) and
``arrival = start + floor(latency + bytes / B')``; links are FIFO servers. Both truncations are
ASTRA-sim's own (``static_cast<EventTime>`` of each delay); the engine applies them.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...errors import SimulationError
from ...topology import DimensionalTopology, LinkGraph, Topology, bytes_per_ns

__all__ = ["AwareNetwork", "network_model", "unaware_delays"]


def unaware_delays(topo: Topology, src: np.ndarray, dst: np.ndarray, size: np.ndarray) -> np.ndarray:
    """Per-message delay in ns (int64) of the congestion-unaware model."""
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    size_f = np.asarray(size, dtype=np.int64).astype(np.float64)
    if isinstance(topo, DimensionalTopology):
        out = np.zeros(src.shape, dtype=np.float64)
        todo = src != dst
        for dim, stride in zip(topo.dims, topo.strides, strict=False):
            a = (src // stride) % dim.npus
            b = (dst // stride) % dim.npus
            here = todo & (a != b)  # first dimension where the coordinates differ
            if not here.any():
                continue
            if dim.kind == "Ring":
                d = np.abs(a - b)
                hops = np.minimum(d, dim.npus - d)
            elif dim.kind == "FullyConnected":
                hops = np.ones_like(a)
            else:
                hops = np.full_like(a, 2)
            # same operation order as ASTRA-sim: latency * hops + size / bandwidth, then truncate
            val = dim.latency * hops.astype(np.float64) + size_f / bytes_per_ns(dim.bandwidth)
            out = np.where(here, val, out)
            todo = todo & ~here
        return np.floor(out).astype(np.int64)
    graph = topo.to_link_graph()
    npus = graph.npus
    pair = src * npus + dst
    uniq, inv = np.unique(pair, return_inverse=True)
    lat = np.zeros(uniq.shape, dtype=np.float64)
    bp = np.zeros(uniq.shape, dtype=np.float64)
    for i, key in enumerate(uniq.tolist()):
        s, d = divmod(key, npus)
        route = graph.route(s, d)
        if not route:
            bp[i] = np.inf
            continue
        lat[i] = sum(graph.links[li].latency for li in route)
        bp[i] = min(bytes_per_ns(graph.links[li].bandwidth) for li in route)
    return np.floor(lat[inv] + size_f / bp[inv]).astype(np.int64)


class AwareNetwork:
    """Link tables of a link graph for the congestion-aware engine."""

    def __init__(self, graph: LinkGraph) -> None:
        self.graph = graph
        self.npus = graph.npus
        self.bp: list[float] = [bytes_per_ns(ln.bandwidth) for ln in graph.links]
        self.lat: list[float] = [float(ln.latency) for ln in graph.links]
        self.nlinks = len(graph.links)
        self._routes: dict[int, tuple[int, ...]] = {}
        self.max_hops = 1

    def route(self, src: int, dst: int) -> tuple[int, ...]:
        key = src * self.npus + dst
        r = self._routes.get(key)
        if r is None:
            r = self.graph.route(src, dst)
            self._routes[key] = r
        return r

    def prepare(self, pairs: Sequence[tuple[int, int]]) -> None:
        """Route every pair up front (fails early on unreachable pairs) and record the longest route."""
        for s, d in pairs:
            r = self.route(s, d)
            if not r:
                raise SimulationError(f"no route from NPU {s} to NPU {d} in {self.graph.describe()}")
            self.max_hops = max(self.max_hops, len(r))

    def link_label(self, li: int) -> str:
        ln = self.graph.links[li]
        n = self.npus

        def dev(x: int) -> str:
            return str(x) if x < n else f"sw{x - n}"

        return f"{dev(ln.src)}->{dev(ln.dst)}"


def as_array(values: np.ndarray) -> array:
    return array("q", np.ascontiguousarray(values, dtype=np.int64).tobytes())


def network_model(topo: Topology, mode: str) -> tuple[Any, AwareNetwork | None]:
    """The network model: the unaware delay of a message (evaluated once per message channel by
    the layout: a channel fixes src, dst and size), or the aware model's routed link tables."""
    if mode == "unaware":

        def delay(src: np.ndarray, dst: np.ndarray, size: np.ndarray) -> np.ndarray:
            return unaware_delays(topo, src, dst, size)

        return delay, None
    if isinstance(topo, DimensionalTopology) and len(topo.dims) > 1:
        raise SimulationError(
            f"the congestion-aware model takes 1-D dimensional topologies only (like ASTRA-sim); "
            f"{topo.to_string()!r} has {len(topo.dims)} dimensions",
            hint="use mode='unaware', or simulate its link graph: simulate(alg, topo.to_link_graph(), mode='aware')",
        )
    return None, AwareNetwork(topo.to_link_graph())  # routed per NPU pair by the engine (_engine._routes)
