"""The event-driven engine: ASTRA-sim's custom-collective walker over a flattened program.

Semantics (see docs/simulator.md, "Rules and where they come from"): every node whose
dependencies are done is issued at once (workload nodes may first wait for their NPU's
resource, and are issued per NPU in ascending node id, as ASTRA-sim's workload layer does); a
SEND moves its data eagerly and completes when the data arrives; a RECV completes on arrival,
or by an event at the same time if its data is already there; messages pair by
(tag, src, dst, size) FIFO per key; COMP nodes take their duration, and those of one NPU ending
at the same time complete together, at the place of the first one's event.

Time is an integer number of ns. Events live in a calendar queue (a heap of distinct times, a
FIFO list per time), so events at equal times run in the order they were scheduled, as in
ASTRA-sim's event queue. The nodes one completion releases are issued in the order of the
Chakra feeder's hash set (:mod:`._feeder`); the roots rank by rank, each in its feeder's order.

Performance: the whole walk is one Python loop with issue, completion, matching and the
unaware model inlined (link service and resources, the rarer paths, are small closures), over
flat lists in the position-major node order of :mod:`._layout` (nodes of one step sit together
in memory). A message key is a dense channel id computed with numpy up front
(:func:`~hub.sim._program.channels`), so matching is a list index instead of hashing a 4-tuple.
The unaware model knows a message's arrival time at issue, so a SEND is a single event with its
channel's precomputed delay. The cyclic garbage collector is paused during the walk: the loop
allocates millions of short-lived containers while the big lists are alive, and every full
collection would traverse all of them.
"""

from __future__ import annotations

import gc
from array import array
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from heapq import heappop, heappush
from typing import Any

import numpy as np

from ..errors import SimulationError
from ._feeder import FreeSet
from ._layout import layout
from ._network import AwareNetwork
from ._program import K_COMP, K_END, K_RECV, K_SEND, K_START, Program

__all__ = ["EngineState", "run_engine"]


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
    _lay: Any = field(default=None, repr=False)  # the Layout (engine numbering)
    _cols: tuple[list[int], list[int], list[int]] = field(default=((), (), ()), repr=False)  # type: ignore[assignment]

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
        out: list[tuple[int, int, int]] = []
        e = int(lay.inv[self.last]) if self.last >= 0 else -1
        while 0 <= e < lay.start and len(out) < limit:
            out.append((lay.node(e), start[e], fin[e]))
            e = cause[e]
        return out


