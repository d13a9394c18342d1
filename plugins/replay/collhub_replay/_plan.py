"""What each rank process executes: a size-independent plan built on the CPU from an Algorithm.

Offsets stay in chunks; a rank multiplies them by the chunk's element count for each size.
Process ``p`` plays communicator rank ``p`` and runs the rank file ``order[p]`` of a remapped
algorithm (identity otherwise), so that its data can be compared with the library's native
collective, whose ranks are communicator ranks.

Execution rules (shared by the gloo interpreter, the NCCL round schedule and the pre-flight
simulation in :mod:`._schedule`):

* every RECV receives into a private temporary buffer posted at the start of an iteration
  (so every SEND can complete as soon as it is issued, like ASTRA-sim's eager sends), and is
  *committed* (copied or reduced into its destination) once its data arrived and its
  dependencies are done; a COPY RECV that no unordered node could observe receives in place;
* SENDs on one connection (peer, tag) are issued in issue order, so that FIFO matching pairs
  them with the receives the profile pairs them with;
* a write that overlaps the source of an unordered, earlier SEND waits for that SEND (an
  implicit dependency), so no message is read while it is being overwritten.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from hub.chakra import Algorithm, Collective, NodeType, Op, RankGraph
from hub.errors import UsageError
from hub.verify import Layout, comm_order as _verified_comm_order, layout_of

__all__ = [
    "COMP_COPY",
    "COMP_NOOP",
    "COMP_REDUCE",
    "Layout",
    "RankPlan",
    "RECV_COPY",
    "RECV_REDUCE",
    "SEND",
    "Plan",
    "build_plan",
    "comm_order",
    "unit_shape",
]

# node kinds of a plan (one small int per node; tuples of ints pickle fast to the ranks)
COMP_NOOP, COMP_COPY, COMP_REDUCE, SEND, RECV_COPY, RECV_REDUCE = range(6)
KIND_NAME = ("COMP", "COMP copy", "COMP reduce", "SEND", "RECV", "RECV reduce")

_GATHERING = (Collective.ALLGATHER, Collective.GATHER)
_SCATTERING = (Collective.REDUCESCATTER, Collective.SCATTER)
#: collectives the replay can check and compare with a native torch.distributed collective
SUPPORTED = frozenset(
    {
        Collective.ALLREDUCE,
        Collective.ALLGATHER,
        Collective.REDUCESCATTER,
        Collective.ALLTOALL,
        Collective.BROADCAST,
        Collective.REDUCE,
    }
)


def comm_order(alg: Algorithm) -> list[int]:
    """``order[q]``: the rank file that plays communicator rank q (the remap transform's
    ``meta.extra["comm_order"]``), or the identity; the verifier's own rule."""
    return _verified_comm_order(alg.meta) or list(range(alg.ranks))


def unit_shape(alg: Algorithm) -> tuple[int, int, int]:
    """(chunks per rank unit c, units in the input, units in the output).

    A *unit* is what one rank contributes or receives per peer: the collective's per-rank
    element count is cut into c chunks, and rank-blocked buffers are n units long.
    """
    m, n = alg.meta, alg.ranks
    c = m.collective
    if c in _GATHERING:
        return m.in_chunks, 1, n
    if c in _SCATTERING:
        return m.out_chunks, n, 1
    if c == Collective.ALLTOALL:
        return m.in_chunks // n, n, n
    return m.in_chunks, 1, 1


