"""The event-driven engine: ASTRA-sim's custom-collective walker over a flattened program.

Semantics (see docs/simulator.md): every node whose dependencies are done is issued at once
(workload nodes may first wait for their NPU's resource); a SEND moves its data eagerly and
completes when the data arrives; a RECV completes on arrival, or at once if its data is already
there; messages pair by (tag, src, dst, size) FIFO per key; COMP nodes take their duration.

Time is an integer number of ns. Events live in a calendar queue (a heap of distinct times, a
FIFO list per time), so events at equal times run in the order they were scheduled, as in
ASTRA-sim's event queue. Ready nodes are issued in FIFO order: initially rank-major and by
position; later in the order their last dependency completed (successors in position order).
"""

from __future__ import annotations

from array import array
from collections import deque
from dataclasses import dataclass, field
from heapq import heappop, heappush
from typing import Any

from ..errors import SimulationError
from ._network import AwareNetwork
from ._program import K_COMP, K_RECV, K_SEND, Program

__all__ = ["EngineState", "run_engine"]


@dataclass
class EngineState:
    """What one run leaves behind (times in ns)."""

    time_ns: int
    last: int  # the node that completed last
    start: array  # issue time per node
    fin: array  # completion time per node
    cause: array  # the node whose completion (or data arrival) released this one; -1 for roots
    rank_finish: list[int]
    link_bytes: list[int] = field(default_factory=list)
    link_busy: list[int] = field(default_factory=list)


