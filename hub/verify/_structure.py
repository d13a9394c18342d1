"""Level "structure": ids, dependencies, peers, counts, buffer bounds and send/recv matching.

Everything is vectorized over numpy columns; Python loops run only over problems found (and
over the nodes of a rank whose positions are not already a topological order).
"""

from __future__ import annotations

import numpy as np

from ..chakra import Algorithm, Buffer, NodeType, Op, RankGraph
from ._flat import Flat, flatten
from ._layout import has_buffer_semantics, shape_problems
from ._pairing import pairing
from ._report import ProblemSink

__all__ = ["assume_structure", "check_structure", "issue_order"]

_COMM = (NodeType.SEND, NodeType.RECV)
_BUF_NAME = {int(Buffer.INPUT): "input", int(Buffer.OUTPUT): "output", int(Buffer.SCRATCH): "scratch"}


def _deps_valid(r: int, g: RankGraph, sink: ProblemSink) -> bool:
    """Dependency index well formed and every dependency an existing other node."""
    n = len(g)
    ptr, pos = g.dep_ptr, g.dep_pos
    if ptr.shape != (n + 1,) or (n and (ptr[0] != 0 or np.any(np.diff(ptr) < 0))) or int(ptr[-1]) > pos.shape[0]:
        sink.add("malformed dependency index (dep_ptr is not a monotone n+1 prefix of dep_pos)", r)
        return False
    if ptr[-1] == 0:
        return True
    owner = np.repeat(np.arange(n), np.diff(ptr))
    deps = pos[: ptr[-1]]
    ok = True
    for e in np.flatnonzero((deps < 0) | (deps >= n)).tolist():
        sink.add(
            f"depends on position {int(deps[e])}, which does not exist (rank has {n} nodes)", r, int(g.ids[owner[e]])
        )
        ok = False
    for e in np.flatnonzero(deps == owner).tolist():
        sink.add("depends on itself", r, int(g.ids[owner[e]]))
        ok = False
    return ok


def issue_order(g: RankGraph) -> np.ndarray | None:
    """Rank of each node in the deterministic issue order, or None on a cycle
    (see :meth:`RankGraph.topological_rank`)."""
    return g.topological_rank()


def _cycle(g: RankGraph) -> list[int]:
    """Positions of one dependency cycle (called only when a cycle exists)."""
    n = len(g)
    ptr, pos = g.dep_ptr.tolist(), g.dep_pos.tolist()
    # Peel nodes that can run (Kahn); every remaining node lies on or behind a cycle, and
    # following any unfinished dependency from a remaining node must revisit a node.
    indeg = [ptr[v + 1] - ptr[v] for v in range(n)]
    succ: list[list[int]] = [[] for _ in range(n)]
    for v in range(n):
        for d in pos[ptr[v] : ptr[v + 1]]:
            succ[d].append(v)
    stack = [v for v in range(n) if indeg[v] == 0]
    done = [False] * n
    while stack:
        v = stack.pop()
        done[v] = True
        for s in succ[v]:
            indeg[s] -= 1
            if indeg[s] == 0:
                stack.append(s)
    start = next(v for v in range(n) if not done[v])
    seen: dict[int, int] = {}
    path: list[int] = []
    v = start
    while v not in seen:
        seen[v] = len(path)
        path.append(v)
        v = next(d for d in pos[ptr[v] : ptr[v + 1]] if not done[d])
    return path[seen[v] :] + [v]