@dataclass
class RankPlan:
    """The nodes of one process, as parallel lists (positions are the rank file's positions).

    ``src``/``dst`` are chunk indices into the rank's flat memory (-1 none), ``cnt`` chunks.
    ``deps`` include the implicit write-after-send dependencies; ``conn_prev`` is the previous
    SEND on the same (peer, tag) (-1 none); ``direct`` marks COPY RECVs received in place;
    ``msg`` is the global message index of a SEND or RECV (the same on both ends).
    """

    rank: int
    file_rank: int
    layout: Layout
    ids: list[int]
    kind: list[int]
    peer: list[int]
    tag: list[int]
    cnt: list[int]
    src: list[int]
    dst: list[int]
    deps: list[list[int]]
    succ: list[list[int]] = field(default_factory=list)
    conn_prev: list[int] = field(default_factory=list)
    direct: list[bool] = field(default_factory=list)
    msg: list[int] = field(default_factory=list)
    recv_post: list[int] = field(default_factory=list)  # RECV positions in posting order
    rounds: list[tuple[list[int], list[int]]] = field(default_factory=list)  # (local, group) per round

    def __len__(self) -> int:
        return len(self.kind)

    def describe(self, v: int) -> str:
        """``node 12 (RECV from rank 3 tag 2)``, for error messages."""
        k = self.kind[v]
        what = KIND_NAME[k]
        if k == SEND:
            what += f" to rank {self.peer[v]} tag {self.tag[v]}"
        elif k in (RECV_COPY, RECV_REDUCE):
            what += f" from rank {self.peer[v]} tag {self.tag[v]}"
        return f"node {self.ids[v]} ({what})"


@dataclass
class Plan:
    """Everything a rank process needs for one algorithm (picklable, no torch)."""

    name: str
    collective: str
    ranks: int
    root: int
    inplace: bool
    chunks_per_unit: int
    in_units: int
    out_units: int
    in_chunks: int
    out_chunks: int
    ref_chunks: int
    messages: int
    ranks_plan: list[RankPlan]

    def steps(self) -> int:
        """Most messages (sends + receives) any rank handles per iteration."""
        return max(sum(1 for k in rp.kind if k in (SEND, RECV_COPY, RECV_REDUCE)) for rp in self.ranks_plan)


def _chunk_ranges(g: object, lay: Layout, which: str) -> tuple[np.ndarray, np.ndarray]:
    """Flat chunk start of each node's source or destination (-1 where unused)."""
    buf = getattr(g, f"{which}_buf").astype(np.int64)
    off = getattr(g, f"{which}_off").astype(np.int64)
    base = np.array([lay.in_base, lay.out_base, lay.scratch_base], dtype=np.int64)
    ok = (buf >= 0) & (off >= 0)
    start = np.where(ok, base[np.clip(buf, 0, 2)] + off, -1)
    return start, ok


def _descendants(n: int, succ: list[list[int]], topo: list[int]) -> list[int]:
    """Bitset (Python int) of every node reachable from each node through dependencies."""
    desc = [0] * n
    for v in reversed(topo):
        bits = 0
        for s in succ[v]:
            bits |= desc[s] | (1 << s)
        desc[v] = bits
    return desc


def _rank_plan(alg: Algorithm, proc: int, order: list[int], inv: list[int]) -> RankPlan:
    f = order[proc]
    g = alg.graphs[f]
    n = len(g)
    lay = layout_of(alg.meta, f)  # the verifier's aliasing rules, for communicator rank proc
    kind = _replay_kinds(g, f)
    src, src_ok = _chunk_ranges(g, lay, "src")
    dst, dst_ok = _chunk_ranges(g, lay, "dst")
    cnt = g.count.astype(np.int64)
    peer = [inv[p] if k in (SEND, RECV_COPY, RECV_REDUCE) else -1 for k, p in zip(kind, g.peer.tolist(), strict=False)]
    _check_buffers(g, f, kind, cnt, src_ok, dst_ok)
    deps = [g.deps_of(v).tolist() for v in range(n)]
    topo_rank = g.topological_rank()
    if topo_rank is None:  # the structure pre-flight reports cycles first; keep this total
        raise UsageError(f"rank {f}: dependency cycle", hint="collhub verify names the cycle")
    topo = np.argsort(topo_rank, kind="stable").tolist()
    succ: list[list[int]] = [[] for _ in range(n)]
    for v in range(n):
        for d in deps[v]:
            succ[d].append(v)
    desc = _descendants(n, succ, topo)
    reads, writes = _touched(kind, cnt, src, dst)
    _add_write_after_send(kind, reads, writes, topo_rank, desc, deps, succ)
    return RankPlan(
        rank=proc,
        file_rank=f,
        layout=lay,
        ids=g.ids.tolist(),
        kind=kind,
        peer=peer,
        tag=g.tag.tolist(),
        cnt=cnt.tolist(),
        src=src.tolist(),
        dst=dst.tolist(),
        deps=deps,
        succ=succ,
        conn_prev=_connection_chains(g, kind, peer, topo),
        direct=_direct_recvs(kind, reads, writes, desc),
        msg=[-1] * n,
        recv_post=[v for v in topo if kind[v] in (RECV_COPY, RECV_REDUCE)],
    )


