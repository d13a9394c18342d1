"""NCCL 2.30.7's selection model: the latency/bandwidth table, the time of every (algorithm,
protocol) at a size, the choice, and its channels and threads.

Rules (``ncclTopoTuneModel``, ``ncclTopoGetAlgoTime``, ``topoGetAlgoInfo``), restated:

* bandwidth: ``bwIntra`` on <= 2 nodes, else ``bwInter``; times the graph's channels; Ring LL
  ``min(LLmax, x/2)``, Ring LL128 ``min(0.92 x, ch * ringLL128)``, Tree AllReduce
  ``min(0.92 x, ch * treeCap)`` then Tree LL ``min(x/3.8, LLmax)``, Tree LL128
  ``min(x * (7/9 | 120/128), ch * treeLL128)``, x0.85 for the "tree" pattern, PAT x0.75; NVLS from
  the NVLS graph (``bwIntra * eff * (ch-1)/ch``, x2 AllReduce, else x(ppn-1)/ppn);
  then to algorithm bandwidth (Ring/NVLS/NVLSTree x n/steps, others x0.5; not for non-Ring AG/RS);
* latency: base + per-step hardware latency (Ring: intra steps and inter steps; Tree:
  ``2((ppn-1) intra + log2 N inter)``; PAT ``log2 N inter/3.5 + 2.8 n``; NVLS ``intra (+ inter)``);
* enable: LL128 only on NVLink-or-better intra paths and PXB (PXN on sm >= 90) inter paths;
  NVLSTree off on one node; NVLS across nodes and CollNet need SHARP (off); PAT only 1 GPU/node;
* time = lat x latCount + bytes / (1000 bw), Tree AllReduce bandwidth x correction[log2(bytes/64)],
  Ring Simple AllReduce latency x1.4 (x1.9 before sm80) on several nodes once bytes per channel
  per rank >= 64; the smallest time wins, scanning Tree, Ring, ..., PAT and LL, LL128, Simple;
* channels: from the communicator's count drop one while bytes < ch x threads x threshold; then
  halve threads likewise (NVLS: the NVLS channel count, no tuning).

NCCL computes in C ``float`` (and a few ``double`` products); so does this module (numpy float32),
so printed values agree to the last digit NCCL prints.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from . import _constants as K
from ._constants import ALGOS, COLLS, PROTOS
from ._system import PATH_TYPES, Graph, System

__all__ = ["Choice", "Model", "choose", "model", "times"]

f32 = np.float32
_PXB, _PXN, _NVB = PATH_TYPES.index("PXB"), PATH_TYPES.index("PXN"), PATH_TYPES.index("NVB")


def _log2i(n: int) -> int:
    return n.bit_length() - 1 if n > 0 else -1


@dataclass(frozen=True)
class Model:
    """NCCL's tables for one system: ``lat[coll][algo][proto]`` (us), ``bw[...]`` (GB/s, algorithm
    bandwidth, 0 = disabled), ``max_threads[algo][proto]``, ``thresholds[algo][proto]``."""

    system: System
    lat: tuple[tuple[tuple[float, ...], ...], ...]
    bw: tuple[tuple[tuple[float, ...], ...], ...]
    max_threads: tuple[tuple[int, ...], ...]
    thresholds: tuple[tuple[int, ...], ...]

    def latency(self, coll: str, algo: str, proto: str) -> float:
        return self.lat[COLLS.index(coll)][ALGOS.index(algo)][PROTOS.index(proto)]

    def bandwidth(self, coll: str, algo: str, proto: str) -> float:
        return self.bw[COLLS.index(coll)][ALGOS.index(algo)][PROTOS.index(proto)]


def _max_threads(s: System) -> tuple[tuple[int, ...], ...]:
    simple_ring = 256 if s.ring.bw_intra * s.ring.channels <= 12.0 else K.MAX_THREADS[2]
    mt = [[0, 0, 0] for _ in ALGOS]
    mt[K.TREE] = [K.MAX_THREADS[0], K.MAX_THREADS[1], K.MAX_THREADS[2]]
    mt[K.RING] = [K.MAX_THREADS[0], K.MAX_THREADS[1], simple_ring]
    for a in (K.COLLNET_DIRECT, K.COLLNET_CHAIN, K.NVLS, K.NVLS_TREE):
        mt[a][2] = K.MAX_NTHREADS
    return tuple(tuple(r) for r in mt)


def _thresholds(s: System) -> tuple[tuple[int, ...], ...]:
    th = [list(K.THREAD_THRESHOLD) for _ in ALGOS]
    th[K.RING][0] *= s.ranks
    th[K.COLLNET_DIRECT][2] = th[K.COLLNET_CHAIN][2] = 512
    return tuple(tuple(r) for r in th)


def _graph(s: System, a: int) -> Graph:
    return s.tree if a in (K.TREE, K.PAT) else s.nvls if a in (K.NVLS, K.NVLS_TREE) else s.ring


@dataclass(frozen=True)
class _Ctx:
    """What every cell of the table reads: the system and NCCL's per-system constants."""

    s: System
    n: int
    nodes: int
    cc: int
    ppn: Any  # float32, as NCCL's ``float ppn``
    ll_max: float
    tree_cap: float
    ring128: float
    tree128: float
    nvls_tree_cap: float
    net_overhead: float


