"""Turn greedy schedules into an :class:`~hub.chakra.Algorithm` in the collective profile.

Every transfer becomes a SEND on its source and a RECV on its destination. Each node depends on
at most one other node, so the whole algorithm is built from flat numpy columns:

* all-gather: a SEND of chunk ``c`` waits for the RECV that brought ``c`` (none at its owner);
* reduce-scatter (the all-gather schedule on the reversed network, time reversed): a rank's
  RECVs of partial sums of ``c`` are chained (RECV, cost COMP, next RECV) and its one SEND of
  ``c`` waits for the last of them;
* all-reduce: the reduce-scatter, then the all-gather; the owner's all-gather SENDs of ``c``
  wait for its last reduction of ``c``, and a RECV that overwrites ``c`` waits for the
  reduce-scatter SEND that read it.

Tags number the messages on each link in time order, so matching never depends on timing.
Nodes are stored in time order on each rank, so every dependency points backwards.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from hub.chakra import Algorithm, AlgorithmMeta, Buffer, Collective, NodeType, Op, RankGraph

from ._greedy import Schedule
from ._network import Network

__all__ = ["Phase", "build_algorithm", "reversed_phase", "forward_phase"]

_SEND_LEVEL = 1 << 30


@dataclass
class Phase:
    """Transfers of one phase in real link direction: chunk, from, to, link, start, end (µs)."""

    kind: str  # "ag" or "rs"
    chunk: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    link: np.ndarray
    start: np.ndarray
    end: np.ndarray
    makespan: float
    extra: dict[str, int] = field(default_factory=dict)


def forward_phase(net: Network, s: Schedule, offset: float = 0.0) -> Phase:
    link = s.link
    return Phase("ag", s.chunk, net.src[link], net.dst[link], link, s.start + offset, s.end + offset, s.makespan)


def reversed_phase(net: Network, s: Schedule) -> Phase:
    """A reduce-scatter from an all-gather ``s`` run on ``net.reversed()``: every transfer runs
    backwards over the real link, at mirrored times."""
    link = s.link
    t = s.makespan
    return Phase("rs", s.chunk, net.src[link], net.dst[link], link, t - s.end, t - s.start, s.makespan)


# compact dtypes: a 4096-rank all-gather has 33M nodes (the profile's own dtypes where they exist)
_DTYPES = {
    "rank": np.int32,
    "time": np.float64,
    "level": np.int32,
    "kind": np.int8,
    "peer": np.int32,
    "tag": np.int32,
    "buf": np.int8,
    "off": np.int32,
    "op": np.int8,
    "dep": np.int32,
}


class _Nodes:
    """Global node columns, appended per kind; ``dep`` is a global node index or -1."""

    def __init__(self) -> None:
        self.cols: dict[str, list[np.ndarray]] = {k: [] for k in _DTYPES}
        self.n = 0

    def add(self, **cols: np.ndarray | int | float) -> np.ndarray:
        m = int(np.asarray(cols["rank"]).size)
        for k, dt in _DTYPES.items():
            v = np.asarray(cols.get(k, -1))
            self.cols[k].append(np.full(m, v, dtype=dt) if v.ndim == 0 else v.astype(dt, copy=False))
        ids = np.arange(self.n, self.n + m, dtype=np.int64)
        self.n += m
        return ids

    def column(self, k: str) -> np.ndarray:
        """Concatenate (and forget the pieces of) one column."""
        parts = self.cols[k]
        self.cols[k] = []
        return np.concatenate(parts) if parts else np.zeros(0, dtype=_DTYPES[k])


def _link_tags(phases: list[Phase]) -> list[np.ndarray]:
    """Per transfer: its sequence number on its link over all phases in time order."""
    link = np.concatenate([p.link for p in phases])
    start = np.concatenate([p.start for p in phases])
    if start.size and int(link.max()) < 1 << 16 and bool(np.all(start[1:] >= start[:-1])):
        # the greedy records transfers in time order (one all-gather phase): a stable sort by link
        # alone is the order by (link, start), and on 16-bit keys numpy's stable sort is a radix sort
        order = np.argsort(link.astype(np.uint16), kind="stable")
    else:
        order = np.lexsort((start, link))
    ls = link[order]
    first = np.flatnonzero(np.r_[True, ls[1:] != ls[:-1]])
    seq = np.arange(ls.size) - np.repeat(first, np.diff(np.r_[first, ls.size]))
    tags = np.empty(ls.size, dtype=np.int64)
    tags[order] = seq
    out, base = [], 0
    for p in phases:
        out.append(tags[base : base + p.chunk.size])
        base += p.chunk.size
    return out


def _ag_nodes(
    nodes: _Nodes,
    p: Phase,
    tag: np.ndarray,
    ranks: int,
    chunks: int,
    buf: int,
    owner_ready: np.ndarray | None,
    overwrite: np.ndarray | None,
) -> None:
    """All-gather SEND/RECV nodes. ``owner_ready[c]``: node the owner's first SENDs of ``c`` wait
    for (all-reduce); ``overwrite[rank, c]``: node a RECV of ``c`` on ``rank`` must follow."""
    C = ranks * chunks
    recv_dep = -np.ones(p.chunk.size, dtype=np.int64) if overwrite is None else overwrite[p.dst, p.chunk]
    recv = nodes.add(
        rank=p.dst,
        time=p.end,
        level=0,
        kind=int(NodeType.RECV),
        peer=p.src,
        tag=tag,
        buf=buf,
        off=p.chunk,
        op=int(Op.COPY),
        dep=recv_dep,
    )
    got = np.full((ranks, C), -1, dtype=np.int64)
    got[p.dst, p.chunk] = recv
    send_dep = got[p.src, p.chunk]
    if owner_ready is not None:
        own = p.src == p.chunk // chunks
        send_dep = np.where(own, owner_ready[p.chunk], send_dep)
    nodes.add(
        rank=p.src,
        time=p.start,
        level=_SEND_LEVEL,
        kind=int(NodeType.SEND),
        peer=p.dst,
        tag=tag,
        buf=buf,
        off=p.chunk,
        op=int(Op.NONE),
        dep=send_dep,
    )


def _rs_nodes(
    nodes: _Nodes, p: Phase, tag: np.ndarray, ranks: int, chunks: int, buf: int, reduction_comp: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Reduce-scatter nodes; returns (last reduction node per (rank, chunk) or -1, SEND node per
    (rank, chunk) or -1)."""
    C = ranks * chunks
    # chain the RECVs into (rank, chunk) in landing order
    order = np.lexsort((p.end, p.chunk, p.dst))
    key = p.dst[order].astype(np.int64) * C + p.chunk[order]
    first = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    pos = np.arange(key.size) - np.repeat(first, np.diff(np.r_[first, key.size]))
    chain = np.empty(key.size, dtype=np.int64)
    chain[order] = pos
    per = 2 if reduction_comp else 1
    nchain = int(chain.max()) + 1 if chain.size else 0
    # build chain step by step (a chain is at most in-degree long): node i depends on node i-1
    last = -np.ones((ranks, C), dtype=np.int64)
    for step in range(nchain):
        sel = np.flatnonzero(chain == step)
        r, c = p.dst[sel], p.chunk[sel]
        rv = nodes.add(
            rank=r,
            time=p.end[sel],
            level=per * step,
            kind=int(NodeType.RECV),
            peer=p.src[sel],
            tag=tag[sel],
            buf=buf,
            off=c,
            op=int(Op.REDUCE),
            dep=last[r, c],
        )
        if reduction_comp:
            rv = nodes.add(
                rank=r,
                time=p.end[sel],
                level=per * step + 1,
                kind=int(NodeType.COMP),
                peer=-1,
                tag=0,
                buf=-1,
                off=-1,
                op=int(Op.NONE),
                dep=rv,
            )
        last[r, c] = rv
    sends = nodes.add(
        rank=p.src,
        time=p.start,
        level=_SEND_LEVEL,
        kind=int(NodeType.SEND),
        peer=p.dst,
        tag=tag,
        buf=buf,
        off=p.chunk,
        op=int(Op.NONE),
        dep=last[p.src, p.chunk],
    )
    sent = -np.ones((ranks, C), dtype=np.int64)
    sent[p.src, p.chunk] = sends
    return last, sent


