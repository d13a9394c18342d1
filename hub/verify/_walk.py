"""One execution of an algorithm under ASTRA-sim's custom-collective semantics.

All dependency-free nodes are issued; a SEND is eager (its message is queued on the FIFO of its
key (src, dst, tag, size) at issue and it completes at once); a RECV completes when a message
is available on its key (FIFO); COMP completes at once. The walk is a worklist over nodes, so it
is O(nodes + edges) and cannot hang. Among ready nodes the lowest global index is issued first,
which makes the run (and the FIFO pairing of concurrent messages) deterministic.

With ``mem`` given the walk also moves symbolic chunk values (see :mod:`._values`): a SEND
snapshots its source chunks at issue, a RECV writes (COPY) or combines (REDUCE) them at
completion, a COMP COPY/REDUCE acts locally, COMP NONE does nothing.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import numpy as np

from ..chakra import Buffer, NodeType, Op
from ._flat import Flat
from ._report import ProblemSink
from ._values import BAD, Codec

__all__ = ["WalkResult", "walk"]

_BUF = {int(Buffer.INPUT): "input", int(Buffer.OUTPUT): "output", int(Buffer.SCRATCH): "scratch"}
_SEND, _RECV, _COMP = int(NodeType.SEND), int(NodeType.RECV), int(NodeType.COMP)
_COPY = int(Op.COPY)


@dataclass
class WalkResult:
    """What a walk reached: per-node completion, and (with ``record``) pairing and order."""

    done: list[bool]
    issued: list[bool]
    completed: int
    #: RECV global index -> SEND global index it consumed (only with record=True)
    matched: dict[int, int] = field(default_factory=dict)
    #: completion order (only with record=True)
    order: list[int] = field(default_factory=list)
    waiting: list[int] = field(default_factory=list)  # RECVs issued but never completed
    keys: list[int] = field(default_factory=list)  # walk key per node (-1 = not comm)


def _compress(a: np.ndarray) -> tuple[np.ndarray, int]:
    u, inv = np.unique(a, return_inverse=True)
    return inv.reshape(-1).astype(np.int64), max(int(u.shape[0]), 1)


def _keys(f: Flat) -> list[int]:
    """A small int per SEND/RECV naming its FIFO (src, dst, tag, size); -1 for other nodes."""
    comm = np.flatnonzero((f.kind == NodeType.SEND) | (f.kind == NodeType.RECV))
    key = np.full(f.n, -1, dtype=np.int64)
    if comm.shape[0]:
        is_send = f.kind[comm] == NodeType.SEND
        src = np.where(is_send, f.rank[comm], f.peer[comm]).astype(np.int64)
        dst = np.where(is_send, f.peer[comm], f.rank[comm]).astype(np.int64)
        R = int(max(src.max(), dst.max())) + 1
        t, T = _compress(f.tag[comm])
        z, Z = _compress(f.size[comm])
        conn, C = _compress((src * R + dst) * T + t)  # R*R*T < 2**63 as T <= node count
        key[comm] = _compress(conn * Z + z)[0]  # dense 0..K-1, so FIFOs can live in a list
    return key.tolist()


def _data_columns(f: Flat, base: np.ndarray) -> tuple[list[int], list[int], list[int], list[int]]:
    """Per node as Python lists (the loop indexes them one at a time): chunk count, op, and the
    flat source and destination addresses in the rank's memory (buffer base + offset)."""
    sb = np.clip(f.src_buf.astype(np.int64), 0, 2)
    db = np.clip(f.dst_buf.astype(np.int64), 0, 2)
    saddr = (base[f.rank, sb] + f.src_off).tolist()
    daddr = (base[f.rank, db] + f.dst_off).tolist()
    return f.count.tolist(), f.op.tolist(), saddr, daddr


