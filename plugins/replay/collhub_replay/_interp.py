"""The per-rank DAG interpreters (torch; imported only inside rank processes).

gloo: every receive of an iteration is posted up front (``irecv``, FIFO per (peer, tag) as the
profile pairs them); a node issues when its dependencies are done; a SEND is an ``isend``. gloo's
``Work.is_completed()`` never turns true for point-to-point work until someone ``wait()``s on it,
so one waiter thread per connection waits on that connection's works in order (gloo delivers
a connection's messages in order, so no later completion is ever held up) and reports
completions on a queue; the interpreter blocks only on that queue, with the watchdog timeout.

NCCL: NCCL ignores tags and matches by issue order per peer pair, and a send blocks the GPU
until its peer posts the receive. The pre-flight's rounds put both ends of every message in
the same ``batch_isend_irecv`` group of the same round, ordered by message; local work between
groups is stream-ordered, so the host never blocks.
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from ._memory import reduce_into
from ._plan import COMP_COPY, COMP_NOOP, COMP_REDUCE, RECV_COPY, RECV_REDUCE, SEND, RankPlan

__all__ = ["Hang", "Program", "make_program", "run_gloo", "run_nccl"]


class Hang(Exception):
    """No completion within the watchdog timeout; ``waiting`` names the stuck nodes."""

    def __init__(self, rank: int, waiting: list[str]) -> None:
        super().__init__(f"rank {rank}: no progress")
        self.rank = rank
        self.waiting = waiting


@dataclass
class Program:
    """Tensors of one case bound to a rank plan: per node its source/destination view and,
    for a receive not received in place, its temporary buffer."""

    rp: RankPlan
    op: str
    src: list[Any]
    dst: list[Any]
    tmp: list[Any]
    empty: list[bool]
    waiters: dict[tuple[str, int, int], _Waiter] = field(default_factory=dict)
    done_q: queue.SimpleQueue[tuple[int, BaseException | None]] = field(default_factory=queue.SimpleQueue)

    def close(self) -> None:
        for w in self.waiters.values():
            w.q.put(None)
        for w in self.waiters.values():
            w.join(timeout=1.0)  # idle waiters exit at once; a stuck one (a hang) is left behind
        self.waiters.clear()


class _Waiter(threading.Thread):
    def __init__(self, done_q: queue.SimpleQueue[tuple[int, BaseException | None]]) -> None:
        super().__init__(daemon=True)
        self.q: queue.SimpleQueue[tuple[int, Any] | None] = queue.SimpleQueue()
        self.done_q = done_q
        self.start()

    def run(self) -> None:
        while True:
            item = self.q.get()
            if item is None:
                return
            v, work = item
            try:
                work.wait()
            except BaseException as exc:  # a broken group: report it, the interpreter raises
                self.done_q.put((v, exc))
                continue
            self.done_q.put((v, None))


def make_program(torch: Any, rp: RankPlan, mem: Any, chunk: int, op: str, dtype: Any, device: Any) -> Program:
    n = len(rp)
    src: list[Any] = [None] * n
    dst: list[Any] = [None] * n
    tmp: list[Any] = [None] * n
    empty = [rp.cnt[v] <= 0 for v in range(n)]
    for v in range(n):
        c = rp.cnt[v] * chunk
        if rp.src[v] >= 0:
            src[v] = mem[rp.src[v] * chunk : rp.src[v] * chunk + c]
        if rp.dst[v] >= 0:
            dst[v] = mem[rp.dst[v] * chunk : rp.dst[v] * chunk + c]
        if rp.kind[v] in (RECV_COPY, RECV_REDUCE) and not empty[v]:
            tmp[v] = dst[v] if rp.direct[v] else torch.empty(c, dtype=dtype, device=device)
    return Program(rp, op, src, dst, tmp, empty)


def _local(torch: Any, p: Program, v: int) -> None:
    """Run COMP node v, or commit the arrived receive v."""
    k = p.rp.kind[v]
    if p.empty[v] or k == COMP_NOOP:
        return
    if k == COMP_COPY:
        p.dst[v].copy_(p.src[v])
    elif k == COMP_REDUCE:
        reduce_into(torch, p.op, p.dst[v], p.src[v])
    elif k == RECV_COPY:
        if not p.rp.direct[v]:
            p.dst[v].copy_(p.tmp[v])
    elif k == RECV_REDUCE:
        reduce_into(torch, p.op, p.dst[v], p.tmp[v])


def _waiter(p: Program, key: tuple[str, int, int]) -> _Waiter:
    w = p.waiters.get(key)
    if w is None:
        w = p.waiters[key] = _Waiter(p.done_q)
    return w


def run_gloo(torch: Any, dist: Any, p: Program, timeout: float) -> None:
    """One iteration of the plan on gloo (see the module docstring)."""
    rp = p.rp
    n = len(rp)
    kind, deps, succ, peer, tag, conn_prev = rp.kind, rp.deps, rp.succ, rp.peer, rp.tag, rp.conn_prev
    left = [len(d) for d in deps]
    arrived = [False] * n
    issued = [False] * n
    ready_send = [False] * n  # dependencies done, waiting for the previous send on the connection
    state = [0] * n  # 0 pending, 1 deps done (recv waiting for data), 2 done
    remaining = n
    stack: list[int] = []
    nxt = [-1] * n
    for v in range(n):
        if kind[v] == SEND and conn_prev[v] >= 0:
            nxt[conn_prev[v]] = v
    for v in rp.recv_post:
        if p.empty[v]:
            arrived[v] = True
            continue
        work = dist.irecv(p.tmp[v], src=peer[v], tag=tag[v])
        _waiter(p, ("r", peer[v], tag[v])).q.put((v, work))
    stack.extend(v for v in range(n) if left[v] == 0)

    def complete(v: int) -> None:
        nonlocal remaining
        state[v] = 2
        remaining -= 1
        for s in succ[v]:
            left[s] -= 1
            if left[s] == 0:
                stack.append(s)

    def issue_send(v: int) -> None:
        issued[v] = True
        if p.empty[v]:
            complete(v)
        else:
            work = dist.isend(p.src[v], dst=peer[v], tag=tag[v])
            _waiter(p, ("s", peer[v], tag[v])).q.put((v, work))
        w = nxt[v]
        if w >= 0 and ready_send[w] and not issued[w]:
            issue_send(w)

    while remaining:
        while stack:
            v = stack.pop()
            k = kind[v]
            if k == SEND:
                ready_send[v] = True
                if conn_prev[v] < 0 or issued[conn_prev[v]]:
                    issue_send(v)
            elif k in (RECV_COPY, RECV_REDUCE):
                state[v] = 1
                if arrived[v]:
                    _local(torch, p, v)
                    complete(v)
            else:
                _local(torch, p, v)
                complete(v)
        if not remaining:
            break
        try:
            v, exc = p.done_q.get(timeout=timeout)
        except queue.Empty:
            raise Hang(rp.rank, _waiting(rp, state, issued, arrived)) from None
        if exc is not None:
            raise exc
        if kind[v] == SEND:
            complete(v)
        else:
            arrived[v] = True
            if state[v] == 1:
                _local(torch, p, v)
                complete(v)


def _waiting(rp: RankPlan, state: list[int], issued: list[bool], arrived: list[bool]) -> list[str]:
    out = []
    for v in range(len(rp)):
        if state[v] == 2:
            continue
        k = rp.kind[v]
        if k == SEND and issued[v]:
            out.append(f"{rp.describe(v)} issued, not completed")
        elif k in (RECV_COPY, RECV_REDUCE) and not arrived[v]:
            out.append(f"{rp.describe(v)} posted, no data")
    return out or [f"{sum(1 for s in state if s != 2)} node(s) never became ready"]


def run_nccl(torch: Any, dist: Any, p: Program) -> None:
    """One iteration of the plan on NCCL: the pre-flight's rounds, one group per round."""
    rp = p.rp
    for local, group in rp.rounds:
        for v in local:
            _local(torch, p, v)
        ops = []
        for v in group:
            if p.empty[v]:
                continue
            if rp.kind[v] == SEND:
                ops.append(dist.P2POp(dist.isend, p.src[v], rp.peer[v]))
            else:
                ops.append(dist.P2POp(dist.irecv, p.tmp[v], rp.peer[v]))
        if ops:
            for work in dist.batch_isend_irecv(ops):
                work.wait()  # makes the current stream wait; the host does not block


def now(torch: Any, cuda: bool) -> float:
    if cuda:
        torch.cuda.synchronize()
    return time.perf_counter()
