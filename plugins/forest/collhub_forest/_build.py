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

import numpy as np

from hub.chakra import Algorithm, AlgorithmMeta, Buffer, Collective, NodeType, Op, RankGraph

from ._logical import LogicalGraph
from ._packing import Forest, Tree

__all__ = ["build_forest_algorithm"]

_SEND, _RECV, _COMP = int(NodeType.SEND), int(NodeType.RECV), int(NodeType.COMP)
#: messages per (rank, peer, channel): MSCCL's executors run at most 64 steps per threadblock,
#: and a forwarding threadblock may fuse a receive and a send connection
STEPS_PER_CHANNEL = 32
#: MSCCL's channel limit (the executor's 32)
MAX_CHANNELS = 32


class _Rank:
    """Columns of one rank's graph; every node has at most one dependency."""

    __slots__ = ("buf", "dep", "dep2", "kind", "off", "op", "peer", "sends", "tag", "window")

    def __init__(self, window: int) -> None:
        self.window = window
        self.sends: dict[int, list[int]] = {}  # peer -> its SEND nodes of the current phase
        self.dep2: list[int] = []
        self.kind: list[int] = []
        self.peer: list[int] = []
        self.tag: list[int] = []
        self.buf: list[int] = []
        self.off: list[int] = []
        self.op: list[int] = []
        self.dep: list[int] = []

    def add(self, kind: int, peer: int, tag: int, buf: int, off: int, op: int, dep: int, own: bool = False) -> int:
        dep2 = -1
        if own and self.window:
            mine = self.sends.setdefault(peer, [])
            if len(mine) >= self.window:
                dep2 = mine[-self.window]
            mine.append(len(self.kind))
        self.dep2.append(dep2)
        self.kind.append(kind)
        self.peer.append(peer)
        self.tag.append(tag)
        self.buf.append(buf)
        self.off.append(off)
        self.op.append(op)
        self.dep.append(dep)
        return len(self.kind) - 1

    def pair_counts(self) -> int:
        """Most SENDs to one peer."""
        counts: dict[int, int] = {}
        for k, p in zip(self.kind, self.peer, strict=True):
            if k == _SEND:
                counts[p] = counts.get(p, 0) + 1
        return max(counts.values(), default=0)

    def graph(self, channels: int) -> RankGraph:
        n = len(self.kind)
        kind = np.asarray(self.kind, dtype=np.int8)
        buf = np.asarray(self.buf, dtype=np.int8)
        off = np.asarray(self.off, dtype=np.int32)
        deps = np.stack([np.asarray(self.dep, dtype=np.int64), np.asarray(self.dep2, dtype=np.int64)], axis=1)
        has = deps >= 0
        is_send, is_recv, is_comp = kind == _SEND, kind == _RECV, kind == _COMP
        return RankGraph.from_columns(
            n,
            kind=kind,
            peer=np.where(is_comp, -1, np.asarray(self.peer, dtype=np.int32)),
            tag=np.asarray(self.tag, dtype=np.int32),
            count=1,
            src_buf=np.where(is_send, buf, -1),
            src_off=np.where(is_send, off, -1),
            dst_buf=np.where(is_recv, buf, -1),
            dst_off=np.where(is_recv, off, -1),
            op=np.asarray(self.op, dtype=np.int8),
            chan=np.where(is_send | is_recv, np.asarray(self.tag, dtype=np.int32) % channels, 0),
            dep_ptr=np.concatenate([[0], np.cumsum(has.sum(axis=1))]),
            dep_pos=deps[has].astype(np.int32),
        )


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


def build_forest_algorithm(
    coll: Collective,
    ag: tuple[LogicalGraph, Forest] | None,
    rs: tuple[LogicalGraph, Forest] | None,
    c_total: int,
    *,
    reduction_comp: bool,
    window: int,
    clock: int = 0,
    name: str,
    extra: Sequence[tuple[str, str | int | float | bool]],
) -> Algorithm:
    """The algorithm of ``coll`` from the all-gather and/or reduce-scatter forests, ``c_total``
    chunks per shard (a multiple of each forest's ``rounds``)."""
    lg0 = (ag or rs)[0]  # type: ignore[index]
    n = lg0.npus
    ranks = [_Rank(window) for _ in range(n)]
    red_end: dict[tuple[int, int], int] = {}  # (rank, buffer chunk) -> its last reduction node
    rs_send: dict[tuple[int, int], int] = {}  # (rank, buffer chunk) -> its reduce-scatter SEND
    none, red, cpy = int(Op.NONE), int(Op.REDUCE), int(Op.COPY)
    if rs:
        lg, forest = rs
        orders = [_order(lg, t)[::-1] for t in forest.trees]  # leaves first
        seqs = _schedule(forest, c_total // forest.rounds)
        buf = int(Buffer.INPUT)
        for j in range(len(seqs[0])):
            # edge by edge across all roots: every rank meets its peers in a staggered order
            for k in range(n - 1):
                for root in range(n):
                    ti, chunk = seqs[root][j]
                    off = root * c_total + chunk
                    # reversed tree edge (parent, child): the child sends its partial sum to the parent
                    parent, child = orders[ti][k]
                    leaf = red_end.get((child, off), -1)
                    s = ranks[child].add(_SEND, parent, off, buf, off, none, leaf, leaf < 0)
                    rs_send[(child, off)] = s
                    pr = ranks[parent]
                    rv = pr.add(_RECV, child, off, buf, off, red, red_end.get((parent, off), -1))
                    red_end[(parent, off)] = pr.add(_COMP, -1, 0, -1, -1, none, rv) if reduction_comp else rv
    if ag:
        for rk in ranks:
            rk.sends.clear()  # the window runs per phase
        lg, forest = ag
        orders = [_order(lg, t) for t in forest.trees]
        seqs = _schedule(forest, c_total // forest.rounds)
        buf = int(Buffer.INPUT if coll == Collective.ALLREDUCE else Buffer.OUTPUT)
        base = n * c_total if rs else 0
        last_recv = [-1] * n  # per rank: its newest RECV node
        history: list[list[int]] = [[] for _ in range(n)]  # per rank: newest RECV after each piece
        for j in range(len(seqs[0])):
            have: list[dict[int, int]] = []
            for root in range(n):
                off = root * c_total + seqs[root][j][1]
                start = red_end.get((root, off), -1)
                if start < 0 and clock and j >= clock:
                    start = history[root][j - clock]
                have.append({root: start})
            for k in range(n - 1):  # edge by edge across all roots (see the reduce-scatter loop)
                for root in range(n):
                    ti, chunk = seqs[root][j]
                    off = root * c_total + chunk
                    parent, child = orders[ti][k]
                    h = have[root]
                    ranks[parent].add(_SEND, child, base + off, buf, off, none, h[parent], parent == root)
                    rv = ranks[child].add(_RECV, parent, base + off, buf, off, cpy, rs_send.get((child, off), -1))
                    h[child] = last_recv[child] = rv
            for r in range(n):
                history[r].append(last_recv[r])
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
        extra=tuple(extra),
    )
    channels = channels_for(max(r.pair_counts() for r in ranks))
    return Algorithm(meta, tuple(r.graph(channels) for r in ranks))


def channels_for(per_pair: int) -> int:
    """Channels that keep every (rank, peer, channel) within :data:`STEPS_PER_CHANNEL` messages."""
    return max(1, min(MAX_CHANNELS, -(-per_pair // STEPS_PER_CHANNEL)))
