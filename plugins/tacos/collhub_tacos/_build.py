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

_SEND_LEVEL = 1 << 40


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
    link = s.link.astype(np.int64)
    return Phase("ag", s.chunk.astype(np.int64), net.src[link].astype(np.int64), net.dst[link].astype(np.int64),
                 link, s.start + offset, s.end + offset, s.makespan)


def reversed_phase(net: Network, s: Schedule) -> Phase:
    """A reduce-scatter from an all-gather ``s`` run on ``net.reversed()``: every transfer runs
    backwards over the real link, at mirrored times."""
    link = s.link.astype(np.int64)
    t = s.makespan
    return Phase("rs", s.chunk.astype(np.int64), net.src[link].astype(np.int64), net.dst[link].astype(np.int64),
                 link, t - s.end, t - s.start, s.makespan)


class _Nodes:
    """Global node columns, appended per kind; ``dep`` is a global node index or -1."""

    def __init__(self) -> None:
        self.cols: dict[str, list[np.ndarray]] = {k: [] for k in
                                                  ("rank", "time", "level", "kind", "peer", "tag", "buf",
                                                   "off", "op", "dep")}
        self.n = 0

    def add(self, **cols: np.ndarray | int | float) -> np.ndarray:
        m = int(np.asarray(cols["rank"]).size)
        for k in self.cols:
            v = cols.get(k, -1)
            self.cols[k].append(np.broadcast_to(np.asarray(v), (m,)).copy())
        ids = np.arange(self.n, self.n + m)
        self.n += m
        return ids

    def arrays(self) -> dict[str, np.ndarray]:
        return {k: np.concatenate(v) if v else np.zeros(0, dtype=np.int64) for k, v in self.cols.items()}


def _link_tags(phases: list[Phase]) -> list[np.ndarray]:
    """Per transfer: its sequence number on its link over all phases in time order."""
    link = np.concatenate([p.link for p in phases])
    start = np.concatenate([p.start for p in phases])
    order = np.lexsort((start, link))
    ls = link[order]
    first = np.flatnonzero(np.r_[True, ls[1:] != ls[:-1]])
    seq = np.arange(ls.size) - np.repeat(first, np.diff(np.r_[first, ls.size]))
    tags = np.empty(ls.size, dtype=np.int64)
    tags[order] = seq
    out, base = [], 0
    for p in phases:
        out.append(tags[base:base + p.chunk.size])
        base += p.chunk.size
    return out


def _ag_nodes(nodes: _Nodes, p: Phase, tag: np.ndarray, ranks: int, chunks: int, buf: int,
              owner_ready: np.ndarray | None, overwrite: np.ndarray | None) -> None:
    """All-gather SEND/RECV nodes. ``owner_ready[c]``: node the owner's first SENDs of ``c`` wait
    for (all-reduce); ``overwrite[rank, c]``: node a RECV of ``c`` on ``rank`` must follow."""
    C = ranks * chunks
    recv_dep = -np.ones(p.chunk.size, dtype=np.int64) if overwrite is None else overwrite[p.dst, p.chunk]
    recv = nodes.add(rank=p.dst, time=p.end, level=0, kind=int(NodeType.RECV), peer=p.src, tag=tag, buf=buf,
                     off=p.chunk, op=int(Op.COPY), dep=recv_dep)
    got = -np.ones((ranks, C), dtype=np.int64)
    got[p.dst, p.chunk] = recv
    send_dep = got[p.src, p.chunk]
    if owner_ready is not None:
        own = p.src == p.chunk // chunks
        send_dep = np.where(own, owner_ready[p.chunk], send_dep)
    nodes.add(rank=p.src, time=p.start, level=_SEND_LEVEL, kind=int(NodeType.SEND), peer=p.dst, tag=tag, buf=buf,
              off=p.chunk, op=int(Op.NONE), dep=send_dep)


def _rs_nodes(nodes: _Nodes, p: Phase, tag: np.ndarray, ranks: int, chunks: int, buf: int,
              reduction_comp: bool) -> tuple[np.ndarray, np.ndarray]:
    """Reduce-scatter nodes; returns (last reduction node per (rank, chunk) or -1, SEND node per
    (rank, chunk) or -1)."""
    C = ranks * chunks
    # chain the RECVs into (rank, chunk) in landing order
    order = np.lexsort((p.end, p.chunk, p.dst))
    key = p.dst[order] * C + p.chunk[order]
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
        rv = nodes.add(rank=r, time=p.end[sel], level=per * step, kind=int(NodeType.RECV), peer=p.src[sel],
                       tag=tag[sel], buf=buf, off=c, op=int(Op.REDUCE), dep=last[r, c])
        if reduction_comp:
            rv = nodes.add(rank=r, time=p.end[sel], level=per * step + 1, kind=int(NodeType.COMP), peer=-1, tag=0,
                           buf=-1, off=-1, op=int(Op.NONE), dep=rv)
        last[r, c] = rv
    sends = nodes.add(rank=p.src, time=p.start, level=_SEND_LEVEL, kind=int(NodeType.SEND), peer=p.dst, tag=tag,
                      buf=buf, off=p.chunk, op=int(Op.NONE), dep=last[p.src, p.chunk])
    sent = -np.ones((ranks, C), dtype=np.int64)
    sent[p.src, p.chunk] = sends
    return last, sent


def build_algorithm(collective: Collective, ranks: int, chunks: int, phases: list[Phase], *, name: str,
                    reduction_comp: bool = True, extra: tuple[tuple[str, str | int | float | bool], ...] = ()
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
    a = nodes.arrays()
    # per rank, in time order (dependencies always have a smaller (time, level))
    order = np.lexsort((a["level"], a["time"], a["rank"]))
    pos = np.empty(order.size, dtype=np.int64)
    rk = a["rank"][order]
    first = np.searchsorted(rk, np.arange(ranks + 1))
    pos[order] = np.arange(order.size) - first[rk]
    is_send = a["kind"] == int(NodeType.SEND)
    is_recv = a["kind"] == int(NodeType.RECV)
    src_buf = np.where(is_send, a["buf"], -1)
    src_off = np.where(is_send, a["off"], -1)
    dst_buf = np.where(is_recv, a["buf"], -1)
    dst_off = np.where(is_recv, a["off"], -1)
    count = np.where(a["kind"] == int(NodeType.COMP), 1, 1)
    dep = a["dep"]
    dep_pos_all = np.where(dep >= 0, pos[np.maximum(dep, 0)], -1)
    graphs = []
    for r in range(ranks):
        sl = order[first[r]:first[r + 1]]
        m = sl.size
        d = dep_pos_all[sl]
        has = d >= 0
        dep_ptr = np.r_[0, np.cumsum(has)].astype(np.int64)
        graphs.append(RankGraph.from_columns(
            m, kind=a["kind"][sl], peer=a["peer"][sl], tag=a["tag"][sl], count=count[sl], src_buf=src_buf[sl],
            src_off=src_off[sl], dst_buf=dst_buf[sl], dst_off=dst_off[sl], op=a["op"][sl],
            dep_ptr=dep_ptr, dep_pos=d[has].astype(np.int32)))
    meta = AlgorithmMeta(collective=collective, ranks=ranks, in_chunks=in_c, out_chunks=out_c, inplace=True,
                         name=name, producer="tacos.synthesize", extra=extra)
    return Algorithm(meta, tuple(graphs))