def check_structure(alg: Algorithm, sink: ProblemSink) -> tuple[Flat | None, list[np.ndarray]]:
    """Run every structural check; return the flattened algorithm and per-rank issue orders
    (None for the flat view when dependencies are broken, since nothing else can run)."""
    meta = alg.meta
    R = meta.ranks
    for msg in shape_problems(meta):
        sink.add(msg)
    deps_ok = True
    orders: list[np.ndarray] = []
    for r, g in enumerate(alg.graphs):
        ids = g.ids
        sorted_ids = len(g) < 2 or bool((ids[1:] > ids[:-1]).all())  # increasing ids are distinct
        if not sorted_ids and np.unique(ids).shape[0] != ids.shape[0]:
            uniq, inv, cnt = np.unique(ids, return_inverse=True, return_counts=True)
            for u in np.flatnonzero(cnt > 1).tolist():
                where = np.flatnonzero(inv == u).tolist()
                sink.add(
                    f"node id {int(uniq[u])} is used by {len(where)} nodes (positions "
                    f"{', '.join(map(str, where[:5]))}{', ...' if len(where) > 5 else ''})",
                    r,
                    int(uniq[u]),
                )
        if not _deps_valid(r, g, sink):
            deps_ok = False
            orders.append(np.arange(len(g)))
            continue
        order = issue_order(g)
        if order is None:
            cyc = _cycle(g)
            ids_l = [str(int(g.ids[p])) for p in cyc]
            sink.add(
                "dependency cycle: node " + " -> ".join(ids_l) + " (each depends on the next)", r, int(g.ids[cyc[0]])
            )
            deps_ok = False
            order = np.arange(len(g))
        orders.append(order.astype(np.int32))  # positions within a rank: half the memory of int64
    if not deps_ok:
        return None, orders

    f = flatten(alg)
    kind, peer, count, rank = f.kind, f.peer, f.count, f.rank
    is_send, is_recv = kind == NodeType.SEND, kind == NodeType.RECV
    comm = is_send | is_recv
    bad_kind = ~(comm | (kind == NodeType.COMP))
    for v in np.flatnonzero(bad_kind).tolist():
        k = int(kind[v])
        name = NodeType(k).name if k in NodeType._value2member_map_ else str(k)
        sink.add(f"node type {name} is not allowed in a collective algorithm (only SEND, RECV, COMP)", *f.where(v))
    bad_peer = comm & ((peer < 0) | (peer >= R) | (peer == rank))

    def peer_problem(v: int) -> tuple[str, int, int]:
        what = "destination" if kind[v] == NodeType.SEND else "source"
        p = int(peer[v])
        why = "is the node's own rank" if p == rank[v] else f"is not a rank of a {R}-rank algorithm"
        return (f"{NodeType(int(kind[v])).name} {what} rank {p} {why}", *f.where(v))

    sink.add_each(np.flatnonzero(bad_peer).tolist(), peer_problem)
    semantic = has_buffer_semantics(meta)
    sink.add_each(np.flatnonzero(count < 0).tolist(), lambda v: (f"negative chunk count {int(count[v])}", *f.where(v)))
    if semantic:
        sink.add_each(
            np.flatnonzero(comm & (count == 0)).tolist(),
            lambda v: (f"{NodeType(int(kind[v])).name} moves 0 chunks (count must be >= 1)", *f.where(v)),
        )
        sink.add_each(
            np.flatnonzero(is_recv & (f.op != Op.COPY) & (f.op != Op.REDUCE)).tolist(),
            lambda v: (f"RECV has op {int(f.op[v])}; it must be COPY (1) or REDUCE (2)", *f.where(v)),
        )
        _check_bounds(alg, f, sink)
    if not bad_peer.any():
        _check_matching(f, orders, R, sink)
    return f, orders


def assume_structure(alg: Algorithm, sink: ProblemSink) -> tuple[Flat | None, list[np.ndarray]]:
    """What :func:`check_structure` returns, for an algorithm whose producer proved every fact it
    checks per node (``verify(..., structure_proven=True)``): the flat view, the positions as the
    issue order (every dependency points to an earlier position) and the pairing. The checks of
    the metadata alone still run (into ``sink``); with a problem there, nothing else does."""
    for msg in shape_problems(alg.meta):
        sink.add(msg)
    if sink:
        return None, []
    orders = [np.arange(len(g), dtype=np.int64) for g in alg.graphs]
    f = flatten(alg)
    p = f.pairing = pairing(f, np.concatenate(orders) if orders else np.zeros(0, np.int64))
    p.conn = p.side = np.zeros(0, np.int64)  # as _check_matching leaves it
    return f, orders