def _ctx(s: System) -> _Ctx:
    n, nodes = s.ranks, s.nodes
    cc = 3 if s.sm >= 100 else 2 if s.sm >= 90 else 1 if s.sm >= 80 else 0
    i2 = nodes - 1 if nodes <= 2 else 2
    i1 = cc if nodes == 1 else (1 if s.cpu_vendor == 2 else 0)  # LL: GPU on one node, CPU on several
    return _Ctx(
        s, n, nodes, cc, f32(f32(n) / f32(nodes)), K.LL_MAX[i1][i2], K.TREE_PER_CH[cc][i2],
        K.LL128_PER_CH_RING[cc][i2], K.LL128_PER_CH_TREE[cc][i2], K.NVLS_TREE_PER_CH[cc][i2],
        2.0 if s.cpu_vendor == 2 else 1.0,
    )  # fmt: skip


def _bandwidth(x: _Ctx, coll: str, nsteps: int, a: int, p: int, g: Graph) -> float | None:
    """Algorithm bandwidth of one cell before enabling (None: NVLS with < 2 channels, left unset)."""
    s, nodes, ppn = x.s, x.nodes, x.ppn
    collnet = a in (K.COLLNET_DIRECT, K.COLLNET_CHAIN)
    b = f32(g.bw_intra if nodes <= 2 or collnet else g.bw_inter)
    if a in (K.NVLS, K.NVLS_TREE):
        if g.channels < 2:
            return None
        intra = f32(f32(f32(g.bw_intra) * f32(K.NVLS_EFF[x.cc])) * f32(g.channels - 1)) / f32(g.channels)
        intra = f32(intra * f32(2.0)) if coll == "AllReduce" else f32(intra * f32((ppn - 1) / ppn))
        inter = f32(f32(g.bw_inter) * f32(2 if nodes <= 2 and a == K.NVLS_TREE else 1))
        b = min(intra, inter, f32(x.nvls_tree_cap) if a == K.NVLS_TREE else f32(np.finfo(np.float32).max))
    bus = f32(f32(g.channels) * b)
    if a == K.RING and p == K.LL:
        bus = f32(min(x.ll_max, float(bus) * 0.5))
    if a == K.RING and p == K.LL128:
        bus = f32(min(float(bus) * 0.92, g.channels * x.ring128))
    if a == K.TREE and coll == "AllReduce":
        bus = f32(min(float(bus) * 0.92, g.channels * x.tree_cap))
    if a == K.TREE and p == K.LL:
        bus = f32(min(float(bus) * 1.0 / 3.8, x.ll_max))
    if a == K.TREE and p == K.LL128:
        bus = f32(min(float(bus) * (7.0 / 9.0 if nodes == 1 else 120.0 / 128.0), g.channels * x.tree128))
    if a == K.TREE and s.tree.pattern == 3:
        bus = f32(float(bus) * 0.85)
    if a == K.PAT:
        bus = f32(float(bus) * 0.75)
    if collnet and p != K.SIMPLE:
        bus = f32(0)
    if a == K.COLLNET_DIRECT and p == K.SIMPLE:
        if coll in ("AllGather", "ReduceScatter"):
            bus = f32(ppn * min(f32(g.bw_intra), f32(f32(g.bw_inter) * f32(0.9))))
        else:
            factor = float(ppn) / (1.0 * g.channels)
            factor -= (factor - 1) / 2
            bus = f32(float(bus) / factor)
            if s.sm >= 90:
                bus = f32(float(bus) * 0.85)
    if a in (K.NVLS, K.COLLNET_DIRECT) and coll in ("AllGather", "ReduceScatter") and nodes > 1:
        bus = f32(0)  # needs a CollNet plugin that does the collective (SHARP), off
    if not (a != K.RING and coll in ("AllGather", "ReduceScatter")):
        ratio = f32(1.0 * x.n / nsteps) if a in (K.RING, K.NVLS, K.NVLS_TREE) else f32(0.5)
        bus = f32(bus * ratio)
    return float(bus)


