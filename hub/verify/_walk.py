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
    N = f.n
    kind = f.kind.tolist()
    rank = f.rank.tolist()
    indeg = np.diff(f.dep_ptr).tolist()
    succ = f.succ.tolist()
    sp = f.succ_ptr.tolist()
    key = _keys(f)
    SEND, RECV = int(NodeType.SEND), int(NodeType.RECV)
    data = mem is not None
    if data:
        assert base is not None and codec is not None and sink is not None
        cnt = f.count.tolist()
        op = f.op.tolist()
        sb = np.clip(f.src_buf.astype(np.int64), 0, 2)
        db = np.clip(f.dst_buf.astype(np.int64), 0, 2)
        saddr = (base[f.rank, sb] + f.src_off).tolist()
        daddr = (base[f.rank, db] + f.dst_off).tolist()
        W, LOW = codec.W, codec.LOW
        COPY, REDUCE = int(Op.COPY), int(Op.REDUCE)
        COMP = int(NodeType.COMP)

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

    def bad_read(v: int, payload: list[int], buf: int, off: int) -> list[int]:
        # report the first uninitialised chunk read by v and poison the read values
        for e, x in enumerate(payload):
            if x == 0 and sink.full:  # type: ignore[union-attr]
                sink.total += 1  # type: ignore[union-attr]
                break
            if x == 0:
                r, i = f.where(v)
                sink.add(f"{NodeType(kind[v]).name} reads {_BUF.get(buf, '?')} chunk {off + e}, "  # type: ignore[union-attr]
                         "which is uninitialised", r, i)
                break
        return [x if x > 0 else BAD for x in payload]

    def combine(v: int, m: list[int], a: int, src: list[int], what: str) -> None:
        # m[a + e] := m[a + e] (+) src[e], reporting invalid combinations once
        for e, x in enumerate(src):
            d = m[a + e]
            if d > 0 and x > 0 and not ((d ^ x) & LOW) and not ((d & x) >> W):
                m[a + e] = d | x
            else:
                if d >= 0 and x >= 0 and sink.full:  # type: ignore[union-attr]
                    sink.total += 1  # type: ignore[union-attr]
                elif d >= 0 and x >= 0:  # a new error, not an echo of an earlier one
                    r, i = f.where(v)
                    buf = int(f.dst_buf[v])
                    sink.add(f"{what} into {_BUF.get(buf, '?')} chunk {int(f.dst_off[v]) + e} "  # type: ignore[union-attr]
                             f"{codec.combine_error(d, x)}", r, i)  # type: ignore[union-attr]
                m[a + e] = BAD

    while heap:
        v = pop(heap)
        issued[v] = True
        k = kind[v]
        got = None  # (payload, send) when v is a RECV that completes now
        if k == SEND:
            kk = key[v]
            payload = None
            if data:
                a = saddr[v]
                payload = mem[rank[v]][a : a + cnt[v]]  # the slice is the snapshot
                if payload and min(payload) <= 0:
                    payload = bad_read(v, payload, int(f.src_buf[v]), int(f.src_off[v]))
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
        elif k == RECV:
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
        elif data and k == COMP and op[v] and cnt[v] > 0:
            m = mem[rank[v]]
            a, c = saddr[v], cnt[v]
            src = m[a : a + c]
            if min(src) <= 0:
                src = bad_read(v, src, int(f.src_buf[v]), int(f.src_off[v]))
            if op[v] == COPY:
                m[daddr[v] : daddr[v] + c] = src
            else:
                combine(v, m, daddr[v], src, "COMP REDUCE")
        if got is not None:
            if data:
                payload = got[0]
                if len(payload) != cnt[v]:
                    # only possible when concurrent messages on one key pair differently from
                    # the static (issue-order) pairing that the structure level checked
                    r, i = f.where(v)
                    sink.add(f"RECV of {cnt[v]} chunk(s) from rank {int(f.peer[v])} received a message of "  # type: ignore[union-attr]
                             f"{len(payload)} chunk(s): concurrent messages on this connection pair in a "
                             "different order at run time; give them distinct tags", r, i)
                    payload = (payload + [BAD] * cnt[v])[: cnt[v]]
                m = mem[rank[v]]
                a = daddr[v]
                if op[v] == COPY:
                    m[a : a + len(payload)] = payload
                elif len(payload) == 1:
                    d, x = m[a], payload[0]
                    if d > 0 and x > 0 and not ((d ^ x) & LOW) and not ((d & x) >> W):
                        m[a] = d | x
                    else:
                        combine(v, m, a, payload, "RECV REDUCE")
                else:
                    combine(v, m, a, payload, "RECV REDUCE")
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
