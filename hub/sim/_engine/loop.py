"""The event-driven engine: ASTRA-sim's custom-collective walker over a flattened program.

Semantics (see docs/simulator.md, "Rules and where they come from"): every node whose
dependencies are done is issued at once (workload nodes may first wait for their NPU's
resource, and are issued per NPU in ascending node id, as ASTRA-sim's workload layer does); a
SEND moves its data eagerly and completes when the data arrives; a RECV completes on arrival,
or by an event at the same time if its data is already there; messages pair by (tag, src, dst,
size) FIFO per key; COMP nodes take their duration, and those of one NPU ending at the same time
complete together, at the place of the first one's event. A node may need fewer completions
than it has predecessors (``Program.quorum``: the k-th to finish, in event order, releases it) and
may be gated (``Program.arm``: released by the first counted completion after its arming
predecessor has finished); a sequencer (``Program.seq``) releases its successors a group at a
time, one group per predecessor to finish, in event order. ASTRA-sim's native ``direct`` needs
them (``hub.sim._astrasim.direct``).

Time is an integer number of ns. Events run in (time, scheduling order), as in ASTRA-sim's event
queue (a FIFO list per distinct time). The nodes one completion releases are issued in the order
of the Chakra feeder's hash set (:mod:`hub.sim._engine.feeder`); the roots rank by rank, each in its feeder's
order.

Structure: this module prepares the tables (:mod:`hub.sim._engine.layout`: position-major node order, dense
message channels, per-channel unaware delays, sizes and routes, one route per NPU pair) and hands
them to the event loop, the C extension ``hub._native._sim`` (the only implementation of the
walk; a pure-Python walk made 1024-rank rings take 10-20 s). The loop calls back into
:class:`~hub.sim._engine.feeder.FreeSet` for the one rare rule that needs libstdc++'s hash order (three or
more nodes released by one completion), so that rule has a single implementation too. Failed
runs come back with the loop's leftover queues and are explained here (:func:`_diagnose`).
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from ...errors import SimulationError
from .feeder import FreeSet
from .layout import DelayFn, Layout, channel_pairs, layout
from .network import AwareNetwork
from .program import K_END, K_SEND, K_START, Program, factorize

__all__ = ["EngineState", "run_engine"]

_NCLS = 16  # resource classes per NPU in the event loop (NCLS in hub/_native/_sim.c)
#: releases of 3..64 nodes that do not grow their rank's free set are ordered by the event loop
#: itself (``rule_native`` in hub/_native/_sim.c) rather than by a call back into
#: :class:`FreeSet` (PAT at 1024 ranks: 2M calls); False: every such release calls back (tests)
NATIVE_ORDER = True


@dataclass
class EngineState:
    """What one run leaves behind (times in ns; -1 = never happened, only in failed runs).

    The per-node columns are kept in the engine's node order and converted to program order
    (``array('q')``) only when first read: most callers need only the totals and the
    critical path (:meth:`chain`)."""

    time_ns: int
    last: int  # the program node that completed last
    rank_finish: list[int]
    link_bytes: list[int] = field(default_factory=list)
    link_busy: list[int] = field(default_factory=list)
    #: events that ran at t = 0 after the start (ASTRA-sim's event queue asserts on each one)
    t0_events: int = 0
    #: some node never completed (only returned with ``run_engine(stuck_ok=True)``)
    stuck: bool = False
    _lay: Any = field(default=None, repr=False)  # the Layout (engine numbering)
    _cols: tuple[np.ndarray, np.ndarray, np.ndarray] = field(default=(), repr=False)  # type: ignore[assignment]

    _seq: Any = field(default=None, repr=False)

    @cached_property
    def order(self) -> array:
        """Per program node: its place in the completion sequence (-1: never completed);
        only with ``run_engine(order=True)``."""
        if self._seq is None:
            raise ValueError("run_engine(order=True) keeps the completion order")
        return self._lay.to_program(self._seq)

    def rank_last(self, nranks: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per rank: its last completion time, that completion's place in the sequence (only with
        ``run_engine(order=True)``), and whether every node of the rank completed; read in the
        engine's order (no conversion of the per-node columns)."""
        lay, fin = self._lay, self._cols[1]
        n = lay.start
        rank = lay.rank[:n]
        end = np.zeros(nranks, dtype=np.int64)
        low = np.zeros(nranks, dtype=np.int64)
        np.maximum.at(end, rank, fin[:n])
        np.minimum.at(low, rank, fin[:n])
        seq = np.full(nranks, -1, dtype=np.int64)
        if self._seq is not None:
            np.maximum.at(seq, rank, self._seq[:n])
        return end, seq, low >= 0

    @cached_property
    def start(self) -> array:
        """Issue time per program node."""
        return self._lay.to_program(self._cols[0])

    @cached_property
    def fin(self) -> array:
        """Completion time per program node."""
        return self._lay.to_program(self._cols[1])

    @cached_property
    def cause(self) -> array:
        """Per program node: the node whose completion (or data arrival) released it; -1 for roots."""
        return self._lay.to_program(self._cols[2], nodes=True)

    def chain(self, limit: int) -> list[tuple[int, int, int]]:
        """The critical path backwards from the last node: (program node, start, end), at most ``limit``."""
        start, fin, cause = self._cols
        lay = self._lay
        walk: list[int] = []  # engine nodes; the columns are read once for all of them below
        e = int(lay.inv[self.last]) if self.last >= 0 else -1
        while 0 <= e < lay.start and len(walk) < limit:
            walk.append(e)
            e = cause.item(e)
        at = np.asarray(walk, dtype=np.int64)
        return list(zip(lay.perm[at].tolist(), start[at].tolist(), fin[at].tolist(), strict=True))


