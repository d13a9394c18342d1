"""The link-load bound: the time the busiest link needs for the bytes an algorithm puts on it.

The collective's lower bound (:func:`hub.sim.lower_bound_ns`, ``bound_ns``) holds for *every*
schedule: it counts every link into or out of a rank. An algorithm that uses fewer links than the
network offers can never reach it, and a model without contention can still report times below
what its own links allow. Example: a ``channels: 2`` ring on ``ring:8`` sends both channels the
same way round, so each link of one direction carries twice what the cut bound assumes, while
the other direction idles; the congestion-unaware model charges no queueing and reports ~76 GB/s
busbw on 50 GiB/s links.

Rules (one algorithm, its messages, the network's own routing):

* every COMM_SEND node is one message ``rank -> peer`` of ``size`` bytes;
* a message crosses the links of ``topology.to_link_graph().route(src, dst)`` (the routes the
  congestion-aware model uses), each with all its bytes (store and forward);
* ``load(l)`` = bytes on link ``l``, ``n(l)`` = messages crossing it; the bound is
  ``max_l load(l) / B(l) - n(l)`` ns (``B`` in bytes/ns, the 2^30 convention of
  :func:`hub.topology.bytes_per_ns`; ASTRA-sim's models truncate each message's time to whole
  ns, which can shave up to 1 ns per message), no latency term;
* a link cannot carry two messages' bytes at full bandwidth at once, so no run of *this*
  algorithm on *this* routing can finish sooner: a time below it is impossible, whatever model
  produced it.

The messages are routed once per distinct (src, dst) pair, and the bound is left out (None)
above :data:`PAIRS_PER_RANK` distinct pairs per rank, where routing would cost more than the
simulation. The congestion-aware model queues every link's messages one after another, so its
times cannot fall below this bound (but for the truncation allowance): it is computed for the
congestion-unaware model only (``link_bound_ns`` None otherwise).
"""

from __future__ import annotations

import itertools

import numpy as np

from ...chakra import NodeType
from ...errors import HubError
from ...topology import LinkGraph, Topology, bytes_per_ns
from .._engine.program import Program, factorize

__all__ = ["PAIRS_PER_RANK", "link_load_bound_ns"]

#: Distinct (src, dst) pairs per rank routed at most: rings, multi-channel and counter-rotating
#: rings, trees, hierarchical and halving-doubling schedules (log2 p peers) are checked; all-pairs
#: schedules (p - 1 peers each) are left to the collective's cut bound, which already catches
#: them, because routing p^2 pairs would cost more than their simulation.
PAIRS_PER_RANK = 16


def _label(npus: int, src: int, dst: int) -> str:
    def dev(x: int) -> str:
        return str(x) if x < npus else f"sw{x - npus}"

    return f"{dev(src)}->{dev(dst)}"


def link_load_bound_ns(prog: Program, topology: Topology) -> tuple[float | None, str | None]:
    """The link-load bound of ``prog`` on ``topology`` in ns and the busiest link (``"2->3"``);
    ``(None, None)`` when the program sends nothing or has too many distinct pairs to route."""
    try:
        graph = topology.to_link_graph()
    except HubError:  # a topology without a link graph has no links to load
        return None, None
    bp = np.asarray([bytes_per_ns(ln.bandwidth) for ln in graph.links], dtype=np.float64)
    routed = _route_loads(prog, graph, len(graph.links))
    if routed is None:
        return None, None
    load, count = routed
    if not load.any():
        return None, None
    times = load / bp - count
    busiest = int(np.argmax(times))
    if times[busiest] <= 0:  # messages too small to say anything
        return None, None
    ln = graph.links[busiest]
    return float(times[busiest]), _label(graph.npus, ln.src, ln.dst)


