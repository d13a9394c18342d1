"""Level "structure": ids, dependencies, peers, counts, buffer bounds and send/recv matching.

Everything is vectorized over numpy columns; Python loops run only over problems found (and
over the nodes of a rank whose positions are not already a topological order).
"""

from __future__ import annotations

import numpy as np

from ..chakra import Algorithm, Buffer, NodeType, Op, RankGraph
from ._flat import Flat, flatten
from ._layout import has_buffer_semantics, shape_problems
from ._report import ProblemSink

__all__ = ["check_structure", "issue_order"]

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
        orders.append(order)
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


def _check_bounds(alg: Algorithm, f: Flat, sink: ProblemSink) -> None:
    meta = alg.meta
    cap = np.array([meta.in_chunks, meta.out_chunks, meta.scratch_chunks], dtype=np.int64)
    kind, op = f.kind, f.op
    data_comp = (kind == NodeType.COMP) & ((op == Op.COPY) | (op == Op.REDUCE))
    reads = (kind == NodeType.SEND) | data_comp
    writes = (kind == NodeType.RECV) | data_comp
    sides = ((reads, f.src_buf, f.src_off, "source"), (writes, f.dst_buf, f.dst_off, "destination"))
    for mask, bufc, offc, role in sides:
        buf = bufc.astype(np.int64)
        off = offc.astype(np.int64)
        valid_buf = (buf >= 0) & (buf <= 2)
        c = cap[np.clip(buf, 0, 2)]
        bad = mask & (~valid_buf | (off < 0) | (off + f.count > c))

        def bounds_problem(
            v: int, buf: np.ndarray = buf, off: np.ndarray = off, role: str = role
        ) -> tuple[str, int, int]:
            b = int(buf[v])
            if b not in _BUF_NAME:
                return (f"{role} buffer {b} is not input (0), output (1) or scratch (2)", *f.where(v))
            o, k = int(off[v]), int(f.count[v])
            return (
                f"{role} chunks [{o}, {o + k}) of the {_BUF_NAME[b]} buffer are out of bounds "
                f"(it has {int(cap[b])} chunks)",
                *f.where(v),
            )

        sink.add_each(np.flatnonzero(bad).tolist(), bounds_problem)


def _runs(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(a, return_counts=True)`` for a sorted ``a``, without sorting or hashing again."""
    if not a.shape[0]:
        return a, np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(np.concatenate([[True], a[1:] != a[:-1]]))
    return a[starts], np.diff(np.append(starts, a.shape[0]))


def _check_matching(f: Flat, orders: list[np.ndarray], R: int, sink: ProblemSink) -> None:
    """Per connection (src, dst, tag): as many sends as receives, and the k-th send and k-th
    receive (in issue order) agree on chunk count and, when both are bound, byte size."""
    is_send = f.kind == NodeType.SEND
    is_recv = f.kind == NodeType.RECV
    order = np.concatenate(orders) if orders else np.zeros(0, np.int64)
    s_idx = np.flatnonzero(is_send)
    r_idx = np.flatnonzero(is_recv)
    tags = np.concatenate([f.tag[s_idx], f.tag[r_idx]]).astype(np.int64)
    utags, tinv = np.unique(tags, return_inverse=True)
    T = max(int(utags.shape[0]), 1)
    s_key = (f.rank[s_idx] * R + f.peer[s_idx]) * T + tinv[: s_idx.shape[0]]
    r_key = (f.peer[r_idx].astype(np.int64) * R + f.rank[r_idx]) * T + tinv[s_idx.shape[0] :]
    s_sorted = s_idx[np.lexsort((order[s_idx], s_key))]
    r_sorted = r_idx[np.lexsort((order[r_idx], r_key))]
    sk = s_key[np.lexsort((order[s_idx], s_key))]
    rk = r_key[np.lexsort((order[r_idx], r_key))]
    ks, cs = _runs(sk)
    kr, cr = _runs(rk)
    # keys whose SEND and RECV counts differ, in numpy (millions of keys at scale)
    keys = np.sort(np.concatenate([ks, kr]), kind="stable")
    keys = keys[np.concatenate([[True], keys[1:] != keys[:-1]])] if keys.shape[0] else keys
    ns = np.zeros(keys.shape[0], dtype=np.int64)
    nr = np.zeros(keys.shape[0], dtype=np.int64)
    ns[np.searchsorted(keys, ks)] = cs
    nr[np.searchsorted(keys, kr)] = cr
    bad_keys = set(keys[ns != nr].tolist())

    def decode(k: int) -> tuple[int, int, int]:
        src, rest = divmod(k, R * T)
        dst, t = divmod(rest, T)
        return src, dst, int(utags[t])

    if bad_keys:
        sc = dict(zip(ks.tolist(), cs.tolist(), strict=False))
        rc = dict(zip(kr.tolist(), cr.tolist(), strict=False))
        s_start = dict(zip(ks.tolist(), (np.cumsum(cs) - cs).tolist(), strict=False))
        r_start = dict(zip(kr.tolist(), (np.cumsum(cr) - cr).tolist(), strict=False))
        for k in sorted(bad_keys):
            src, dst, t = decode(k)
            ns, nr = sc.get(k, 0), rc.get(k, 0)
            if ns > nr:
                extra = s_sorted[s_start[k] + nr : s_start[k] + ns].tolist()
                for v in extra:
                    sink.add(
                        f"unmatched SEND to rank {dst} tag {t}: rank {src} sends {ns} message(s) "
                        f"on this connection, rank {dst} posts {nr} RECV(s) from rank {src} tag {t}",
                        *f.where(v),
                    )
            else:
                extra = r_sorted[r_start[k] + ns : r_start[k] + nr].tolist()
                for v in extra:
                    what = (
                        "no message ever sent"
                        if ns == 0
                        else f"rank {src} sends only {ns} message(s) on this connection"
                    )
                    sink.add(
                        f"unmatched RECV from rank {src} tag {t}: {what}, rank {dst} posts {nr} RECV(s)", *f.where(v)
                    )
        keep_s = ~np.isin(sk, list(bad_keys))
        keep_r = ~np.isin(rk, list(bad_keys))
        s_sorted, sk = s_sorted[keep_s], sk[keep_s]
        r_sorted, rk = r_sorted[keep_r], rk[keep_r]
    cnt_bad = f.count[s_sorted] != f.count[r_sorted]
    ss, rs = f.size[s_sorted], f.size[r_sorted]
    # sizes must agree when bound; a half-bound pair would never pair in ASTRA-sim either
    size_bad = ((ss >= 0) | (rs >= 0)) & (ss != rs)

    def amount(v: int, size: int) -> str:
        return f"{int(f.count[v])} chunk(s) / " + (f"{size} bytes" if size >= 0 else "unbound size")

    for i in np.flatnonzero(cnt_bad | size_bad).tolist():
        s, r = int(s_sorted[i]), int(r_sorted[i])
        src, dst, t = decode(int(sk[i]))
        srank, sid = f.where(s)
        sink.add(
            f"RECV from rank {src} tag {t} expects {amount(r, int(rs[i]))} but its matching SEND "
            f"(rank {srank} node {sid}) carries {amount(s, int(ss[i]))}",
            *f.where(r),
        )
