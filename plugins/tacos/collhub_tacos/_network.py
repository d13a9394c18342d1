"""The point-to-point network the greedy matcher runs on, built from any collhub topology.

TACOS works on NPU-to-NPU links only. collhub link graphs may also hold switch devices
(``fattree:LxN``, ``ring:4,switch:8``); they are *unwound* the way TACOS does it: every NPU
gets a virtual link to every NPU it reaches through switches alone, and the virtual links share
the physical ports evenly. NPU ``u``'s virtual link to ``v`` gets ``min(up(u)/peers(u),
down(v)/peers(v))`` GB/s, where ``up``/``down`` are the NPU's total switch-facing bandwidths and
``peers`` the number of NPUs it reaches that way; its latency is the smallest switch-path latency.
So a rank that sends to all its switch peers at once finishes when its port would have finished
sending them one after another, which is what the congestion-aware simulator then replays.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from hub.errors import TopologyFormatError
from hub.topology import LinkGraph, Topology

__all__ = ["Network", "network_of"]


@dataclass(frozen=True)
class Network:
    """Directed NPU-to-NPU links: ``src``, ``dst`` (int32), ``bandwidth`` (GB/s = 2^30 B/s) and
    ``latency`` (ns), one entry per link; ``unwound`` counts the virtual links made from switches."""

    npus: int
    src: np.ndarray
    dst: np.ndarray
    bandwidth: np.ndarray
    latency: np.ndarray
    label: str
    unwound: int = 0

    @property
    def links(self) -> int:
        return int(self.src.shape[0])

    def reversed(self) -> "Network":
        """The same links pointing the other way (the reversed time-expanded network of RS)."""
        return Network(self.npus, self.dst, self.src, self.bandwidth, self.latency, self.label, self.unwound)

    def link_times_us(self, chunk_bytes: float, model: str) -> tuple[np.ndarray, np.ndarray]:
        """Per link: (busy time, arrival delay) of one chunk in µs.

        ``tacos``: the link is busy for latency + chunk/bandwidth and the chunk arrives then.
        ``pipelined``: the link is busy for chunk/bandwidth only; the chunk arrives a latency later
        (ASTRA-sim's store-and-forward link: the next message may start while one is in flight).
        """
        serial = chunk_bytes / (self.bandwidth * float(1 << 30) / 1e6)
        lat = self.latency / 1000.0
        if model == "tacos":
            return serial + lat, serial + lat
        return serial, serial + lat


def _unwind(lg: LinkGraph) -> tuple[list[tuple[int, int, float, float]], int]:
    """Virtual NPU links through the switches of ``lg`` (see the module docstring)."""
    n, dev = lg.npus, lg.devices
    up = np.zeros(n)
    down = np.zeros(n)
    up_of: list[list[tuple[int, float]]] = [[] for _ in range(n)]  # npu -> [(switch, latency)]
    down_of: list[list[tuple[int, float]]] = [[] for _ in range(n)]
    sw_adj: list[list[tuple[int, float]]] = [[] for _ in range(dev)]
    for ln in lg.links:
        if ln.src < n <= ln.dst:
            up[ln.src] += ln.bandwidth
            up_of[ln.src].append((ln.dst, ln.latency))
        elif ln.dst < n <= ln.src:
            down[ln.dst] += ln.bandwidth
            down_of[ln.dst].append((ln.src, ln.latency))
        elif ln.src >= n and ln.dst >= n:
            sw_adj[ln.src].append((ln.dst, ln.latency))
    # switch-to-switch latencies (Dijkstra from each switch; switches are few)
    sw_dist: dict[int, dict[int, float]] = {}
    for s in range(n, dev):
        dist = {s: 0.0}
        heap = [(0.0, s)]
        while heap:
            d, x = heapq.heappop(heap)
            if d > dist.get(x, np.inf):
                continue
            for y, w in sw_adj[x]:
                if d + w < dist.get(y, np.inf):
                    dist[y] = d + w
                    heapq.heappush(heap, (d + w, y))
        sw_dist[s] = dist
    # NPU v is reachable from u iff some up-switch of u reaches some down-switch of v
    reach_lat: dict[tuple[int, int], float] = {}
    by_down: dict[int, list[tuple[int, float]]] = {}
    for v in range(n):
        for s, lat in down_of[v]:
            by_down.setdefault(s, []).append((v, lat))
    out: list[tuple[int, int, float, float]] = []
    for u in range(n):
        best: dict[int, float] = {}
        for s0, l0 in up_of[u]:
            for s1, d in sw_dist[s0].items():
                for v, l1 in by_down.get(s1, ()):
                    if v != u:
                        t = l0 + d + l1
                        if t < best.get(v, np.inf):
                            best[v] = t
        for v, t in best.items():
            reach_lat[(u, v)] = t
    peers_out = np.zeros(n)
    peers_in = np.zeros(n)
    for u, v in reach_lat:
        peers_out[u] += 1
        peers_in[v] += 1
    for (u, v), t in reach_lat.items():
        out.append((u, v, min(up[u] / peers_out[u], down[v] / peers_in[v]), t))
    return out, len(out)


def _check_connected(npus: int, src: np.ndarray, dst: np.ndarray, label: str) -> None:
    """Every NPU must reach every other (all-gather needs it): forward and backward reachability from 0."""
    for a, b, word in ((src, dst, "reach"), (dst, src, "be reached from")):
        seen = np.zeros(npus, dtype=bool)
        seen[0] = True
        frontier = np.array([0])
        order = np.argsort(a, kind="stable")
        starts = np.searchsorted(a[order], np.arange(npus + 1))
        while frontier.size:
            nxt = np.concatenate([b[order[starts[f]:starts[f + 1]]] for f in frontier.tolist()])
            nxt = np.unique(nxt[~seen[nxt]]) if nxt.size else nxt
            seen[nxt] = True
            frontier = nxt
        if not seen.all():
            lost = int(np.flatnonzero(~seen)[0])
            raise TopologyFormatError(
                f"topology {label!r} is disconnected: NPU 0 cannot {word} NPU {lost} "
                f"({int((~seen).sum())} of {npus} NPUs cut off)",
                hint="every NPU must reach every other over links (and switches) for a collective",
            )


def network_of(topology: Topology) -> Network:
    """The NPU-to-NPU network of ``topology`` (switches unwound); refuses disconnected ones."""
    lg = topology.to_link_graph()
    try:
        label = topology.to_string()
    except Exception:  # noqa: BLE001 - hand-made graphs have no string form
        label = getattr(lg, "name", "link graph")
    n = lg.npus
    direct = [(ln.src, ln.dst, ln.bandwidth, ln.latency) for ln in lg.links if ln.src < n and ln.dst < n]
    unwound = 0
    if lg.switches:
        virtual, unwound = _unwind(lg)
        have = {(a, b) for a, b, _, _ in direct}
        # a direct link and a switch path between the same pair: keep both ports' capacity in one link
        merged: dict[tuple[int, int], tuple[float, float]] = {(a, b): (bw, lat) for a, b, bw, lat in direct}
        for a, b, bw, lat in virtual:
            if (a, b) in have:
                obw, olat = merged[(a, b)]
                merged[(a, b)] = (obw + bw, min(olat, lat))
            else:
                merged[(a, b)] = (bw, lat)
        direct = [(a, b, bw, lat) for (a, b), (bw, lat) in merged.items()]
    if n < 2:
        raise TopologyFormatError(f"topology {label!r} has {n} NPU; a collective needs at least 2")
    arr = np.array(direct, dtype=np.float64).reshape(-1, 4)
    src = arr[:, 0].astype(np.int32)
    dst = arr[:, 1].astype(np.int32)
    bw, lat = arr[:, 2].copy(), arr[:, 3].copy()
    bad = np.flatnonzero(~(bw > 0))
    if bad.size:
        i = int(bad[0])
        raise TopologyFormatError(f"topology {label!r}: link {src[i]}->{dst[i]} has bandwidth {bw[i]}; must be > 0")
    _check_connected(n, src, dst, label)
    return Network(n, src, dst, bw, lat, label, unwound)