def run_engine(prog: Program, *, delays: Any = None, net: AwareNetwork | None = None) -> EngineState:
    """Run ``prog`` under the unaware model (``delays``: per-node message delay in ns) or the
    aware model (``net``). Raises :class:`SimulationError` on deadlock or unmatched messages."""
    n = prog.n
    kind = prog.kind
    rank = prog.rank
    peer = prog.peer
    tagx = prog.tagx
    size = prog.size
    dur = prog.dur
    sp = prog.succ_ptr
    si = prog.succ_idx
    indeg = list(prog.indeg)
    acq = prog.acq
    rel = prog.rel
    use_res = acq is not None
    aware = net is not None

    state = bytearray(n)  # 0 waiting for deps, 1 issued (or queued for a resource), 2 done
    start = array("q", bytes(8 * n))
    fin = array("q", bytes(8 * n))
    cause = array("q", [-1]) * n
    rank_finish = [0] * prog.ranks
    posted: dict[tuple[int, int, int, int], deque[int]] = {}
    arrived: dict[tuple[int, int, int, int], deque[int]] = {}
    times: list[int] = []
    buckets: dict[int, list[int]] = {}
    ready: list[int] = []
    ndone = 0
    last = -1
    busy_res: dict[int, int] = {}
    waitq: dict[int, deque[int]] = {}

    if aware:
        assert net is not None
        H = net.max_hops + 1
        bp = net.bp
        llat = net.lat
        route = net.route
        nl = net.nlinks
        lbusy = bytearray(nl)
        lq: list[deque[int] | None] = [None] * nl
        lbytes = [0] * nl
        lbusyt = [0] * nl
    else:
        H = 1
        delay = delays

    def schedule(tt: int, ev: int) -> None:
        b = buckets.get(tt)
        if b is None:
            buckets[tt] = [ev]
            heappush(times, tt)
        else:
            b.append(ev)

    def complete(g: int, t: int) -> None:
        nonlocal ndone, last
        state[g] = 2
        fin[g] = t
        rank_finish[rank[g]] = t  # events run in time order, so t never decreases
        ndone += 1
        last = g
        if use_res and rel[g]:  # type: ignore[index]
            release(rank[g] * 4 + rel[g], t)  # type: ignore[index]
        for k in range(sp[g], sp[g + 1]):
            s = si[k]
            d = indeg[s] - 1
            indeg[s] = d
            if d == 0:
                cause[s] = g
                ready.append(s)

    def release(key: int, t: int) -> None:
        q = waitq.get(key)
        if q:
            ready.append(~q.popleft())  # hand the resource over directly (FIFO), ~g = "granted"
        else:
            busy_res[key] = 0

    def deliver(g: int, t: int) -> None:
        key = (tagx[g], rank[g], peer[g], size[g])
        complete(g, t)  # a SEND completes when its data arrives
        q = posted.get(key)
        if q:
            r = q.popleft()
            if not q:
                del posted[key]
            cause[r] = g
            complete(r, t)
        else:
            q = arrived.get(key)
            if q is None:
                arrived[key] = deque((g,))
            else:
                q.append(g)

    def transmit(li: int, code: int, t: int) -> None:
        lbusy[li] = 1
        sz = size[code // H]
        x = sz / bp[li]
        schedule(t + int(llat[li] + x), n + code)  # arrival at the link's far end
        ser = int(x)
        schedule(t + ser, -1 - li)  # the link is free again
        lbytes[li] += sz
        lbusyt[li] += ser

    def want_link(li: int, code: int, t: int) -> None:
        if lbusy[li]:
            q = lq[li]
            if q is None:
                lq[li] = deque((code,))
            else:
                q.append(code)
        else:
            transmit(li, code, t)

    def issue(g: int, t: int) -> None:
        if g < 0:
            g = ~g  # resource already granted
        elif use_res:
            c = acq[g]  # type: ignore[index]
            if c:
                key = rank[g] * 4 + c
                if busy_res.get(key):
                    state[g] = 1
                    q = waitq.get(key)
                    if q is None:
                        waitq[key] = deque((g,))
                    else:
                        q.append(g)
                    return
                busy_res[key] = 1
        state[g] = 1
        start[g] = t
        k = kind[g]
        if k == K_SEND:
            if aware:
                want_link(route(rank[g], peer[g])[0], g * H, t)
            else:
                schedule(t + delay[g], g)
        elif k == K_RECV:
            key = (tagx[g], peer[g], rank[g], size[g])
            q = arrived.get(key)
            if q:
                q.popleft()
                if not q:
                    del arrived[key]
                complete(g, t)  # the data was already there
            else:
                q = posted.get(key)
                if q is None:
                    posted[key] = deque((g,))
                else:
                    q.append(g)
        elif k == K_COMP:
            schedule(t + dur[g], g)
        else:
            complete(g, t)  # no-op kinds and the workload's collective start/end markers

    def drain(t: int) -> None:
        j = 0
        while j < len(ready):
            issue(ready[j], t)
            j += 1
        ready.clear()

    ready.extend(g for g in range(n) if indeg[g] == 0)
    if not ready:
        raise SimulationError("no node is free of dependencies (every node waits for another)",
                              hint="the dependency graph has a cycle; run the verifier (hub.verify)")
    drain(0)
    while times:
        t = heappop(times)
        b = buckets[t]
        i = 0
        while i < len(b):
            ev = b[i]
            i += 1
            if ev < 0:  # a link became free
                li = -1 - ev
                q = lq[li]
                if q:
                    transmit(li, q.popleft(), t)
                else:
                    lbusy[li] = 0
            elif ev < n:
                if kind[ev] == K_SEND:  # unaware: the message arrived
                    deliver(ev, t)
                else:  # a COMP finished
                    complete(ev, t)
            else:  # aware: message finished hop h
                g, h = divmod(ev - n, H)
                rt = route(rank[g], peer[g])
                if h + 1 == len(rt):
                    deliver(g, t)
                else:
                    want_link(rt[h + 1], g * H + h + 1, t)
            if ready:
                drain(t)
        del buckets[t]

    if ndone < n or arrived:
        _diagnose(prog, state, posted, arrived, indeg)
    return EngineState(
        time_ns=fin[last] if last >= 0 else 0,
        last=last,
        start=start,
        fin=fin,
        cause=cause,
        rank_finish=rank_finish,
        link_bytes=lbytes if aware else [],
        link_busy=lbusyt if aware else [],
    )


def node_ref(prog: Program, g: int) -> str:
    """``rank 3 node 12`` (plus the collective instance inside a workload)."""
    inst = prog.inst[g]
    where = f" in {prog.labels.get(inst, f'collective #{inst - 1}')}" if inst else ""
    return f"rank {prog.rank[g]} node {prog.local_id[g]}{where}"


def _describe_msg(prog: Program, key: tuple[int, int, int, int]) -> str:
    tagx, src, dst, size = key
    return f"{src}->{dst} tag {tagx & 0xFFFFFFFF} {size} B"


def _diagnose(prog: Program, state: bytearray, posted: dict, arrived: dict, indeg: list[int]) -> None:
    """Turn an incomplete run into one clear SimulationError."""
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
    blocked = [g for g in range(prog.n) if state[g] != 2]
    waiting = [q[0] for q in posted.values()]
    parts = []
    if waiting:
        key, q = next(iter(posted.items()))
        parts.append(
            f"{sum(len(v) for v in posted.values())} RECV(s) wait for data that is never sent, e.g. "
            f"{node_ref(prog, q[0])} ({_describe_msg(prog, key)})"
        )
    never = [g for g in blocked if state[g] == 0]
    if never:
        parts.append(f"{len(never)} node(s) never became ready, e.g. {node_ref(prog, never[0])}")
    waiting_set = set(waiting)
    queued = [g for g in blocked if state[g] == 1 and g not in waiting_set]
    if queued and not waiting:
        parts.append(f"{len(queued)} node(s) wait for a busy NPU resource, e.g. {node_ref(prog, queued[0])}")
    raise SimulationError(
        f"deadlock: {len(blocked)} of {prog.n} nodes never complete; " + "; ".join(parts),
        hint="check the send/recv pairing and dependencies (hub.verify reports every problem)",
    )