def _replay_kinds(g: RankGraph, f: int) -> list[int]:
    """Each node's replay kind (SEND, RECV_COPY/REDUCE, COMP_COPY/REDUCE/NOOP); other node types
    cannot be replayed."""
    kind: list[int] = []
    for k, op in zip(g.kind.tolist(), g.op.tolist(), strict=False):
        if k == NodeType.SEND:
            kind.append(SEND)
        elif k == NodeType.RECV:
            kind.append(RECV_REDUCE if op == Op.REDUCE else RECV_COPY)
        elif k == NodeType.COMP:
            kind.append(COMP_COPY if op == Op.COPY else COMP_REDUCE if op == Op.REDUCE else COMP_NOOP)
        else:
            raise UsageError(
                f"rank {f} node {int(g.ids[len(kind)])}: node type {int(k)} cannot be replayed",
                hint="only COMM_SEND, COMM_RECV and COMP nodes are replayed",
            )
    return kind


def _check_buffers(
    g: RankGraph, f: int, kind: list[int], cnt: np.ndarray, src_ok: np.ndarray, dst_ok: np.ndarray
) -> None:
    """Every node that moves chunks names the buffers it reads and writes."""
    for v in range(len(kind)):
        k = kind[v]
        needs_src = k in (SEND, COMP_COPY, COMP_REDUCE) and cnt[v] > 0
        needs_dst = k in (RECV_COPY, RECV_REDUCE, COMP_COPY, COMP_REDUCE) and cnt[v] > 0
        if (needs_src and not src_ok[v]) or (needs_dst and not dst_ok[v]):
            raise UsageError(
                f"rank {f} node {int(g.ids[v])}: {KIND_NAME[k]} of {int(cnt[v])} chunk(s) names no buffer",
                hint="replay moves real data: every node needs the profile's sbuf/soff or dbuf/doff",
            )


_Range = tuple[int, int] | None


def _touched(kind: list[int], cnt: np.ndarray, src: np.ndarray, dst: np.ndarray) -> tuple[list[_Range], list[_Range]]:
    """The chunk ranges [start, end) each node reads and writes (None: none)."""
    n = len(kind)
    reads = [
        (int(src[v]), int(src[v] + cnt[v])) if kind[v] in (SEND, COMP_COPY, COMP_REDUCE) and cnt[v] > 0 else None
        for v in range(n)
    ]
    writes = [
        (int(dst[v]), int(dst[v] + cnt[v]))
        if kind[v] in (RECV_COPY, RECV_REDUCE, COMP_COPY, COMP_REDUCE) and cnt[v] > 0
        else None
        for v in range(n)
    ]
    return reads, writes


def _add_write_after_send(
    kind: list[int],
    reads: list[_Range],
    writes: list[_Range],
    topo_rank: np.ndarray,
    desc: list[int],
    deps: list[list[int]],
    succ: list[list[int]],
) -> None:
    """The implicit write-after-send dependencies (see the module docstring), added in place."""

    def ordered(a: int, b: int) -> bool:
        return bool((desc[a] >> b) & 1 or (desc[b] >> a) & 1)

    sends = [v for v in range(len(kind)) if kind[v] == SEND and reads[v] is not None]
    for w in range(len(kind)):
        w_range = writes[w]
        if w_range is None:
            continue
        ws, we = w_range
        for s in sends:
            rs, re_ = reads[s]  # type: ignore[misc]
            if s != w and rs < we and ws < re_ and topo_rank[s] < topo_rank[w] and not ordered(s, w):
                deps[w].append(s)
                succ[s].append(w)


