"""``algorithm_to_plan``: any collhub algorithm as an MSCCL++ execution plan.

Rules (each keeps the executor's limits, ``shared/reference/mscclpp.md`` §13):

1. **Order.** Messages are paired as the profile says (per (src, dst, tag), k-th SEND with k-th
   RECV, each rank in its lowest-position-first topological order). One global topological order
   of all nodes (local dependencies plus SEND → RECV) is computed; each rank runs its nodes in that
   order. Every wait then waits for a signal that an earlier point of the same global order sends,
   so the plan cannot deadlock (two-sided eager sends become non-blocking puts and signals).
2. **Messages.** Each message gets its own staging slot in the receiver's scratch (after the
   algorithm's own scratch), so no slot is reused within a launch.
   *Simple*: the sender ``put``s into the slot, ``nop``, ``signal``s (port: one ``pws``); the
   receiver ``wait``s until the message's signal has arrived (the n-th wait on a connection
   returns after the n-th signal: it issues as many waits as needed, in the sender's order),
   ``nop``, then ``copy`` (RECV COPY) or ``re`` (RECV REDUCE) into the destination, ``nop``.
   *LL*: the sender ``ppkt``s into the slot; the receiver ``upkt``s / ``repkt``s it (the packet
   flags synchronise; no signal, no wait). Either way the signals balance per connection.
3. **Local work.** COMP COPY → ``copy``, COMP REDUCE → ``re`` (dst = dst + src), each followed
   by a ``nop``; cost-only COMPs vanish.
4. **Blocks.** A rank's op list is cut into thread blocks of at most 64 ops, 16 channels and 16
   remote buffers each; block b+1 starts with ``sem_acquire`` of a semaphore block b releases
   at its end (initial value 0: balanced in every launch).
5. **Channels.** One channel of the chosen type per pair of ranks that exchange messages, listed
   in the same order on both (the executor pairs the k-th channel of r→p with the k-th of p→r).
6. **Top level.** ``name``, ``collective``, ``inplace``, the size window and, for an imported
   plan, every field kept under ``os.meta.*``.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any

from hub.chakra import ONESIDED as OS, Algorithm, Collective, NodeType, Op
from hub.errors import ExportError

__all__ = ["ExportStats", "algorithm_to_plan"]

MAX_OPS = 64
MAX_CHANNEL = 16
_BUF = {0: "i", 1: "o", 2: "s"}
_U64 = 2**64 - 1


@dataclass
class ExportStats:
    ranks: int = 0
    blocks: int = 0
    ops: int = 0
    messages: int = 0
    max_ops_per_block: int = 0
    scratch_chunks: int = 0

    def as_metrics(self) -> dict[str, int]:
        return dict(vars(self))


@dataclass
class _Group:
    """Ops that stay in one block, with the peers whose channel / remote scratch they use."""

    ops: list[dict[str, Any]]
    chan_peers: set[int] = field(default_factory=set)
    buf_peers: set[int] = field(default_factory=set)


def _topo(g: Any) -> list[int]:
    """Lowest-position-first topological order of one rank (the profile's issue order)."""
    n = len(g)
    ptr, pos = g.dep_ptr, g.dep_pos
    indeg = [int(ptr[v + 1] - ptr[v]) for v in range(n)]
    users: list[list[int]] = [[] for _ in range(n)]
    for v in range(n):
        for d in pos[ptr[v] : ptr[v + 1]].tolist():
            users[d].append(v)
    heap = [v for v in range(n) if indeg[v] == 0]
    heapq.heapify(heap)
    out = []
    while heap:
        v = heapq.heappop(heap)
        out.append(v)
        for u in users[v]:
            indeg[u] -= 1
            if indeg[u] == 0:
                heapq.heappush(heap, u)
    if len(out) != n:
        raise ExportError(f"rank {g.ids[0] if n else 0}: the dependencies have a cycle", hint="verify the algorithm")
    return out


def _global_order(alg: Algorithm) -> tuple[list[list[int]], dict[tuple[int, int], tuple[int, int]]]:
    """Each rank's nodes in one global topological order, and the message pairing
    (rank, send position) -> (peer, recv position)."""
    R = alg.ranks
    orders = [_topo(g) for g in alg.graphs]
    sends: dict[tuple[int, int, int], list[int]] = {}
    recvs: dict[tuple[int, int, int], list[int]] = {}
    for r, g in enumerate(alg.graphs):
        kind, peer, tag = g.kind, g.peer, g.tag
        for v in orders[r]:
            k = int(kind[v])
            if k == NodeType.SEND:
                sends.setdefault((r, int(peer[v]), int(tag[v])), []).append(v)
            elif k == NodeType.RECV:
                recvs.setdefault((int(peer[v]), r, int(tag[v])), []).append(v)
    pair: dict[tuple[int, int], tuple[int, int]] = {}
    recv_of: dict[tuple[int, int], tuple[int, int]] = {}
    for key, ss in sends.items():
        rr = recvs.get(key, [])
        if len(rr) != len(ss):
            raise ExportError(
                f"rank {key[0]} sends {len(ss)} message(s) to rank {key[1]} with tag {key[2]} but {len(rr)} are "
                "received",
                hint="`collhub trace verify` the algorithm first",
            )
        for s, v in zip(ss, rr, strict=True):
            pair[(key[0], s)] = (key[1], v)
            recv_of[(key[1], v)] = (key[0], s)
    if sum(len(v) for v in recvs.values()) != len(recv_of):
        raise ExportError("a RECV has no matching SEND", hint="`collhub trace verify` the algorithm first")
    # global Kahn: local deps plus SEND -> RECV
    indeg: dict[tuple[int, int], int] = {}
    users: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for r, g in enumerate(alg.graphs):
        ptr, pos = g.dep_ptr, g.dep_pos
        for v in range(len(g)):
            deps = pos[ptr[v] : ptr[v + 1]].tolist()
            indeg[(r, v)] = len(deps) + ((r, v) in recv_of)
            for d in deps:
                users.setdefault((r, d), []).append((r, v))
    for (r, s), dst in pair.items():
        users.setdefault((r, s), []).append(dst)
    rank_pos = [{v: i for i, v in enumerate(o)} for o in orders]
    heap = [(rank_pos[r][v], r, v) for (r, v), d in indeg.items() if d == 0]
    heapq.heapify(heap)
    out: list[list[int]] = [[] for _ in range(R)]
    done = 0
    while heap:
        _, r, v = heapq.heappop(heap)
        out[r].append(v)
        done += 1
        for u in users.get((r, v), ()):
            indeg[u] -= 1
            if indeg[u] == 0:
                heapq.heappush(heap, (rank_pos[u[0]][u[1]], u[0], u[1]))
    if done != len(indeg):
        raise ExportError("the algorithm does not run to completion (a cycle of waits)", hint="verify it first")
    return out, pair


def _meta_fields(alg: Algorithm) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in alg.meta.extra:
        if k.startswith(OS.META_PREFIX):
            out[k[len(OS.META_PREFIX) :]] = v
    return out


def algorithm_to_plan(
    alg: Algorithm,
    *,
    protocol: str | None = None,
    channel: str = "memory",
    name: str | None = None,
    min_message_size: int | None = None,
    max_message_size: int | None = None,
) -> tuple[dict[str, Any], ExportStats]:
    """The plan (a JSON-ready dict) for ``alg``, and counts of what it holds."""
    from ._import import no_gc

    with no_gc():
        return _to_plan(alg, protocol, channel, name, min_message_size, max_message_size)


def _to_plan(
    alg: Algorithm,
    protocol: str | None,
    channel: str,
    name: str | None,
    min_message_size: int | None,
    max_message_size: int | None,
) -> tuple[dict[str, Any], ExportStats]:
    m = alg.meta
    if m.in_chunks <= 0 and m.out_chunks <= 0:
        raise ExportError(
            f"algorithm {m.name!r} has no buffer information (in_chunks=out_chunks=0)",
            hint="a plan addresses chunks; export an algorithm in the collhub profile",
        )
    kept = _meta_fields(alg)
    proto = protocol or str(kept.get("protocol", "Simple"))
    if proto not in ("Simple", "LL"):
        raise ExportError(f"protocol {proto!r} is not Simple or LL")
    packet = proto == "LL"
    R = alg.ranks
    orders, pair = _global_order(alg)
    # staging slots: per receiver, one per incoming message, after the algorithm's scratch
    slot_of: dict[tuple[int, int], int] = {}
    next_slot = [m.scratch_chunks] * R
    for r, order in enumerate(orders):
        g = alg.graphs[r]
        for v in order:
            if int(g.kind[v]) == NodeType.RECV:
                slot_of[(r, v)] = next_slot[r]
                next_slot[r] += int(g.count[v])
    # channels: one per pair of ranks that exchange messages, in rank order on both sides
    peers = [
        sorted({int(p) for p in g.peer[(g.kind == NodeType.SEND) | (g.kind == NodeType.RECV)].tolist()})
        for g in alg.graphs
    ]
    sent_seq: dict[tuple[int, int], int] = {}  # (r, send pos) -> index among r's messages to p
    count_to: dict[tuple[int, int], int] = {}
    for r, order in enumerate(orders):
        g = alg.graphs[r]
        for v in order:
            if int(g.kind[v]) == NodeType.SEND:
                p = int(g.peer[v])
                sent_seq[(r, v)] = count_to.get((r, p), 0)
                count_to[(r, p)] = sent_seq[(r, v)] + 1
    recv_from = {dst: src for src, dst in pair.items()}
    stats = ExportStats(ranks=R, messages=len(pair))
    gpus = []
    for r in range(R):
        groups = _rank_groups(alg, r, orders[r], pair, recv_from, slot_of, sent_seq, packet, channel)
        gpus.append(_gpu(alg, r, groups, peers[r], next_slot[r], channel, stats))
        stats.scratch_chunks = max(stats.scratch_chunks, next_slot[r])
    coll = m.collective.value if m.collective is not Collective.CUSTOM else str(kept.get("collective", "custom"))
    lo = min_message_size if min_message_size is not None else int(kept.get("min_message_size", 0) or 0)
    hi = max_message_size if max_message_size is not None else int(kept.get("max_message_size", _U64) or _U64)
    plan: dict[str, Any] = {
        "name": name or m.name or str(kept.get("name", "")) or f"{coll}_{R}",
        "collective": coll,
        "protocol": proto,
        "inplace": bool(m.inplace),
        "reuse_resources": False,  # staging slots need the per-plan scratch
        "gpus": gpus,
        "num_threads_per_block": int(kept.get("num_threads_per_block", 1024) or 1024),
        "use_double_scratch_buffer": packet,
        "buffer_alignment": int(kept.get("buffer_alignment", 16) or 16),
        "min_message_size": lo,
        "max_message_size": hi,
    }
    return plan, stats


def _rank_groups(
    alg: Algorithm,
    r: int,
    order: list[int],
    pair: dict[tuple[int, int], tuple[int, int]],
    recv_from: dict[tuple[int, int], tuple[int, int]],
    slot_of: dict[tuple[int, int], int],
    sent_seq: dict[tuple[int, int], int],
    packet: bool,
    channel: str,
) -> list[_Group]:
    g = alg.graphs[r]
    groups: list[_Group] = []
    waited: dict[int, int] = {}  # peer -> waits issued so far
    nop: dict[str, Any] = {"name": "nop"}
    src: dict[str, Any]
    dst: dict[str, Any]
    op: dict[str, Any]
    for v in order:
        k = int(g.kind[v])
        cnt = int(g.count[v])
        if k == NodeType.SEND:
            p, rv = pair[(r, v)]
            src = {"type": _BUF[int(g.src_buf[v])], "index": int(g.src_off[v]), "size": cnt}
            dst = {"buffer_id": 0, "index": slot_of[(p, rv)], "size": cnt}  # buffer_id set per block
            if packet:
                op = {"name": "ppkt", "src_buff": [src], "dst_buff": [dst], "channel_type": channel}
                if channel == "port":
                    op["channel_ids"] = [0]
                groups.append(_Group([op, dict(nop)], {p} if channel == "port" else set(), {p}))
            elif channel == "port":
                op = {"name": "pws", "src_buff": [src], "dst_buff": [dst], "channel_ids": [0], "channel_type": "port"}
                groups.append(_Group([op, dict(nop)], {p}, {p}))
            else:
                put = {"name": "put", "src_buff": [src], "dst_buff": [dst], "channel_type": "memory"}
                sig = {"name": "signal", "channel_ids": [0], "channel_type": "memory"}
                groups.append(_Group([put, dict(nop), sig], {p}, {p}))
        elif k == NodeType.RECV:
            p, sv = recv_from[(r, v)]
            slot: dict[str, Any] = {"type": "s", "index": slot_of[(r, v)], "size": cnt}
            dst = {"type": _BUF[int(g.dst_buf[v])], "index": int(g.dst_off[v]), "size": cnt}
            ops: list[dict[str, Any]] = []
            chans: set[int] = set()
            if not packet:
                need = sent_seq[(p, sv)] + 1
                while waited.get(p, 0) < need:
                    ops.append({"name": "wait", "channel_ids": [0], "channel_type": channel, "_peer": p})
                    waited[p] = waited.get(p, 0) + 1
                if ops:
                    ops.append(dict(nop))
                    chans.add(p)
            if int(g.op[v]) == Op.REDUCE:
                name = "repkt" if packet else "re"
                ops.append({"name": name, "src_buff": [dict(dst), slot], "dst_buff": [dst], "reduce_op": "sum"})
            else:
                ops.append({"name": "upkt" if packet else "copy", "src_buff": [slot], "dst_buff": [dst]})
            ops.append(dict(nop))
            groups.append(_Group(ops, chans, set()))
        elif k == NodeType.COMP and int(g.op[v]) in (Op.COPY, Op.REDUCE) and cnt > 0:
            src = {"type": _BUF[int(g.src_buf[v])], "index": int(g.src_off[v]), "size": cnt}
            dst = {"type": _BUF[int(g.dst_buf[v])], "index": int(g.dst_off[v]), "size": cnt}
            if int(g.op[v]) == Op.COPY:
                op = {"name": "copy", "src_buff": [src], "dst_buff": [dst]}
            else:
                op = {"name": "re", "src_buff": [dict(dst), src], "dst_buff": [dst], "reduce_op": "sum"}
            groups.append(_Group([op, dict(nop)]))
        if k == NodeType.SEND:
            groups[-1].ops[0]["_peer"] = pair[(r, v)][0]
            if len(groups[-1].ops) > 2:
                groups[-1].ops[2]["_peer"] = pair[(r, v)][0]
    return groups


def _gpu(
    alg: Algorithm, r: int, groups: list[_Group], peers: list[int], scratch: int, channel: str, stats: ExportStats
) -> dict[str, Any]:
    """Cut a rank's groups into blocks within the limits and write the GPU entry."""
    m = alg.meta
    # per-rank tables: channel c <-> peers[c]; remote buffer b <-> scratch of peers[b]
    chan_index = {p: i for i, p in enumerate(peers)}
    blocks: list[list[_Group]] = [[]]
    n_ops = 0
    chans: set[int] = set()
    bufs: set[int] = set()
    budget = MAX_OPS - 4  # room for the sem_acquire/nop at the start and nop/sem_release at the end
    for grp in groups:
        c2, b2 = chans | grp.chan_peers, bufs | grp.buf_peers
        if blocks[-1] and (n_ops + len(grp.ops) > budget or len(c2) > MAX_CHANNEL or len(b2) > MAX_CHANNEL):
            blocks.append([])
            n_ops, c2, b2 = 0, set(grp.chan_peers), set(grp.buf_peers)
        blocks[-1].append(grp)
        n_ops += len(grp.ops)
        chans, bufs = c2, b2
    if not blocks[-1]:
        blocks.pop()
    tbs = []
    sems = []
    for t, blk in enumerate(blocks):
        used_ch = sorted({p for grp in blk for p in grp.chan_peers}, key=chan_index.__getitem__)
        used_buf = sorted({p for grp in blk for p in grp.buf_peers}, key=chan_index.__getitem__)
        local_ch = {p: i for i, p in enumerate(used_ch)}
        local_buf = {p: i for i, p in enumerate(used_buf)}
        ops: list[dict[str, Any]] = []
        if t > 0:
            ops += [{"name": "sem_acquire", "semaphore_ids": [t - 1]}, {"name": "nop"}]
        for grp in blk:
            for op in grp.ops:
                op = dict(op)
                peer = op.pop("_peer", None)
                if peer is not None and "channel_ids" in op:
                    op["channel_ids"] = [local_ch[peer]]
                if peer is not None and op.get("dst_buff") and "buffer_id" in op["dst_buff"][0]:
                    op["dst_buff"] = [dict(op["dst_buff"][0], buffer_id=local_buf[peer])]
                ops.append(op)
        if t + 1 < len(blocks):
            if not ops or ops[-1]["name"] != "nop":
                ops.append({"name": "nop"})
            ops.append({"name": "sem_release", "semaphore_ids": [t]})
            sems.append({"init_value": 0})
        entry: dict[str, Any] = {"id": t, "ops": ops, "channels": []}
        if used_ch:
            entry["channels"].append({"channel_type": channel, "channel_ids": [chan_index[p] for p in used_ch]})
        if used_buf:
            entry["remote_buffer_refs"] = [
                {"access_channel_type": channel, "remote_buffer_ids": [chan_index[p] for p in used_buf]}
            ]
        tbs.append(entry)
        stats.ops += len(ops)
        stats.max_ops_per_block = max(stats.max_ops_per_block, len(ops))
    stats.blocks += len(tbs)
    return {
        "id": r,
        "input_chunks": m.in_chunks,
        "output_chunks": m.out_chunks,
        "scratch_chunks": scratch,
        "channels": [{"channel_type": channel, "connected_to": list(peers)}] if peers else [],
        "remote_buffers": [{"rank": p, "type": "s", "access_channel_types": [channel]} for p in peers],
        "semaphores": sems,
        "threadblocks": tbs,
    }