def _latency(x: _Ctx, coll: str, nsteps: int, a: int, p: int, g: Graph) -> float:
    """Latency (us) of one cell."""
    n, nodes = x.n, x.nodes
    latv = f32(K.BASE_LAT[a][p])
    hw_intra = K.HW_NVLINK if g.type_intra == "NVL" else K.HW_PCI
    intra_lat = f32(K.HW_LAT[hw_intra][a][p])
    inter_lat = f32(K.HW_LAT[K.HW_NET][K.TREE if x.ppn == 1 else a][p])  # ppn = 1: fully exposed, Tree's
    inter_lat = f32(inter_lat + f32(g.latency_inter))
    if p == K.SIMPLE:
        inter_lat = f32(inter_lat + f32(g.latency_inter))  # the flush
    ppn_i = n // nodes
    if a == K.RING:
        hw = hw_intra if nodes == 1 else K.HW_NET
        step_lat = f32(K.HW_LAT[hw][a][p])
        if coll in ("Reduce", "Broadcast"):
            if g.same_channels:
                return float(f32(latv + step_lat))
            if p == K.SIMPLE:
                step_lat = f32(K.HW_LAT[hw][K.TREE][p])
            return float(f32(latv + f32(f32(nsteps) * step_lat)))
        over = f32(0.0)
        if nodes > 1:
            over = f32(x.net_overhead * (3 if p == K.SIMPLE else 1))
        intra_lat = max(intra_lat, over)
        inter_steps = 0 if nodes == 1 else 2 * (nodes - 1) if coll == "AllReduce" else nodes - 1
        add = f32(f32(f32(nsteps - inter_steps) * intra_lat) + f32(f32(inter_steps) * inter_lat))
        return float(f32(latv + add))
    if a == K.TREE:
        if coll == "AllReduce":
            inner = f32(f32(f32(ppn_i - 1) * intra_lat) + f32(f32(_log2i(nodes)) * inter_lat))
            latv = f32(latv + f32(f32(2) * inner))
    elif a == K.COLLNET_DIRECT:
        v = 2 * (min(1, ppn_i - 1) * float(intra_lat) + (ppn_i - 1) * 0.4) + float(inter_lat)
        latv = f32(float(latv) + v)
    elif a == K.COLLNET_CHAIN:
        latv = f32(latv + f32(f32(f32(2 * (ppn_i - 1)) * intra_lat) + inter_lat))
    elif a == K.NVLS:
        latv = intra_lat
        if nodes > 1:
            latv = f32(latv + inter_lat)
    elif a == K.NVLS_TREE:
        latv = f32(latv + f32(intra_lat + f32(f32(2 * _log2i(nodes)) * inter_lat)))
    elif a == K.PAT and coll in ("AllGather", "ReduceScatter"):
        latv = f32(float(latv) + (_log2i(nodes) * (float(inter_lat) / 3.5) + n * 2.8))
    return float(latv)