def _direct_recvs(kind: list[int], reads: list[_Range], writes: list[_Range], desc: list[int]) -> list[bool]:
    """COPY RECVs received in place: every other node touching the range runs after it."""
    n = len(kind)
    direct = [False] * n
    for v in range(n):
        v_range = writes[v]
        if kind[v] != RECV_COPY or v_range is None:
            continue
        ws, we = v_range
        ok = True
        for u in range(n):
            if u == v:
                continue
            for rng in (reads[u], writes[u]):
                if rng is not None and rng[0] < we and ws < rng[1] and not (desc[v] >> u) & 1:
                    ok = False
                    break
            if not ok:
                break
        direct[v] = ok
    return direct


def _connection_chains(g: RankGraph, kind: list[int], peer: list[int], topo: list[int]) -> list[int]:
    """Per SEND the previous SEND (issue order) on its connection (peer, tag); -1 for the first."""
    conn_prev = [-1] * len(kind)
    last: dict[tuple[int, int], int] = {}
    for v in topo:
        if kind[v] == SEND:
            key = (peer[v], int(g.tag[v]))
            conn_prev[v] = last.get(key, -1)
            last[key] = v
    return conn_prev


def _match(plans: list[RankPlan], topo_of: list[dict[int, int]]) -> int:
    """Number every message: the k-th SEND p->q with tag t (issue order) is the k-th RECV on q
    from p with tag t. Returns the message count; unmatched nodes keep msg -1 (the structure
    pre-flight reports them)."""
    sends: dict[tuple[int, int, int], list[tuple[int, int]]] = {}
    recvs: dict[tuple[int, int, int], list[tuple[int, int]]] = {}
    for rp in plans:
        for v, k in enumerate(rp.kind):
            if k == SEND:
                sends.setdefault((rp.rank, rp.peer[v], rp.tag[v]), []).append((topo_of[rp.rank][v], v))
            elif k in (RECV_COPY, RECV_REDUCE):
                recvs.setdefault((rp.peer[v], rp.rank, rp.tag[v]), []).append((topo_of[rp.rank][v], v))
    m = 0
    for key in sorted(sends):
        s_list, r_list = sorted(sends[key]), sorted(recvs.get(key, []))
        for (_, s), (_, r) in zip(s_list, r_list, strict=False):
            plans[key[0]].msg[s] = m
            plans[key[1]].msg[r] = m
            m += 1
    return m


def build_plan(alg: Algorithm) -> Plan:
    """The replay plan of ``alg`` (call after the structure pre-flight: it assumes valid ids,
    acyclic dependencies and matched messages)."""
    meta = alg.meta
    if meta.collective not in SUPPORTED:
        raise UsageError(
            f"replay cannot check a {meta.collective.value} algorithm",
            hint="supported: " + ", ".join(sorted(c.value for c in SUPPORTED)),
        )
    if meta.in_chunks <= 0 or meta.out_chunks <= 0:
        raise UsageError(
            f"algorithm {meta.name or '?'} has no buffer semantics (in_chunks={meta.in_chunks}, "
            f"out_chunks={meta.out_chunks}): there is no data to move",
            hint="timing-only imports (astrasim.custom) can be simulated, not replayed",
        )
    order = comm_order(alg)
    inv = [0] * alg.ranks
    for q, d in enumerate(order):
        inv[d] = q
    plans = [_rank_plan(alg, p, order, inv) for p in range(alg.ranks)]
    topo_of = []
    for rp in plans:
        tr = alg.graphs[rp.file_rank].topological_rank()
        topo_of.append({v: int(tr[v]) for v in range(len(rp))} if tr is not None else {})
    messages = _match(plans, topo_of)
    c, iu, ou = unit_shape(alg)
    return Plan(
        name=meta.name or "algorithm",
        collective=meta.collective.value,
        ranks=alg.ranks,
        root=meta.root,
        inplace=meta.inplace,
        chunks_per_unit=c,
        in_units=iu,
        out_units=ou,
        in_chunks=meta.in_chunks,
        out_chunks=meta.out_chunks,
        ref_chunks=meta.reference_chunks,
        messages=messages,
        ranks_plan=plans,
    )