def run_engine(prog: Program, *, delays: Any = None, net: AwareNetwork | None = None) -> EngineState:
    """Run ``prog`` under the unaware model (``delays``: per-node message delay in ns) or the
    aware model (``net``). Raises :class:`SimulationError` on deadlock or unmatched messages."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _run(prog, delays, net)
    finally:
        if enabled:
            gc.enable()


def _run(prog: Program, delays: Any, net: AwareNetwork | None) -> EngineState:
    # engine node numbering (position-major, for memory locality): see _layout.py
    lay = layout(prog, delays)
    n = prog.n
    kind = lay.kind
    chan = lay.chan
    nchan = lay.nchan
    sp = lay.succ_ptr
    si = lay.succ_idx
    indeg = lay.indeg
    dur = lay.dur
    cdelay = lay.chan_delay
    acq = lay.acq
    rel = lay.rel
    use_res = acq is not None
    rank = lay.rank
    aware = net is not None

    start = [-1] * (n + 1)  # (+ the virtual start node)
    fin = [-1] * (n + 1)
    cause = [-1] * (n + 1)
    posted: list[deque[int] | None] = [None] * nchan  # RECVs waiting for their data, per channel
    arrived: list[deque[int] | None] = [None] * nchan  # SENDs whose data waits for its RECV
    times: list[int] = []
    buckets: dict[int, list[int]] = {}
    busy_res: dict[int, int] = {}
    waitq: dict[int, deque[int]] = {}
    last = -1

    if aware:
        assert net is not None
        H = net.max_hops + 1
        bp = net.bp
        llat = net.lat
        nl = net.nlinks
        lbusy = bytearray(nl)
        lq: list[deque[int] | None] = [None] * nl
        lbytes = [0] * nl
        lbusyt = [0] * nl
        size = np.frombuffer(prog.size, dtype=np.int64)[lay.perm].tolist()
        routes = _routes(prog, net, lay.perm)
    else:
        H = 1

    def transmit(li: int, code: int, t: int) -> None:
        """Start sending hop ``code % H`` of message ``code // H`` over the free link ``li``."""
        lbusy[li] = 1
        sz = size[code // H]
        x = sz / bp[li]
        for tt, ev in ((t + int(llat[li] + x), n1 + code), (t + int(x), -1 - li)):  # arrival, then link free
            b = buckets.get(tt)
            if b is None:
                buckets[tt] = [ev]
                heappush(times, tt)
            else:
                b.append(ev)
        lbytes[li] += sz
        lbusyt[li] += int(x)

    def want_link(li: int, code: int, t: int) -> None:
        if lbusy[li]:
            q = lq[li]
            if q is None:
                lq[li] = deque((code,))
            else:
                q.append(code)
        else:
            transmit(li, code, t)

    # Workload programs: ASTRA-sim's Workload layer, on every completion, walks the NPU's whole
    # dependency-free set in ascending node id (a std::set, Workload::issue_dep_free_nodes) and
    # issues each node whose hardware resource is free (HardwareResource::is_available). So a
    # freed resource goes to the lowest-id candidate, waiting or newly released, not to the
    # longest waiting one.
    wlev: list[bool] = []
    if use_res:
        pinst = np.frombuffer(prog.inst, dtype=np.int32)[lay.perm]
        pk = np.asarray(kind[:n], dtype=np.int64)
        wlev = ((pinst == 0) | (pk == K_START) | (pk == K_END)).tolist()
        wlev.append(True)
    fk = lay.fkey

    def release(g: int) -> None:
        """Free the NPU resource a completed node held; its waiting nodes compete again."""
        key = rank[g] * 4 + rel[g]  # type: ignore[index]
        busy_res[key] = 0
        q = waitq.pop(key, None)
        if q:
            ready.extend(q)

    def by_node_id() -> None:
        """Workload-level ready nodes in ASTRA-sim's issue order: per NPU (first come first),
        ascending node id; nodes inside a collective keep the walker's order, first."""
        inner = [g for g in ready if not wlev[g]]
        outer = [g for g in ready if wlev[g]]
        pos: dict[int, int] = {}
        outer.sort(key=lambda g: (pos.setdefault(rank[g], len(pos)), fk[g]))
        ready[:] = inner + outer

    if sp[n] == sp[n + 1]:
        raise SimulationError("no node is free of dependencies (every node waits for another)",
                              hint="the dependency graph has a cycle; run the verifier (hub.verify)")
    ready: list[int] = []
    fkey = lay.fkey
    feeder = lay.feeder  # the feeder's issue order (algorithms; workloads keep file order)
    free = [FreeSet() for _ in range(lay.nranks)]
    for fs, (nb, nr) in zip(free, lay.free0, strict=False):
        fs.buckets, fs.next_resize = nb, nr
    nranks = max(1, lay.nranks)
    comp_at: dict[int, int] = {}  # (time, NPU) -> the first COMP ending then: its event runs the batch
    comp_more: dict[int, list[int]] = {}  # that COMP -> the later ones of its batch

    def reorder(m0: int, c: int) -> None:
        """Put the nodes that ``c``'s completion released (ready[m0:]) in the feeder's issue order."""
        seg = ready[m0:]
        order = free[rank[c]].order([fkey[x] for x in seg])
        ready[m0:] = [seg[i] for i in order]

    SEND, RECV, COMP = K_SEND, K_RECV, K_COMP  # locals: faster than module globals in the loop
    n1 = n + 1  # aware hop events are n1 + message * H + hop
    t = 0
    b = [n]  # the bucket being run: the virtual start node "completes" at t = 0 (see _layout.py)
    buckets[0] = b
    lt, lb = 0, b  # the bucket last scheduled into (consecutive issues often share a time)
    while True:
        for ev in b:  # (the list grows while iterated when zero-delay events are scheduled)
            # -- the event ---------------------------------------------------------------------
            if ev >= n1:  # aware: a message finished hop h
                g, h = divmod(ev - n1, H)
                rt = routes[g]
                if h + 1 < len(rt):
                    want_link(rt[h + 1], ev - n1 + 1, t)
                    continue
                ev = g
            elif ev < 0:  # aware: a link became free
                li = -1 - ev
                q = lq[li]
                if q:
                    transmit(li, q.popleft(), t)
                else:
                    lbusy[li] = 0
                continue
            k = kind[ev]
            more: Any = None  # nodes this event completes after ev, in ASTRA-sim's call order
            if k == SEND:  # the data arrived: the SEND completes, then its RECV if posted
                c = chan[ev]
                q = posted[c]
                if q:
                    r = q.popleft()
                    cause[r] = ev
                    more = (r,)
                else:
                    q = arrived[c]
                    if q is None:
                        arrived[c] = deque((ev,))
                    else:
                        q.append(ev)
            elif k == COMP:  # the NPU's event batch for this time: every COMP ending now, in order
                del comp_at[t * nranks + rank[ev]]
                more = comp_more.pop(ev, None)
            # complete ev; the block appears three times, inlined because a call per node would
            # cost more than the block itself
            fin[ev] = t
            last = ev
            if use_res and rel[ev]:  # type: ignore[index]
                release(ev)
            freed = 0
            for x in range(sp[ev], sp[ev + 1]):
                s = si[x]
                d = indeg[s] - 1
                indeg[s] = d
                if d == 0:
                    cause[s] = ev
                    ready.append(s)
                    freed += 1
            if freed > 1 and ev != n and feeder:
                if freed == 2:  # two keys into a drained set: newest first
                    ready[-1], ready[-2] = ready[-2], ready[-1]
                else:
                    reorder(len(ready) - freed, ev)
            if more is not None:
                for c in more:
                    fin[c] = t
                    last = c
                    if use_res and rel[c]:  # type: ignore[index]
                        release(c)
                    freed = 0
                    for x in range(sp[c], sp[c + 1]):
                        s = si[x]
                        d = indeg[s] - 1
                        indeg[s] = d
                        if d == 0:
                            cause[s] = c
                            ready.append(s)
                            freed += 1
                    if freed > 1 and feeder:
                        if freed == 2:
                            ready[-1], ready[-2] = ready[-2], ready[-1]
                        else:
                            reorder(len(ready) - freed, c)
            if not ready:
                continue
            if use_res and len(ready) > 1:
                by_node_id()
            # -- issue every ready node (FIFO; issuing can complete nodes and so append more) ---
            for g in ready:
                if g < 0:
                    g = ~g  # its resource was handed over
                elif use_res and acq[g]:  # type: ignore[index]
                    key = rank[g] * 4 + acq[g]  # type: ignore[index]
                    if busy_res.get(key):
                        q = waitq.get(key)
                        if q is None:
                            waitq[key] = deque((g,))
                        else:
                            q.append(g)
                        continue
                    busy_res[key] = 1
                start[g] = t
                k = kind[g]
                if k == SEND:
                    if aware:
                        want_link(routes[g][0], g * H, t)
                        continue
                    tt = t + cdelay[chan[g]]  # unaware: the arrival time is known now
                elif k == RECV:
                    c = chan[g]
                    q = arrived[c]
                    if not q:
                        q = posted[c]
                        if q is None:
                            posted[c] = deque((g,))
                        else:
                            q.append(g)
                        continue
                    q.popleft()  # the data was already there: complete by an event now, after the others
                    b.append(g)
                    continue
                elif k == COMP:
                    tt = t + dur[g]
                    key = tt * nranks + rank[g]
                    first = comp_at.get(key)
                    if first is not None:  # joins the NPU's batch for tt: no event of its own
                        more = comp_more.get(first)
                        if more is None:
                            comp_more[first] = [g]
                        else:
                            more.append(g)
                        continue
                    comp_at[key] = g
                else:
                    tt = -1  # no-op kinds and the workload's collective start/end markers
                if tt >= 0:
                    if tt == lt:  # lb is still queued: lt >= t
                        lb.append(g)
                    else:
                        lb = buckets.get(tt)
                        if lb is None:
                            lb = buckets[tt] = [g]
                            heappush(times, tt)
                        else:
                            lb.append(g)
                        lt = tt
                    continue
                # complete g now
                fin[g] = t
                last = g
                if use_res and rel[g]:  # type: ignore[index]
                    release(g)
                freed = 0
                for x in range(sp[g], sp[g + 1]):
                    s = si[x]
                    d = indeg[s] - 1
                    indeg[s] = d
                    if d == 0:
                        cause[s] = g
                        ready.append(s)
                        freed += 1
                if freed > 1 and feeder:
                    if freed == 2:
                        ready[-1], ready[-2] = ready[-2], ready[-1]
                    else:
                        reorder(len(ready) - freed, g)
            ready.clear()
        # -- the next time ----------------------------------------------------------------------
        del buckets[t]
        if not times:
            break
        t = heappop(times)
        b = buckets[t]

    if any(indeg) or any(posted) or any(arrived) or any(waitq.values()):
        back = lay.perm.tolist()
        _diagnose(prog, lay.to_program(start), lay.to_program(fin), lay.to_program(indeg),
                  [deque(back[e] for e in q) for q in posted if q], [deque(back[e] for e in q) for q in arrived if q])
    rank_finish = np.zeros(prog.ranks, dtype=np.int64)
    np.maximum.at(rank_finish, lay.rank_array, np.fromiter(fin, dtype=np.int64, count=n + 1)[:n])
    return EngineState(
        time_ns=fin[last] if last >= 0 else 0,
        last=lay.node(last),
        rank_finish=rank_finish.tolist(),
        link_bytes=lbytes if aware else [],
        link_busy=lbusyt if aware else [],
        _lay=lay,
        _cols=(start, fin, cause),
    )


def _routes(prog: Program, net: AwareNetwork, perm: np.ndarray) -> list[tuple[int, ...] | None]:
    """The route (link ids) of every SEND node in engine order, None elsewhere; one tuple per NPU pair."""
    sends = np.flatnonzero(prog.kind_array()[perm] == K_SEND)
    out: list[tuple[int, ...] | None] = [None] * prog.n
    if sends.size:
        g = perm[sends]
        pair = np.frombuffer(prog.rank, dtype=np.int32)[g].astype(np.int64) * net.npus + \
            np.frombuffer(prog.peer, dtype=np.int32)[g]
        uniq, inv = np.unique(pair, return_inverse=True)
        rts = [net.route(*divmod(p, net.npus)) for p in uniq.tolist()]
        for e, u in zip(sends.tolist(), inv.tolist(), strict=False):
            out[e] = rts[u]
    return out


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


def _diagnose(prog: Program, start: Sequence[int], fin: Sequence[int], indeg: Sequence[int], posted_c: list,
              arrived_c: list) -> None:
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