def _enabled(s: System, a: int, p: int) -> bool:
    """NCCL's default enable rules (no NCCL_ALGO / NCCL_PROTO, CollNet off)."""
    if (s.nodes == 1 and a == K.NVLS_TREE) or a in (K.COLLNET_DIRECT, K.COLLNET_CHAIN) or (a == K.NVLS and s.nodes > 1):
        return False
    if p != K.LL128:
        return True
    g = _graph(s, a)
    inter_ok = PATH_TYPES.index(g.type_inter) <= (_PXN if s.sm >= 90 else _PXB)
    return inter_ok and PATH_TYPES.index(g.type_intra) <= _NVB and s.sm >= 70


def _cells(coll: str, a: int, pat_on: bool) -> tuple[int, ...]:
    """The protocols NCCL computes for (collective, algorithm); () = the pair is skipped."""
    if (coll in ("Broadcast", "Reduce") and a != K.RING) or (coll == "AllReduce" and a == K.PAT):
        return ()
    if coll in ("AllGather", "ReduceScatter") and a not in (K.PAT, K.RING, K.NVLS, K.COLLNET_DIRECT):
        return ()
    if a in (K.NVLS, K.NVLS_TREE):
        return (K.SIMPLE,)
    if a == K.PAT:
        return (K.SIMPLE,) if pat_on else ()
    return (K.LL, K.LL128, K.SIMPLE)


@lru_cache(maxsize=256)
def model(s: System) -> Model:
    """NCCL's latency and bandwidth tables for ``s`` (``ncclTopoTuneModel``)."""
    x = _ctx(s)
    n = s.ranks
    pat_on = s.gpus_per_node == 1 and s.sm >= 60
    lat = [[[0.0] * 3 for _ in ALGOS] for _ in COLLS]
    bw = [[[0.0] * 3 for _ in ALGOS] for _ in COLLS]
    for c, coll in enumerate(COLLS):
        nsteps = 2 * (n - 1) if coll == "AllReduce" else n - 1 if coll in ("AllGather", "ReduceScatter") else n
        for a in range(len(ALGOS)):
            g = _graph(s, a)
            for p in _cells(coll, a, pat_on):
                b = _bandwidth(x, coll, nsteps, a, p, g)
                if b is None:
                    continue  # NCCL leaves the cell at 0 (latency too)
                bw[c][a][p] = b if _enabled(s, a, p) else 0.0
                lat[c][a][p] = _latency(x, coll, nsteps, a, p, g)
    return Model(
        s,
        tuple(tuple(tuple(r) for r in t) for t in lat),
        tuple(tuple(tuple(r) for r in t) for t in bw),
        _max_threads(s),
        _thresholds(s),
    )


def _coll_name(coll: str) -> str:
    key = coll.replace("-", "").replace("_", "").lower()
    names = {c.lower(): c for c in COLLS}
    if key not in names:
        raise ValueError(f"unknown collective {coll!r}")
    return names[key]


