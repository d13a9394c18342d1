"""Turn packed trees into a pipelined :class:`~hub.chakra.Algorithm` (in place).

Rules:

* A rank's shard is cut into ``C = R·m`` chunks; a tree of count ``c`` owns ``c·m`` of them, so
  its rate is exactly ``c/R`` of the shard. Chunks of one root are dealt to its trees in turn
  (``m`` rounds, each tree ``c`` chunks a round), and every rank's nodes are written piece
  round by piece round, so every link serves all trees from the first piece on.
* All-gather (buffer OUTPUT, block ``r`` = rank ``r``'s shard): along each tree edge ``p -> v``
  one message per chunk; ``v`` forwards a chunk once its RECV of that chunk is done.
* Reduce-scatter (buffer INPUT; rank ``r`` ends with block ``r`` summed): the trees of the
  reversed network, leaves first: a rank's RECVs of one chunk from its children reduce in a
  chain (RECV, cost COMP, next RECV), and its SEND to its parent waits for the last of them.
* All-reduce: reduce-scatter, then all-gather of the same blocks in INPUT; the root's
  all-gather SENDs wait for its last reduction, and a RECV that overwrites a chunk waits for
  the reduce-scatter SEND that read it.
* Window: a root's SEND of its own chunk to one peer waits for its own SEND ``window`` places
  earlier to that peer (within a phase) to arrive; a leaf's reduce-scatter SENDs (ready at
  once too) likewise. Forwarded chunks are paced by their arrivals. Without it a root queues
  all its own pieces on its links at time 0 and the pieces it should forward wait behind them,
  which stalls every deeper hop.
* Order: piece by piece, then tree edge by tree edge (breadth first) across all roots, so every
  rank meets its peers in a staggered order (as ``hub.direct`` does): on a 128-GPU fat tree the
  stars run at 1.04x the bound this way and at 2.0x root by root.
* Channels: ``chan = tag mod channels``, with channels = the most messages on one (rank, peer)
  over :data:`STEPS_PER_CHANNEL` (at most :data:`MAX_CHANNELS`): both ends of a message agree,
  each (sender, receiver, channel) keeps one tag order, and an MSCCL export stays within the
  runtimes' steps per threadblock.
* Tags: ``phase · N·C + r·C + chunk``, unique per message key (tag, src, dst), so pairing never
  depends on timing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from hub.chakra import Algorithm, AlgorithmMeta, Buffer, Collective, NodeType, Op, RankGraph

from ._logical import LogicalGraph
from ._packing import Forest, Tree

__all__ = ["build_forest_algorithm"]

_SEND, _RECV, _COMP = int(NodeType.SEND), int(NodeType.RECV), int(NodeType.COMP)
#: messages per (rank, peer, channel): MSCCL's executors run at most 64 steps per threadblock,
#: and a forwarding threadblock may hold a receive and a send connection (32 gave 65 steps on a
#: torus:4x4 all-reduce; fewer give more channels, and past 128 threadblocks depid overflows)
STEPS_PER_CHANNEL = 24
#: MSCCL's channel limit (the executor's 32)
MAX_CHANNELS = 32


class _Columns:
    """Global node columns, appended a block at a time; ids are global (rank-major order later)."""

    def __init__(self, n: int, window: int) -> None:
        self.n = n
        self.parts: dict[str, list[np.ndarray]] = {
            k: [] for k in ("rank", "kind", "peer", "tag", "buf", "off", "op", "d1", "d2")
        }
        self.count = 0
        self.window = window
        if window:
            self.hist = np.full((window, n * n), -1, dtype=np.int64)
            self.seen = np.zeros(n * n, dtype=np.int64)

    def add(
        self,
        rank: np.ndarray,
        kind: int,
        peer: np.ndarray,
        tag: np.ndarray,
        buf: int,
        off: np.ndarray,
        op: int,
        dep: np.ndarray,
        own: np.ndarray | None = None,
    ) -> np.ndarray:
        m = rank.size
        ids = np.arange(self.count, self.count + m, dtype=np.int64)
        self.count += m
        d2 = np.full(m, -1, dtype=np.int64)
        if own is not None and self.window and own.any():
            self._window(np.flatnonzero(own), rank, peer, ids, d2)
        for k, v in (("rank", rank), ("peer", peer), ("tag", tag), ("off", off), ("d1", dep)):
            self.parts[k].append(np.asarray(v, dtype=np.int64))
        self.parts["kind"].append(np.full(m, kind, dtype=np.int64))
        self.parts["buf"].append(np.full(m, buf, dtype=np.int64))
        self.parts["op"].append(np.full(m, op, dtype=np.int64))
        self.parts["d2"].append(d2)
        return ids

    def _window(self, sel: np.ndarray, rank: np.ndarray, peer: np.ndarray, ids: np.ndarray, d2: np.ndarray) -> None:
        """d2 of own SEND i = the own SEND ``window`` places earlier on the same (rank, peer)."""
        keys = rank[sel] * self.n + peer[sel]
        order = np.argsort(keys, kind="stable")
        ks = keys[order]
        first = np.r_[True, ks[1:] != ks[:-1]]
        occ = np.arange(ks.size) - np.maximum.accumulate(np.where(first, np.arange(ks.size), 0))
        for o in range(int(occ.max()) + 1 if occ.size else 0):  # repeated pairs in one block: in turn
            pick = order[occ == o]
            kk = keys[pick]
            cnt = self.seen[kk]
            slot = cnt % self.window
            d2[sel[pick]] = np.where(cnt >= self.window, self.hist[slot, kk], -1)
            self.hist[slot, kk] = ids[sel[pick]]
            self.seen[kk] = cnt + 1

    def graphs(self, chunk_bytes: int) -> tuple[RankGraph, ...]:
        """One graph per rank: every column computed once over all nodes in rank order, then sliced.
        Every node moves or reduces one chunk of ``chunk_bytes`` (what ``Algorithm.bind`` would set)."""
        col = {k: np.concatenate(v) if v else np.zeros(0, dtype=np.int64) for k, v in self.parts.items()}
        order = np.argsort(col["rank"], kind="stable")
        starts = np.searchsorted(col["rank"][order], np.arange(self.n + 1))
        pos = np.empty(self.count, dtype=np.int64)
        pos[order] = np.arange(self.count) - np.repeat(starts[:-1], np.diff(starts))
        c = {k: v[order] for k, v in col.items()}
        kind = c["kind"]
        is_send, is_recv, is_comp = kind == _SEND, kind == _RECV, kind == _COMP
        pair = c["rank"][is_send] * self.n + c["peer"][is_send]
        channels = channels_for(int(np.bincount(pair).max()) if pair.size else 0)
        comm = is_send | is_recv
        cols: dict[str, Any] = {
            "kind": kind.astype(np.int8),
            "peer": np.where(is_comp, -1, c["peer"]).astype(np.int32),
            "tag": c["tag"].astype(np.int32),
            "count": np.ones(self.count, dtype=np.int32),
            "size": np.full(self.count, chunk_bytes, dtype=np.int64),
            "src_buf": np.where(is_send, c["buf"], -1).astype(np.int8),
            "src_off": np.where(is_send, c["off"], -1).astype(np.int32),
            "dst_buf": np.where(is_recv, c["buf"], -1).astype(np.int8),
            "dst_off": np.where(is_recv, c["off"], -1).astype(np.int32),
            "op": c["op"].astype(np.int8),
            "chan": np.where(comm, c["tag"] % channels, 0).astype(np.int32),
        }
        deps = np.stack([c["d1"], c["d2"]], axis=1)
        has = deps >= 0
        local = np.where(has, pos[np.where(has, deps, 0)], -1)
        ndeps = has.sum(axis=1)
        flat = local[has].astype(np.int32)  # rank by rank, in node order
        ptr = np.concatenate([[0], np.cumsum(ndeps)])
        out = []
        for r in range(self.n):
            a, b = int(starts[r]), int(starts[r + 1])
            out.append(
                RankGraph.from_columns(
                    b - a,
                    **{k: v[a:b] for k, v in cols.items()},
                    dep_ptr=ptr[a : b + 1] - ptr[a],
                    dep_pos=flat[ptr[a] : ptr[b]],
                )
            )
        return tuple(out)


def _order(lg: LogicalGraph, tree: Tree) -> list[tuple[int, int]]:
    """(parent, child) pairs of a tree in breadth-first order from the root (stars: root to all)."""
    n = lg.npus
    if all(p == -1 for p in tree.parent_edge):
        return [(tree.root, (tree.root + d) % n) for d in range(1, n)]  # staggered, as hub.direct
    children: list[list[int]] = [[] for _ in range(n)]
    for d in range(1, n):  # children in staggered order: not everyone's first message to GPU 0
        v = (tree.root + d) % n
        children[lg.src[tree.parent_edge[v]]].append(v)
    out: list[tuple[int, int]] = []
    frontier = [tree.root]
    while frontier:
        nxt = []
        for p in frontier:
            for v in children[p]:
                out.append((p, v))
                nxt.append(v)
        frontier = nxt
    return out


def _schedule(forest: Forest, m: int) -> list[list[tuple[int, int]]]:
    """Per root, its (tree index, chunk) pairs in writing order (``rounds · m`` chunks)."""
    per_root: dict[int, list[int]] = {}
    for i, t in enumerate(forest.trees):
        per_root.setdefault(t.root, []).append(i)
    c_total = forest.rounds * m
    out: list[list[tuple[int, int]]] = []
    for root in sorted(per_root):
        seq: list[tuple[int, int]] = []
        chunk = 0
        for _ in range(m):
            for i in per_root[root]:
                for _ in range(forest.trees[i].count):
                    seq.append((i, chunk))
                    chunk += 1
        assert chunk == c_total
        out.append(seq)
    return out


def _tables(lg: LogicalGraph, forest: Forest, c_total: int, reverse: bool) -> tuple[np.ndarray, ...]:
    """(tree, chunk) per root and piece; (parent, child) per tree and edge position."""
    seqs = _schedule(forest, c_total // forest.rounds)
    tree = np.array([[t for t, _ in seq] for seq in seqs], dtype=np.int64)  # (roots, C)
    chunk = np.array([[c for _, c in seq] for seq in seqs], dtype=np.int64)
    if forest.method == "stars":  # every root sends to root+1, root+2, ... (as _order does)
        roots = np.array([t.root for t in forest.trees], dtype=np.int64)[:, None]
        n = lg.npus
        par = np.repeat(roots, n - 1, axis=1)
        chi = (roots + np.arange(1, n)) % n
        if reverse:
            par, chi = par[:, ::-1], chi[:, ::-1]
        return tree, chunk, par, chi
    edges = [_order(lg, t) for t in forest.trees]
    if reverse:
        edges = [e[::-1] for e in edges]
    par = np.array([[p for p, _ in e] for e in edges], dtype=np.int64)  # (trees, n-1)
    chi = np.array([[c for _, c in e] for e in edges], dtype=np.int64)
    return tree, chunk, par, chi


def build_forest_algorithm(
    coll: Collective,
    ag: tuple[LogicalGraph, Forest] | None,
    rs: tuple[LogicalGraph, Forest] | None,
    c_total: int,
    *,
    reduction_comp: bool,
    window: int,
    clock: int = 0,
    size: int,
    name: str,
    extra: Sequence[tuple[str, str | int | float | bool]],
) -> Algorithm:
    """The algorithm of ``coll`` from the all-gather and/or reduce-scatter forests, ``c_total``
    chunks per shard (a multiple of each forest's ``rounds``)."""
    lg0 = (ag or rs)[0]  # type: ignore[index]
    n = lg0.npus
    roots = np.arange(n, dtype=np.int64)
    cols = _Columns(n, window)
    none, red, cpy = int(Op.NONE), int(Op.REDUCE), int(Op.COPY)
    red_end = np.full((c_total, n, n), -1, dtype=np.int64) if rs else None  # [piece, root, rank]
    rs_send = np.full((c_total, n, n), -1, dtype=np.int64) if rs and ag else None
    chunk_of = np.zeros((n, c_total), dtype=np.int64)
    if rs:
        lg, forest = rs
        tree, chunk, par, chi = _tables(lg, forest, c_total, reverse=True)
        buf = int(Buffer.INPUT)
        assert red_end is not None
        for j in range(c_total):
            off = roots * c_total + chunk[:, j]
            chunk_of[:, j] = chunk[:, j]
            re = red_end[j]
            for k in range(n - 1):  # edge by edge across all roots: staggered peers on every rank
                # reversed tree edge (parent, child): the child sends its partial sum to the parent
                parent, child = par[tree[:, j], k], chi[tree[:, j], k]
                dep = re[roots, child]
                s = cols.add(child, _SEND, parent, off, buf, off, none, dep, own=dep < 0)
                if rs_send is not None:
                    rs_send[j, roots, child] = s
                rv = cols.add(parent, _RECV, child, off, buf, off, red, re[roots, parent])
                re[roots, parent] = (
                    cols.add(parent, _COMP, roots * 0 - 1, off * 0, -1, off * 0 - 1, none, rv) if reduction_comp else rv
                )
    if ag:
        lg, forest = ag
        tree, chunk, par, chi = _tables(lg, forest, c_total, reverse=False)
        if cols.window:
            cols.seen[:] = 0  # the window runs per phase
        buf = int(Buffer.INPUT if coll == Collective.ALLREDUCE else Buffer.OUTPUT)
        base = n * c_total if rs else 0
        last_recv = np.full(n, -1, dtype=np.int64)
        history: list[np.ndarray] = []
        for j in range(c_total):
            off = roots * c_total + chunk[:, j]
            have = np.full((n, n), -1, dtype=np.int64)  # [root, rank]: the node that brought the chunk
            # all-reduce: the reduce-scatter dealt chunks in its own order; jj = this chunk's piece there
            jj = np.argmax(chunk_of == chunk[:, j][:, None], axis=1) if red_end is not None else roots
            if red_end is not None:  # the root starts from its last reduction of the chunk
                have[roots, roots] = red_end[jj, roots, roots]
            elif clock and j >= clock:
                have[roots, roots] = history[j - clock]
            for k in range(n - 1):
                parent, child = par[tree[:, j], k], chi[tree[:, j], k]
                cols.add(parent, _SEND, child, base + off, buf, off, none, have[roots, parent], own=parent == roots)
                # a RECV that overwrites the chunk waits for the reduce-scatter SEND that read it
                dep = rs_send[jj, roots, child] if rs_send is not None else np.full(n, -1, dtype=np.int64)
                rv = cols.add(child, _RECV, parent, base + off, buf, off, cpy, dep)
                have[roots, child] = rv
                last_recv[child] = rv
            history.append(last_recv.copy())
    blocks = n * c_total
    in_chunks = {Collective.ALLGATHER: c_total}.get(coll, blocks)
    out_chunks = {Collective.REDUCESCATTER: c_total}.get(coll, blocks)
    meta = AlgorithmMeta(
        collective=coll,
        ranks=n,
        in_chunks=in_chunks,
        out_chunks=out_chunks,
        inplace=True,
        name=name,
        producer="forest.synthesize",
        size=size,
        extra=tuple(extra),
    )
    # bound here (Algorithm.bind's rule, ceil(size / reference chunks)) rather than copied by bind()
    return Algorithm(meta, cols.graphs(-(-size // (n * c_total))))


def channels_for(per_pair: int) -> int:
    """Channels that keep every (rank, peer, channel) within :data:`STEPS_PER_CHANNEL` messages."""
    return max(1, min(MAX_CHANNELS, -(-per_pair // STEPS_PER_CHANNEL)))