def run_engine(
    prog: Program,
    *,
    delay: DelayFn | None = None,
    net: AwareNetwork | None = None,
    order: bool = False,
    stuck_ok: bool = False,
) -> EngineState:
    """Run ``prog`` under the unaware model (``delay``: a message's delay in ns from its (src, dst,
    size), arrays in) or the aware model (``net``). Raises :class:`SimulationError` on deadlock or
    unmatched messages, unless ``stuck_ok`` (then never-completed nodes keep ``fin`` -1, as ASTRA-sim
    leaves such ranks unfinished); ``order``: also keep each node's place in the completion sequence
    (``EngineState.order``: what ASTRA-sim prints in, among equal times)."""
    from ..._native import load_sim

    _sim = load_sim()  # the compiled event loop (built by setup.py)

    lay = layout(prog, delay)
    # the layout holds the engine's copy of the dependencies: the program's are dropped before
    # the walk's outputs are allocated (a lower peak; nothing reads them after the layout)
    prog.succ_ptr = prog.succ_idx = prog.indeg = None
    prog.dep_ptr = prog.dep_idx = None
    n = prog.n
    if lay.succ_ptr[n] == lay.succ_ptr[n + 1]:
        raise SimulationError(
            "no node is free of dependencies (every node waits for another)",
            hint="the dependency graph has a cycle; run the verifier (hub.verify)",
        )
    free = [FreeSet() for _ in range(lay.nranks)]
    for fs, (nb, nr) in zip(free, lay.free0, strict=False):
        fs.buckets, fs.next_resize = nb, nr

    instances: dict[int, FreeSet] = {}  # workloads: one feeder per custom-collective instance and rank
    # each rank's free-set state, for the event loop's own ordering of releases that do not grow
    # the set (the common case; _feeder._rule_idx is its reference); this callback keeps it current
    fstate = np.array([(fs.buckets, fs.next_resize) for fs in free], dtype=np.int64).ravel()

    def reorder(r: int, keys: list[int]) -> list[int]:
        if lay.fkey is not None:
            fs = instances.get(r)
            if fs is None:
                fs = instances[r] = FreeSet()
            return fs.order(keys)
        fs = free[r]
        out = fs.order(keys)
        fstate[2 * r], fstate[2 * r + 1] = fs.buckets, fs.next_resize
        return out

    aware: tuple[Any, ...] | None = None
    lbytes = lbusy = np.zeros(0, dtype=np.int64)
    if net is not None:
        route_of, rptr, rlinks = _routes(prog, net, lay)
        lbytes = np.zeros(net.nlinks, dtype=np.int64)
        lbusy = np.zeros(net.nlinks, dtype=np.int64)
        aware = (
            route_of,
            rptr,
            rlinks,
            _channel_sizes(prog, lay),
            np.asarray(net.bp, dtype=np.float64),
            np.asarray(net.lat, dtype=np.float64),
            lbytes,
            lbusy,
        )
    res: tuple[np.ndarray, ...] | None = None
    if lay.acq is not None and lay.rel is not None:
        cap = np.ones(_NCLS, dtype=np.int32)
        if prog.caps is not None:
            cap[: len(prog.caps)] = prog.caps
        res = (lay.acq, lay.rel, _workload_level(prog, lay), cap)
    arm, seqw = _counted_joins(prog, lay)
    start = np.full(n + 1, -1, dtype=np.int64)
    fin = np.full(n + 1, -1, dtype=np.int64)
    cause = np.full(n + 1, -1, dtype=np.int32)
    rank_finish = np.zeros(lay.nranks, dtype=np.int64)
    seq = np.full(n + 1, -1, dtype=np.int32) if order else None
    last, posted, arrived, waiting, t0 = _sim.run(
        n,
        lay.nranks,
        lay.nchan,
        lay.feeder,
        reorder,
        lay.kind,
        lay.chan,
        lay.dur,
        lay.chan_delay,
        lay.succ_ptr,
        lay.succ_idx,
        lay.indeg,
        lay.rank,
        lay.perm,
        np.frombuffer(prog.local_id, dtype=np.int64),
        aware,
        res,
        start,
        fin,
        cause,
        rank_finish,
        arm,
        seqw,
        seq,
        lay.fkey,
        fstate if NATIVE_ORDER and lay.fkey is None else None,
    )
    # (a quorum node counts its later predecessors below zero: only > 0 is a node never released)
    stuck = bool((lay.indeg > 0).any()) or bool(posted) or bool(arrived) or bool(waiting)
    if stuck and not stuck_ok:
        back = lay.perm.tolist()
        _diagnose(
            prog,
            lay.to_program(start),
            lay.to_program(fin),
            lay.to_program(lay.indeg),
            [deque(back[e] for e in q) for q in posted],
            [deque(back[e] for e in q) for q in arrived],
        )
    return EngineState(
        time_ns=int(fin[last]) if last >= 0 else 0,
        last=lay.node(last),
        rank_finish=rank_finish[: prog.ranks].tolist(),
        link_bytes=lbytes.tolist(),
        link_busy=lbusy.tolist(),
        t0_events=int(t0),
        stuck=stuck,
        _lay=lay,
        _cols=(start, fin, cause),
        _seq=seq,
    )


