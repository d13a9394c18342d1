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

    def reversed(self) -> Network:
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


def _unwind(lg: LinkGraph) -> tuple[np.ndarray, ...]:
    """Virtual NPU links through the switches of ``lg`` (see the module docstring), vectorised:
    switch-to-switch latencies by Floyd-Warshall, NPU-to-NPU by min-plus products."""
    n, dev = lg.npus, lg.devices
    S = dev - n
    arr = np.array([(ln.src, ln.dst, ln.bandwidth, ln.latency) for ln in lg.links], dtype=np.float64).reshape(-1, 4)
    a, b = arr[:, 0].astype(np.int64), arr[:, 1].astype(np.int64)
    bw, lat = arr[:, 2], arr[:, 3]
    up_m = (a < n) & (b >= n)
    down_m = (a >= n) & (b < n)
    ss_m = (a >= n) & (b >= n)
    up = np.bincount(a[up_m], weights=bw[up_m], minlength=n)
    down = np.bincount(b[down_m], weights=bw[down_m], minlength=n)
    U = np.full((n, S), np.inf)
    np.minimum.at(U, (a[up_m], b[up_m] - n), lat[up_m])
    D = np.full((S, n), np.inf)
    np.minimum.at(D, (a[down_m] - n, b[down_m]), lat[down_m])
    SS = np.full((S, S), np.inf)
    np.fill_diagonal(SS, 0.0)
    np.minimum.at(SS, (a[ss_m] - n, b[ss_m] - n), lat[ss_m])
    for k in range(S):
        np.minimum(SS, SS[:, k, None] + SS[None, k, :], out=SS)
    US = np.min(U[:, :, None] + SS[None, :, :], axis=1)  # (n, S): NPU -> any switch
    L = np.empty((n, n))
    step = max(1, (1 << 22) // max(S * n, 1))
    for r in range(0, n, step):
        L[r : r + step] = np.min(US[r : r + step, :, None] + D[None, :, :], axis=1)
    np.fill_diagonal(L, np.inf)
    src, dst = np.nonzero(np.isfinite(L))
    peers_out = np.bincount(src, minlength=n).astype(np.float64)
    peers_in = np.bincount(dst, minlength=n).astype(np.float64)
    vbw = np.minimum(up[src] / peers_out[src], down[dst] / peers_in[dst])
    return src, dst, vbw, L[src, dst]


def _check_connected(npus: int, src: np.ndarray, dst: np.ndarray, label: str) -> None:
    """Every NPU must reach every other (all-gather needs it): forward and backward reachability from 0."""
    for a, b, word in ((src, dst, "reach"), (dst, src, "be reached from")):
        seen = np.zeros(npus, dtype=bool)
        seen[0] = True
        frontier = np.array([0])
        order = np.argsort(a, kind="stable")
        starts = np.searchsorted(a[order], np.arange(npus + 1))
        while frontier.size:
            nxt = np.concatenate([b[order[starts[f] : starts[f + 1]]] for f in frontier.tolist()])
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
    if n < 2:
        raise TopologyFormatError(f"topology {label!r} has {n} NPU; a collective needs at least 2")
    arr = np.array(
        [(ln.src, ln.dst, ln.bandwidth, ln.latency) for ln in lg.links if ln.src < n and ln.dst < n], dtype=np.float64
    ).reshape(-1, 4)
    src, dst = arr[:, 0].astype(np.int64), arr[:, 1].astype(np.int64)
    bw, lat = arr[:, 2], arr[:, 3]
    unwound = 0
    if lg.switches:
        vs, vd, vbw, vlat = _unwind(lg)
        unwound = int(vs.size)
        # a direct link and a switch path between the same pair: one link with both capacities
        key = np.concatenate([src * n + dst, vs * n + vd])
        allbw, alllat = np.concatenate([bw, vbw]), np.concatenate([lat, vlat])
        order = np.argsort(key, kind="stable")
        key, allbw, alllat = key[order], allbw[order], alllat[order]
        first = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
        bw = np.add.reduceat(allbw, first) if key.size else allbw
        lat = np.minimum.reduceat(alllat, first) if key.size else alllat
        src, dst = key[first] // n, key[first] % n
    src, dst = src.astype(np.int32), dst.astype(np.int32)
    bad = np.flatnonzero(~(bw > 0))
    if bad.size:
        i = int(bad[0])
        raise TopologyFormatError(f"topology {label!r}: link {src[i]}->{dst[i]} has bandwidth {bw[i]}; must be > 0")
    _check_connected(n, src, dst, label)
    return Network(n, src, dst, bw, lat, label, unwound)