def times(s: System, coll: str, nbytes: int, pipe_ops: int = 1) -> dict[tuple[str, str], float]:
    """``ncclTopoGetAlgoTime`` for every usable (algorithm, protocol) at ``nbytes`` (NCCL's size for
    tuning: AllReduce the buffer, AllGather / ReduceScatter the total of all ranks), in us."""
    m = model(s)
    c = COLLS.index(_coll_name(coll))
    out: dict[tuple[str, str], float] = {}
    log_size = _log2i(nbytes >> 6)
    for a, algo in enumerate(ALGOS):
        if a in (K.COLLNET_DIRECT, K.COLLNET_CHAIN):
            continue  # collNetSupport is 0: never in the cost table
        if a in (K.NVLS, K.NVLS_TREE) and (not s.nvls_support or (COLLS[c] != "AllReduce" and s.gpus_per_node > 8)):
            continue
        if a == K.NVLS and s.nodes > 1:
            continue
        for p, proto in enumerate(PROTOS):
            bw: Any = f32(m.bw[c][a][p])
            if bw == 0:
                continue
            lat = f32(m.lat[c][a][p])
            if a == K.TREE and COLLS[c] == "AllReduce" and 0 <= log_size < 23:
                bw = f32(bw * f32(K.TREE_CORRECTION[p][log_size]))
            if (
                a == K.RING
                and p == K.SIMPLE
                and s.nodes > 1
                and COLLS[c] == "AllReduce"
                and nbytes // (s.channels * s.ranks) >= 64
            ):
                lat = f32(float(lat) * (1.9 if s.sm < 80 else 1.4))
            lat_count = pipe_ops if a == K.RING else -(-pipe_ops // 8)
            out[(algo, proto)] = float(f32(f32(lat * f32(lat_count)) + f32(f32(nbytes) / f32(f32(1000) * bw))))
    return out


@dataclass(frozen=True)
class Choice:
    """What ``ncclGetAlgoInfo`` decides for one call."""

    collective: str
    nbytes: int
    algorithm: str
    protocol: str
    channels: int
    warps: int
    time_us: float
    times: dict[tuple[str, str], float]


def choose(s: System, coll: str, nbytes: int, *, algorithm: str | None = None, protocol: str | None = None) -> Choice:
    """NCCL's choice at ``nbytes`` (its size for tuning); ``algorithm`` / ``protocol`` restrict the
    candidates like ``NCCL_ALGO`` / ``NCCL_PROTO`` with one name."""
    cname = _coll_name(coll)
    table = times(s, cname, nbytes)
    best: tuple[str, str] | None = None
    best_t = float(np.finfo(np.float32).max)
    for (algo, proto), t in table.items():  # insertion order is NCCL's scan order
        if algorithm is not None and algo.lower() != algorithm.lower():
            continue
        if protocol is not None and proto.lower() != protocol.lower():
            continue
        if 0.0 <= t < best_t:
            best, best_t = (algo, proto), t
    if best is None:
        raise ValueError(
            f"no algorithm/protocol available for {cname} on {s.describe()}"
            + (f" with algorithm={algorithm}" if algorithm else "")
            + (f" protocol={protocol}" if protocol else "")
        )
    m = model(s)
    a, p = ALGOS.index(best[0]), PROTOS.index(best[1])
    nc = s.channels
    nt = m.max_threads[a][p]
    th = m.thresholds[a][p]
    if a in (K.NVLS, K.NVLS_TREE):
        nc = min(s.nvls_channels, s.channels) if (s.nodes > 1 and a == K.NVLS) else s.nvls_channels
    else:
        while nbytes < nc * nt * th and nc >= 2:
            nc -= 1
        while nbytes < nc * nt * th and nt % 128 == 0:
            nt //= 2
    if p == K.SIMPLE:
        if a == K.RING:
            nt += K.WARP
        if a == K.TREE:
            nt += 4 * K.WARP
    if nt // K.WARP < 3:
        nt = 3 * K.WARP
    if a in (K.TREE, K.PAT):
        nt = K.MAX_NTHREADS
    return Choice(cname, nbytes, best[0], best[1], nc, nt // K.WARP, best_t, table)
