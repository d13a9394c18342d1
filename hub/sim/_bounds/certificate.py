"""Optimality certificates: the lower bound of a collective on a network, and which term binds.

Rules (all-gather AG, reduce-scatter RS, all-reduce AR; ``M`` = nccl-tests' size, ``N`` GPUs;
bandwidths in bytes/ns by ASTRA-sim's conversion; ``d(u, v)`` = least summed link latency of a
path from GPU ``u`` to GPU ``v``, switches allowed; ``B_out(u)`` = bandwidth out of ``u``):

====  ==============================================  ===================================================
term  expression                                      why
====  ==============================================  ===================================================
bw    ``(M/N)·x*`` (AG), ``(M/N)·x*_rev`` (RS)         the cut bound (:mod:`hub.sim._bounds.cut`), ForestColl's optimum
bw    AR: ``max(2(N−1)M/ΣB_in, 2(N−1)M/ΣB_out,         a byte of an all-reduce needs 2(N−1) one-way GPU-to-
      M/min B_in, M/min B_out)``                       GPU transmissions (directed gossip); each GPU gets
                                                       and gives ``M`` of information
E1    ``bw``                                           the cut term alone: the simulator truncates every
                                                       message's delay to whole ns, so a schedule of many
                                                       messages gains up to 1 ns per message on the
                                                       bottleneck link, more than the one link latency a
                                                       continuous model would add after the last byte
E2    ``max_u (D/B_out(u) + max_v d(u, v))``,          every byte of ``u``'s share (``D = M/N``; AR:
      ``D = M/N`` (AG, RS), ``M`` (AR)                 ``M``, the sum reveals all of ``u``'s input) leaves
                                                       ``u`` by then and still travels to the farthest GPU
====  ==============================================  ===================================================

The bound is ``max(E1, E2)``.

All-reduce is *not* bounded by reduce-scatter + all-gather (``(M/N)·(x*_rev + x*)``, ForestColl's
form, kept as ``rs_plus_ag_ns``): the two phases can overlap on links of opposite directions, and
a GPU with few links can leave the reductions to others. ``forest.synthesize`` on ``mesh:4x4``
runs a 64 MiB all-reduce in 0.83× that figure. On regular networks (every GPU with the same
links) the transmission bound equals the classic ``2(N−1)M/(N·B_in)``.

The serialization part of E2 is rounded down, as the simulator truncates every message's delay.
``bound_term`` names what binds in the larger expression:
``bandwidth`` when its latency part is under :data:`SHARE` of it, ``latency`` when its
bandwidth part is, ``both`` otherwise. Other collectives keep the ingress bounds of
:func:`~hub.sim.lower_bound_ns` (bandwidth term only).

Everything that depends only on the network (the two exact cut optima, latencies, port
bandwidths) is computed once per network and cached (:data:`CACHE_SIZE` networks), so a
certificate costs one max-flow search per network and a few multiplications per call.
"""

from __future__ import annotations

import heapq
import math
from collections import OrderedDict
from dataclasses import dataclass
from fractions import Fraction

from ...chakra import Collective
from ...errors import HubError
from ...topology import LinkGraph, Topology, bytes_per_ns
from .cut import CutOptimum, colour_classes, cut_optimum

__all__ = ["CACHE_SIZE", "SHARE", "Certificate", "NetworkFacts", "certify", "network_facts"]

#: a part under this share of the binding expression does not bind
SHARE = 0.1
#: networks whose facts are kept
CACHE_SIZE = 64

_CUT_COLLECTIVES = (Collective.ALLGATHER, Collective.REDUCESCATTER, Collective.ALLREDUCE)


@dataclass(frozen=True)
class NetworkFacts:
    """What the certificates of one network need (see the module docstring)."""

    npus: int
    ag: CutOptimum | None  # None: the network is not connected
    rs: CutOptimum | None
    out_bytes_per_ns: tuple[float, ...]  # per GPU
    in_bytes_per_ns: tuple[float, ...]
    eccentricity_ns: tuple[float, ...]  # per GPU: max_v d(u, v) (0 where not computed)


@dataclass(frozen=True)
class Certificate:
    """A lower bound on any schedule of ``collective`` at ``size`` bytes on one network."""

    collective: str
    size: int
    bound_ns: float
    term: str  # bandwidth | latency | both
    bandwidth_ns: float  # the cut term alone
    latency_ns: float  # the latency part of the binding expression
    x: Fraction | None  # GPUs per GB/s of the cut term (AR: RS + AG)
    cut: frozenset[int]  # the bottleneck cut S* (device ids; AR: the all-gather one)
    verified: bool  # x was proven the maximum over all cuts (certificates skip that check: False)
    formula: str
    #: all-reduce: ``(M/N)·(x*_rev + x*)``, the bandwidth time of a reduce-scatter + all-gather
    #: all-reduce (ForestColl's form): a target for such schedules, not a bound (see the docstring)
    rs_plus_ag_ns: float | None = None

    @property
    def bandwidth_share(self) -> float:
        return self.bandwidth_ns / self.bound_ns if self.bound_ns else 0.0


_CACHE: OrderedDict[object, NetworkFacts] = OrderedDict()


def _key(topo: Topology) -> object:
    try:
        return topo.to_string()
    except HubError:  # a hand-made link graph: its content (an id could be reused after gc)
        g = topo.to_link_graph()
        return (g.npus, g.switches, g.links)