def _route_loads(
    prog: Program, graph: LinkGraph, nlinks: int, *, native: bool = True
) -> tuple[np.ndarray, np.ndarray] | None:
    """Bytes and messages per link of the program's messages routed on ``graph`` (None without a
    message, or above :data:`PAIRS_PER_RANK` distinct pairs per rank). ``native``: the pairs'
    loads from the one-pass C count where it applies (the numpy path is its reference)."""
    pairs = _pair_loads(prog) if native else _pair_loads_np(prog)
    if pairs is None:
        return None
    src, dst, per_pair, msgs = pairs
    count = src.size
    if count > PAIRS_PER_RANK * (int(max(src.max(), dst.max())) + 1):
        return None
    routes = [graph.route(int(s), int(d)) for s, d in zip(src.tolist(), dst.tolist(), strict=True)]
    lengths = np.fromiter((len(r) for r in routes), dtype=np.int64, count=count)
    flat = np.fromiter(itertools.chain.from_iterable(routes), dtype=np.int64, count=int(lengths.sum()))
    load = np.bincount(flat, weights=np.repeat(per_pair, lengths), minlength=nlinks)
    num = np.bincount(flat, weights=np.repeat(msgs, lengths), minlength=nlinks)
    return load, num


#: pair tables of the C count: npus^2 float64 + int64 entries, zero pages until a pair is written
#: (4096 NPUs: 2 x 128 MiB of address space, a few pages touched)
_NATIVE_PAIRS = 1 << 24

Pairs = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _pair_loads(prog: Program) -> Pairs | None:
    """Per distinct (src, dst) pair of SENDs, ascending: src, dst, bytes (float64, summed in node
    order) and messages (float64); one C pass over the nodes (``_sim.pair_loads``). Falls back to
    :func:`_pair_loads_np` where the pair table would be large or the columns are not int32."""
    from ..._native import load_sim

    kinds = prog.kind_array()
    npus = prog.ranks
    if kinds.dtype != np.int32 or not 0 < npus * npus <= _NATIVE_PAIRS or prog.n == 0:
        return _pair_loads_np(prog)
    rank = np.frombuffer(prog.rank, dtype=np.int32)
    peer = np.frombuffer(prog.peer, dtype=np.int32)
    npus = max(npus, int(rank[-1]) + 1)  # (rank-major: the last node has the highest rank)
    if npus * npus > _NATIVE_PAIRS:
        return _pair_loads_np(prog)
    size = np.frombuffer(prog.size, dtype=np.int64)
    per_pair = np.zeros(npus * npus, dtype=np.float64)
    msgs = np.zeros(npus * npus, dtype=np.int64)
    try:
        load_sim().pair_loads(kinds, rank, peer, size, npus, int(NodeType.SEND), per_pair, msgs)
    except ValueError:  # a peer beyond the ranks (the engine refuses such programs): numpy's sizing
        return _pair_loads_np(prog)
    used = np.flatnonzero(msgs)
    if not used.size:
        return None
    return used // npus, used % npus, per_pair[used], msgs[used].astype(np.float64)


def _pair_loads_np(prog: Program) -> Pairs | None:
    """:func:`_pair_loads` in numpy (the reference of the C pass; any column types)."""
    sends = np.flatnonzero(prog.kind_array() == int(NodeType.SEND))
    if sends.size == 0:
        return None
    src = np.frombuffer(prog.rank, dtype=np.int32)[sends].astype(np.int64)
    dst = np.frombuffer(prog.peer, dtype=np.int32)[sends].astype(np.int64)
    size = np.frombuffer(prog.size, dtype=np.int64)[sends].astype(np.float64)
    npus = int(max(src.max(), dst.max())) + 1
    ids, count = factorize(src * npus + dst, npus * npus)
    per_pair = np.bincount(ids, weights=size, minlength=count)
    msgs = np.bincount(ids, minlength=count).astype(np.float64)
    first = np.full(count, -1, dtype=np.int64)
    first[ids[::-1]] = np.arange(ids.size - 1, -1, -1)  # one send of each pair stands for its key
    return src[first], dst[first], per_pair, msgs