def build_algorithm(
    collective: Collective,
    ranks: int,
    chunks: int,
    phases: list[Phase],
    *,
    name: str,
    reduction_comp: bool = True,
    extra: tuple[tuple[str, str | int | float | bool], ...] = (),
) -> Algorithm:
    """The in-place algorithm of ``collective`` from its phases (``[ag]``, ``[rs]`` or ``[rs, ag]``)."""
    C = ranks * chunks
    tags = _link_tags(phases)
    nodes = _Nodes()
    if collective == Collective.ALLGATHER:
        _ag_nodes(nodes, phases[0], tags[0], ranks, chunks, int(Buffer.OUTPUT), None, None)
        in_c, out_c = chunks, C
    elif collective == Collective.REDUCESCATTER:
        _rs_nodes(nodes, phases[0], tags[0], ranks, chunks, int(Buffer.INPUT), reduction_comp)
        in_c, out_c = C, chunks
    else:
        last, sent = _rs_nodes(nodes, phases[0], tags[0], ranks, chunks, int(Buffer.INPUT), reduction_comp)
        owner = np.arange(C) // chunks
        _ag_nodes(nodes, phases[1], tags[1], ranks, chunks, int(Buffer.INPUT), last[owner, np.arange(C)], sent)
        in_c, out_c = C, C
    # per rank, in time order (dependencies always have a smaller (time, level)); columns are
    # permuted once, so that every rank's columns are views of one array (no second copy)
    rank, time_, level = nodes.column("rank"), nodes.column("time"), nodes.column("level")
    order = np.lexsort((level, time_, rank))
    del time_, level
    rank = rank[order]
    first = np.searchsorted(rank, np.arange(ranks + 1))
    pos = np.empty(order.size, dtype=np.int32)  # global node index -> position in its rank
    pos[order] = (np.arange(order.size) - first[rank]).astype(np.int32)
    del rank
    col = {k: nodes.column(k)[order] for k in ("kind", "peer", "tag", "buf", "off", "op")}
    dep = nodes.column("dep")[order]
    del order
    has_dep = dep >= 0
    dep[has_dep] = pos[dep[has_dep]]
    del pos
    is_send = col["kind"] == int(NodeType.SEND)
    is_recv = col["kind"] == int(NodeType.RECV)
    src_buf = np.where(is_send, col["buf"], np.int8(-1)).astype(np.int8)
    dst_buf = np.where(is_recv, col["buf"], np.int8(-1)).astype(np.int8)
    src_off = np.where(is_send, col["off"], -1).astype(np.int32)
    dst_off = np.where(is_recv, col["off"], -1).astype(np.int32)
    del is_send, is_recv, col["buf"], col["off"]
    count = np.ones(dep.size, dtype=np.int32)
    dep_cum = np.r_[0, np.cumsum(has_dep)].astype(np.int64)
    dep_vals = dep[has_dep]
    del dep
    graphs = []
    for r in range(ranks):
        a, b = int(first[r]), int(first[r + 1])
        graphs.append(
            RankGraph.from_columns(
                b - a,
                kind=col["kind"][a:b],
                peer=col["peer"][a:b],
                tag=col["tag"][a:b],
                count=count[a:b],
                src_buf=src_buf[a:b],
                src_off=src_off[a:b],
                dst_buf=dst_buf[a:b],
                dst_off=dst_off[a:b],
                op=col["op"][a:b],
                dep_ptr=dep_cum[a : b + 1] - dep_cum[a],
                dep_pos=dep_vals[dep_cum[a] : dep_cum[b]],
            )
        )
    meta = AlgorithmMeta(
        collective=collective,
        ranks=ranks,
        in_chunks=in_c,
        out_chunks=out_c,
        inplace=True,
        name=name,
        producer="tacos.synthesize",
        extra=extra,
    )
    return Algorithm(meta, tuple(graphs))