def network_facts(topology: Topology | str) -> NetworkFacts:
    """The network-only part of every certificate on ``topology`` (a topology or its string; cached)."""
    if isinstance(topology, str):
        from ...topology import load_topology

        topology = load_topology(topology)
    key = _key(topology)
    facts = _CACHE.get(key)
    if facts is not None:
        _CACHE.move_to_end(key)
        return facts
    graph = topology.to_link_graph()
    try:
        ag: CutOptimum | None = cut_optimum(graph, verify=False)
        # every link with an equal twin: B-(S) = B+(S), the same cut serves reduce-scatter
        rs: CutOptimum | None = ag if _symmetric(graph) else cut_optimum(graph, reverse=True, verify=False)
    except ValueError:
        ag = rs = None
    facts = NetworkFacts(
        npus=graph.npus,
        ag=ag,
        rs=rs,
        out_bytes_per_ns=tuple(bytes_per_ns(graph.out_bandwidth(u)) for u in range(graph.npus)),
        in_bytes_per_ns=tuple(bytes_per_ns(graph.in_bandwidth(u)) for u in range(graph.npus)),
        eccentricity_ns=_eccentricities(graph),
    )
    _CACHE[key] = facts
    while len(_CACHE) > CACHE_SIZE:
        _CACHE.popitem(last=False)
    return facts


def _symmetric(graph: LinkGraph) -> bool:
    twin = {(ln.src, ln.dst): ln.bandwidth for ln in graph.links}
    return all(twin.get((ln.dst, ln.src)) == ln.bandwidth for ln in graph.links)


def _eccentricities(graph: LinkGraph) -> tuple[float, ...]:
    """Per GPU the largest least-latency distance to another GPU (Dijkstra from one GPU per
    colour class, 0 elsewhere: E2 stays a valid bound, and GPUs of one class are alike)."""
    n = graph.npus
    sources = [g[0] for g in colour_classes(graph)]
    out = [0.0] * n
    for s in sources:
        dist = [float("inf")] * graph.devices
        dist[s] = 0.0
        heap = [(0.0, s)]
        while heap:
            d, u = heapq.heappop(heap)
            if d > dist[u]:
                continue
            for li in graph.out_links[u]:
                ln = graph.links[li]
                nd = d + ln.latency
                if nd < dist[ln.dst]:
                    dist[ln.dst] = nd
                    heapq.heappush(heap, (nd, ln.dst))
        far = max(dist[:n])
        out[s] = far if far != float("inf") else 0.0
    return tuple(out)


def certify(
    topology: Topology | str, collective: Collective | str, size: int, ranks: int | None = None
) -> Certificate | None:
    """The certificate of ``collective`` at ``size`` bytes over all NPUs of ``topology``; None for a
    collective without a cut bound here, a partial rank set, or a disconnected network."""
    coll = Collective.parse(collective)
    facts = network_facts(topology)
    if coll not in _CUT_COLLECTIVES or facts.ag is None or facts.rs is None or size <= 0:
        return None
    n = facts.npus
    if ranks is not None and ranks != n or n < 2:
        return None
    conv = bytes_per_ns(1.0)  # GB/s -> bytes/ns: x [GPUs per GB/s] / conv = ns per byte of a shard
    shard = size / n
    target = None
    if coll == Collective.ALLGATHER:
        x, cut, verified, name = facts.ag.x, facts.ag.cut, facts.ag.verified, "x*"
        bw = shard * float(x) / conv
    elif coll == Collective.REDUCESCATTER:
        x, cut, verified, name = facts.rs.x, facts.rs.cut, facts.rs.verified, "x*_rev"
        bw = shard * float(x) / conv
    else:
        x = facts.rs.x + facts.ag.x
        cut, verified, name = facts.ag.cut, facts.ag.verified and facts.rs.verified, "traffic"
        target = shard * float(x) / conv
        # each byte needs 2(N-1) one-way GPU-to-GPU transmissions (directed gossip), each ending on
        # a link into a GPU and starting on one out of a GPU; and every GPU sends and receives M
        bw = max(
            2 * (n - 1) * size / sum(facts.in_bytes_per_ns),
            2 * (n - 1) * size / sum(facts.out_bytes_per_ns),
            size / min(facts.in_bytes_per_ns),
            size / min(facts.out_bytes_per_ns),
        )
    share = size if coll == Collective.ALLREDUCE else shard
    e2, bw2, lat2 = 0.0, 0.0, 0.0
    for b_out, ecc in zip(facts.out_bytes_per_ns, facts.eccentricity_ns, strict=True):
        ser = float(math.floor(share / b_out))  # the simulator truncates each message's delay
        if ser + ecc > e2:
            e2, bw2, lat2 = ser + ecc, ser, ecc
    if bw >= e2:
        bound, bpart, lpart = bw, bw, 0.0
        formula = (
            f"cut bound (M/N)*{name}, {name} = {x}"
            if target is None
            else "max(2(N-1)M/sum B_in, 2(N-1)M/sum B_out, M/min B_in, M/min B_out)"
        )
    else:
        bound, bpart, lpart = e2, bw2, lat2
        share_s = "M" if coll == Collective.ALLREDUCE else "M/N"
        formula = f"{share_s}/B_out(u) + farthest latency from u (bandwidth term {bw:.0f} ns)"
    if lpart < SHARE * bound:
        term = "bandwidth"
    elif bpart < SHARE * bound:
        term = "latency"
    else:
        term = "both"
    return Certificate(coll.value, int(size), bound, term, bw, lpart, x, cut, verified, formula, target)