class _Data:
    """The data half of a walk: per-rank memories, the moves of each node kind, and the
    reporting of data errors (uninitialised reads, invalid combinations, wrong sizes)."""

    def __init__(self, f: Flat, mem: list[list[int]], base: np.ndarray, codec: Codec, sink: ProblemSink) -> None:
        self.f, self.mem, self.codec, self.sink = f, mem, codec, sink
        self.kind = f.kind.tolist()
        self.rank = f.rank.tolist()
        self.cnt, self.op, self.saddr, self.daddr = _data_columns(f, base)
        self.W, self.LOW = codec.W, codec.LOW

    def bad_read(self, v: int, payload: list[int], buf: int, off: int) -> list[int]:
        """Report the first uninitialised chunk read by v and poison the read values."""
        sink = self.sink
        for e, x in enumerate(payload):
            if x == 0 and sink.full:
                sink.total += 1
                break
            if x == 0:
                r, i = self.f.where(v)
                sink.add(
                    f"{NodeType(self.kind[v]).name} reads {_BUF.get(buf, '?')} chunk {off + e}, which is uninitialised",
                    r,
                    i,
                )
                break
        return [x if x > 0 else BAD for x in payload]

    def combine(self, v: int, m: list[int], a: int, src: list[int], what: str) -> None:
        """m[a + e] := m[a + e] (+) src[e], reporting invalid combinations once."""
        W, LOW, sink = self.W, self.LOW, self.sink
        for e, x in enumerate(src):
            d = m[a + e]
            if d > 0 and x > 0 and not ((d ^ x) & LOW) and not ((d & x) >> W):
                m[a + e] = d | x
            else:
                if d >= 0 and x >= 0 and sink.full:
                    sink.total += 1
                elif d >= 0 and x >= 0:  # a new error, not an echo of an earlier one
                    r, i = self.f.where(v)
                    buf = int(self.f.dst_buf[v])
                    sink.add(
                        f"{what} into {_BUF.get(buf, '?')} chunk {int(self.f.dst_off[v]) + e} "
                        f"{self.codec.combine_error(d, x)}",
                        r,
                        i,
                    )
                m[a + e] = BAD

    def snapshot(self, v: int) -> list[int]:
        """What SEND v carries: its source chunks at issue (the slice is the snapshot)."""
        a = self.saddr[v]
        payload = self.mem[self.rank[v]][a : a + self.cnt[v]]
        if payload and min(payload) <= 0:
            payload = self.bad_read(v, payload, int(self.f.src_buf[v]), int(self.f.src_off[v]))
        return payload

    def comp(self, v: int) -> None:
        """COMP v with a data op: copy or reduce its source chunks into its destination."""
        m = self.mem[self.rank[v]]
        a, c = self.saddr[v], self.cnt[v]
        src = m[a : a + c]
        if min(src) <= 0:
            src = self.bad_read(v, src, int(self.f.src_buf[v]), int(self.f.src_off[v]))
        if self.op[v] == _COPY:
            m[self.daddr[v] : self.daddr[v] + c] = src
        else:
            self.combine(v, m, self.daddr[v], src, "COMP REDUCE")

    def receive(self, v: int, payload: list[int] | None) -> None:
        """RECV v completes with ``payload``: write (COPY) or combine (REDUCE) it."""
        cnt = self.cnt[v]
        assert payload is not None  # a SEND snapshots its payload whenever data moves
        if len(payload) != cnt:
            # only possible when concurrent messages on one key pair differently from
            # the static (issue-order) pairing that the structure level checked
            r, i = self.f.where(v)
            self.sink.add(
                f"RECV of {cnt} chunk(s) from rank {int(self.f.peer[v])} received a message of "
                f"{len(payload)} chunk(s): concurrent messages on this connection pair in a "
                "different order at run time; give them distinct tags",
                r,
                i,
            )
            payload = (payload + [BAD] * cnt)[:cnt]
        m = self.mem[self.rank[v]]
        a = self.daddr[v]
        if self.op[v] == _COPY:
            m[a : a + len(payload)] = payload
        elif len(payload) == 1:
            d, x = m[a], payload[0]
            if d > 0 and x > 0 and not ((d ^ x) & self.LOW) and not ((d & x) >> self.W):
                m[a] = d | x
            else:
                self.combine(v, m, a, payload, "RECV REDUCE")
        else:
            self.combine(v, m, a, payload, "RECV REDUCE")


def walk(
    f: Flat,
    *,
    mem: list[list[int]] | None = None,
    base: np.ndarray | None = None,
    codec: Codec | None = None,
    sink: ProblemSink | None = None,
    record: bool = False,
) -> WalkResult:
    """Execute ``f``; with ``mem`` (per-rank flat memory), ``base`` ((ranks, 3) buffer start
    addresses), ``codec`` and ``sink`` also move data and report data errors to ``sink``."""
    data: _Data | None = None
    if mem is not None:
        assert base is not None and codec is not None and sink is not None
        data = _Data(f, mem, base, codec, sink)
    return _run(f, _keys(f), data, record)


def _run(f: Flat, key: list[int], data: _Data | None, record: bool) -> WalkResult:
    """The worklist itself. It stays one loop because it is the hot path (one iteration per
    node); the data moves are delegated to ``data``."""
    N = f.n
    kind = f.kind.tolist()
    indeg = np.diff(f.dep_ptr).tolist()
    succ = f.succ.tolist()
    sp = f.succ_ptr.tolist()
    done = [False] * N
    issued = [False] * N
    K = max(key, default=-1) + 1
    # FIFOs per key as [head, item, item, ...]; None until first used
    msgs: list[list | None] = [None] * K  # queued messages (payload, send)
    waits: list[list | None] = [None] * K  # RECVs waiting for a message
    matched: dict[int, int] = {}
    order: list[int] = []
    heap = np.flatnonzero(np.diff(f.dep_ptr) == 0).tolist()  # sorted, hence a valid heap
    pop, push = heapq.heappop, heapq.heappush
    completed = 0

    while heap:
        v = pop(heap)
        issued[v] = True
        k = kind[v]
        got = None  # (payload, send) when v is a RECV that completes now
        if k == _SEND:
            kk = key[v]
            payload = data.snapshot(v) if data is not None else None
            w = waits[kk]
            if w is not None and len(w) > w[0]:
                # the SEND completes, then the RECV that was waiting for it
                got = (payload, v)
                done[v] = True
                completed += 1
                if record:
                    order.append(v)
                for x in succ[sp[v] : sp[v + 1]]:
                    indeg[x] -= 1
                    if indeg[x] == 0:
                        push(heap, x)
                v = w[w[0]]
                w[0] += 1
            else:
                q = msgs[kk]
                if q is None:
                    msgs[kk] = q = [1]
                q.append((payload, v))
        elif k == _RECV:
            kk = key[v]
            q = msgs[kk]
            if q is not None and len(q) > q[0]:
                got = q[q[0]]
                q[0] += 1
            else:
                w = waits[kk]
                if w is None:
                    waits[kk] = w = [1]
                w.append(v)
                continue
        elif data is not None and k == _COMP and data.op[v] and data.cnt[v] > 0:
            data.comp(v)
        if got is not None:
            if data is not None:
                data.receive(v, got[0])  # the payload is a list whenever data moves
            if record:
                matched[v] = got[1]
        if record:
            order.append(v)
        done[v] = True
        completed += 1
        for x in succ[sp[v] : sp[v + 1]]:
            indeg[x] -= 1
            if indeg[x] == 0:
                push(heap, x)

    waiting = [v for w in waits if w is not None for v in w[w[0] :]]
    return WalkResult(done, issued, completed, matched, order, sorted(waiting), key)