def _counted_joins(prog: Program, lay: Layout) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The engine's view of ``prog.quorum`` (written into ``lay.indeg``: the completions that
    release the node), ``prog.arm`` (arming engine node per engine node, -1: none) and
    ``prog.seq`` (successors per tick, 0: not a sequencer); None where a program has none."""
    if prog.quorum:  # (quorum and gated nodes always have predecessors: never roots)
        lay.indeg[lay.inv[list(prog.quorum)]] = list(prog.quorum.values())
    arm = seqw = None
    if prog.arm:
        arm = np.full(prog.n + 1, -1, dtype=np.int32)
        arm[lay.inv[list(prog.arm)]] = lay.inv[list(prog.arm.values())]
    if prog.seq:
        seqw = np.zeros(prog.n + 1, dtype=np.int32)
        seqw[lay.inv[list(prog.seq)]] = list(prog.seq.values())
    return arm, seqw


def _workload_level(prog: Program, lay: Layout) -> np.ndarray:
    """Per engine node: 1 for workload-level nodes (issued by ASTRA-sim's Workload layer in
    ascending node id per NPU), 0 for nodes inside a collective (the walker's order)."""
    pinst = np.frombuffer(prog.inst, dtype=np.int32)[lay.perm]
    pk = prog.kind_array()[lay.perm]
    out = np.ones(prog.n + 1, dtype=np.int8)
    out[:-1] = (pinst == 0) | (pk == K_START) | (pk == K_END)
    return out


def _channel_sizes(prog: Program, lay: Layout) -> np.ndarray:
    """Message size per channel (int64): part of the channel's key, so one value per channel."""
    if lay.chan_first is None or not lay.nchan:
        return np.zeros(lay.nchan, dtype=np.int64)
    return np.ascontiguousarray(np.frombuffer(prog.size, dtype=np.int64)[lay.chan_first])


def _routes(prog: Program, net: AwareNetwork, lay: Layout) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Routes as tables: (route id per message channel (0 for channels without a SEND), route
    offsets, link ids); one route per NPU pair that sends messages, routed once (an unreachable
    pair is an error here, before the walk)."""
    route_of = np.zeros(max(lay.nchan, 1), dtype=np.int32)[: lay.nchan]
    sends = lay.chan[: prog.n][lay.kind[: prog.n] == K_SEND]
    if not sends.size or lay.chan_first is None:
        return route_of, np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int32)
    used = np.zeros(lay.nchan, dtype=bool)
    used[sends] = True
    del sends
    chans = np.flatnonzero(used)
    src, dst = channel_pairs(prog, lay.chan_first[chans])
    inv, count = factorize(src.astype(np.int64) * net.npus + dst, net.npus * net.npus)
    uniq = np.empty(count, dtype=np.int64)
    uniq[inv] = src.astype(np.int64) * net.npus + dst
    pairs = [divmod(p, net.npus) for p in uniq.tolist()]
    net.prepare(pairs)
    rts = [net.route(s, d) for s, d in pairs]
    rptr = np.zeros(len(rts) + 1, dtype=np.int64)
    np.cumsum([len(r) for r in rts], out=rptr[1:])
    rlinks = np.fromiter((li for r in rts for li in r), dtype=np.int32, count=int(rptr[-1]))
    route_of[chans] = inv
    return route_of, rptr, rlinks


def node_ref(prog: Program, g: int) -> str:
    """``rank 3 node 12`` (plus the collective instance inside a workload)."""
    inst = prog.inst[g]
    where = f" in {prog.labels.get(inst, f'collective #{inst - 1}')}" if inst else ""
    return f"rank {prog.rank[g]} node {prog.local_id[g]}{where}"


def _msg_key(prog: Program, g: int) -> tuple[int, int, int, int]:
    """(tag, src, dst, size) of the message a SEND or RECV node takes part in."""
    if prog.kind[g] == K_SEND:
        return prog.tagx[g], prog.rank[g], prog.peer[g], prog.size[g]
    return prog.tagx[g], prog.peer[g], prog.rank[g], prog.size[g]


def _describe_msg(prog: Program, key: tuple[int, int, int, int]) -> str:
    tagx, src, dst, size = key
    return f"{src}->{dst} tag {tagx & 0xFFFFFFFF} {size} B"


def _diagnose(
    prog: Program, start: Sequence[int], fin: Sequence[int], indeg: Sequence[int], posted_c: list, arrived_c: list
) -> None:
    """Turn an incomplete run into one clear SimulationError."""
    # oldest first: RECVs by issue time, SENDs by arrival time (then node index)
    pq = sorted((q for q in posted_c if q), key=lambda q: (start[q[0]], q[0]))
    aq = sorted((q for q in arrived_c if q), key=lambda q: (fin[q[0]], q[0]))
    posted = {_msg_key(prog, q[0]): q for q in pq}
    arrived = {_msg_key(prog, q[0]): q for q in aq}
    # size mismatch: a waiting RECV and an arrived SEND on the same (tag, src, dst)
    by_pair: dict[tuple[int, int, int], tuple[int, int]] = {}
    for key, q in arrived.items():
        by_pair.setdefault(key[:3], (key[3], q[0]))
    for key, q in posted.items():
        other = by_pair.get(key[:3])
        if other is not None:
            raise SimulationError(
                f"size mismatch: {node_ref(prog, q[0])} receives {key[3]} B but {node_ref(prog, other[1])} "
                f"sends {other[0]} B ({key[1]}->{key[2]}, tag {key[0] & 0xFFFFFFFF})",
                hint="a SEND and its RECV must agree on (tag, src, dst, size) exactly, as in ASTRA-sim",
            )
    if arrived:
        key, q = next(iter(arrived.items()))
        total = sum(len(v) for v in arrived.values())
        raise SimulationError(
            f"{total} unmatched SEND(s); first: {node_ref(prog, q[0])} ({_describe_msg(prog, key)}) "
            "has no matching RECV",
            hint="add the RECV on the destination rank, or check tags and sizes",
        )
    blocked = [g for g in range(prog.n) if fin[g] < 0]
    waiting = [q[0] for q in posted.values()]
    parts = []
    if waiting:
        key, q = next(iter(posted.items()))
        parts.append(
            f"{sum(len(v) for v in posted.values())} RECV(s) wait for data that is never sent, e.g. "
            f"{node_ref(prog, q[0])} ({_describe_msg(prog, key)})"
        )
    never = [g for g in blocked if indeg[g] > 0]
    if never:
        parts.append(f"{len(never)} node(s) never became ready, e.g. {node_ref(prog, never[0])}")
    waiting_set = {g for q in posted.values() for g in q}
    queued = [g for g in blocked if indeg[g] == 0 and g not in waiting_set]
    if queued and not waiting:
        parts.append(f"{len(queued)} node(s) wait for a busy NPU resource, e.g. {node_ref(prog, queued[0])}")
    raise SimulationError(
        f"deadlock: {len(blocked)} of {prog.n} nodes never complete; " + "; ".join(parts),
        hint="check the send/recv pairing and dependencies (hub.verify reports every problem)",
    )