def _check_bounds(alg: Algorithm, f: Flat, sink: ProblemSink) -> None:
    meta = alg.meta
    cap = np.array([meta.in_chunks, meta.out_chunks, meta.scratch_chunks], dtype=np.int64)
    kind, op = f.kind, f.op
    data_comp = (kind == NodeType.COMP) & ((op == Op.COPY) | (op == Op.REDUCE))
    reads = (kind == NodeType.SEND) | data_comp
    writes = (kind == NodeType.RECV) | data_comp
    sides = ((reads, f.src_buf, f.src_off, "source"), (writes, f.dst_buf, f.dst_off, "destination"))
    for mask, bufc, offc, role in sides:
        v = np.flatnonzero(mask)  # only the nodes that access this side (most nodes at scale)
        buf = bufc[v].astype(np.int64)
        off = offc[v].astype(np.int64)
        c = cap[np.clip(buf, 0, 2)]
        bad = v[(buf < 0) | (buf > 2) | (off < 0) | (off + f.count[v] > c)]

        def bounds_problem(
            v: int, bufc: np.ndarray = bufc, offc: np.ndarray = offc, role: str = role
        ) -> tuple[str, int, int]:
            b = int(bufc[v])
            if b not in _BUF_NAME:
                return (f"{role} buffer {b} is not input (0), output (1) or scratch (2)", *f.where(v))
            o, k = int(offc[v]), int(f.count[v])
            return (
                f"{role} chunks [{o}, {o + k}) of the {_BUF_NAME[b]} buffer are out of bounds "
                f"(it has {int(cap[b])} chunks)",
                *f.where(v),
            )

        sink.add_each(bad.tolist(), bounds_problem)


def _check_matching(f: Flat, orders: list[np.ndarray], R: int, sink: ProblemSink) -> None:
    """Per connection (src, dst, tag): as many sends as receives, and the k-th send and k-th
    receive (in issue order) agree on chunk count and, when both are bound, byte size. The
    pairing (:mod:`._pairing`) is kept on ``f`` for the later levels."""
    order = np.concatenate(orders) if orders else np.zeros(0, np.int64)
    p = f.pairing = pairing(f, order)
    side = p.side
    is_send = f.kind == NodeType.SEND
    s_idx, r_idx = np.flatnonzero(is_send), np.flatnonzero(f.kind == NodeType.RECV)
    ns = np.bincount(p.conn[s_idx], minlength=p.nconn)
    nr = np.bincount(p.conn[r_idx], minlength=p.nconn)
    bad = ns != nr

    def src_dst(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        sends = is_send[v]
        return np.where(sends, f.rank[v], f.peer[v]), np.where(sends, f.peer[v], f.rank[v])

    def by_connection(v: np.ndarray) -> list[tuple[int, int, int]]:
        """(node, src, dst) of message nodes v in (src, dst, tag, issue) order, as the problems
        are listed."""
        src, dst = src_dst(v)
        o = np.lexsort((side[v], f.tag[v], dst, src))
        return list(zip(v[o].tolist(), src[o].tolist(), dst[o].tolist(), strict=True))

    if bad.any():
        c_of = p.conn
        extra_s = s_idx[side[s_idx] >= nr[c_of[s_idx]]]
        extra_r = r_idx[side[r_idx] >= ns[c_of[r_idx]]]
        for v, a, b in by_connection(np.concatenate([extra_s, extra_r])):
            c, t = int(c_of[v]), int(f.tag[v])
            cs, cr = int(ns[c]), int(nr[c])
            if is_send[v]:
                sink.add(
                    f"unmatched SEND to rank {b} tag {t}: rank {a} sends {cs} message(s) "
                    f"on this connection, rank {b} posts {cr} RECV(s) from rank {a} tag {t}",
                    *f.where(v),
                )
            else:
                what = "no message ever sent" if cs == 0 else f"rank {a} sends only {cs} message(s) on this connection"
                sink.add(f"unmatched RECV from rank {a} tag {t}: {what}, rank {b} posts {cr} RECV(s)", *f.where(v))
    rr = r_idx[~bad[p.conn[r_idx]]] if bad.any() else r_idx
    p.conn = p.side = np.zeros(0, np.int64)  # the later levels need the match and the keys only
    del s_idx, ns, nr
    sm = p.match[rr]
    ss, rs = f.size[sm], f.size[rr]
    # sizes must agree when bound; a half-bound pair would never pair in ASTRA-sim either
    wrong = (f.count[sm] != f.count[rr]) | (((ss >= 0) | (rs >= 0)) & (ss != rs))
    if not wrong.any():
        return

    def amount(v: int) -> str:
        size = int(f.size[v])
        return f"{int(f.count[v])} chunk(s) / " + (f"{size} bytes" if size >= 0 else "unbound size")

    for r, a, _ in by_connection(rr[wrong]):
        s = int(p.match[r])
        srank, sid = f.where(s)
        sink.add(
            f"RECV from rank {a} tag {int(f.tag[r])} expects {amount(r)} but its matching SEND "
            f"(rank {srank} node {sid}) carries {amount(s)}",
            *f.where(r),
        )
