"""Expanding a :class:`~hub.chakra.Workload` into an engine program.

Each rank's workload nodes become engine nodes; every COMM_COLL node becomes a START marker,
the rank's nodes of the serving algorithm (one *instance* per collective), and an END marker.
ASTRA-sim's resource rules apply to workload nodes only: per NPU one in-flight GPU COMP, one
in-flight GPU SEND-or-COLL (held from START to END, or until a SEND's data arrives) and one CPU
op; RECVs are unlimited; nodes inside a custom collective are never throttled. The engine issues
ready workload nodes per NPU in ascending node id (ASTRA-sim's ``Workload::issue_dep_free_nodes``),
also those a collective's END frees. A native collective (``hub.sim._astrasim.streams``) becomes
its streams' phases, each its algorithm's schedule; a phase holds a slot of its dimension's
queue (resource class ``QUEUE_CLASS + dim``, ``active-chunks-per-dimension`` slots) from its
first op to the op that ends it, and a process group runs its members in declared order.

Process groups (``pg_name``) follow ASTRA-sim's custom-collective path: NPU r runs the algorithm's
graph at its position in the *sorted* member list (``CommunicatorGroup``'s ``pos_in_group``, the
``<prefix>.<pos>.et`` it opens) and algorithm rank k is the k-th member *as declared*
(``CustomAlgorithm``: ``involved_NPUs[k]``); for the usual sorted lists both are the same.

Differences from ASTRA-sim (documented in docs/simulator.md): the k-th COMM_COLL of a group on
every member (in file order) is the same collective instance, and its messages are matched only
within that instance (ASTRA-sim shares one tag space, so concurrent collectives with equal tags
and sizes could cross-match).

The steps: :func:`_plan` (every collective instance and its algorithm; all bad input at once,
exit 3), :func:`_add_rank` (one rank's nodes, then their dependencies), :func:`_finish` (the
columns and the successor lists of the program).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...chakra import Algorithm, Collective, NodeType, Workload, WorkloadNode
from ...errors import SimulationError
from ...workload import Pick, means_everyone
from .._engine.program import K_COMP, K_END, K_NOP, K_RECV, K_SEND, K_START, Program, _to_array, comp_ns
from .collectives import NativeRing
from .streams import QUEUE_CLASS, phase_schedule, stream_plan

__all__ = ["program_from_workload"]

RES_COMP, RES_COMM, RES_CPU = 1, 2, 3


@dataclass(frozen=True)
class _Served:
    """How one rank's COMM_COLL node runs: instance number (1-based), algorithm (None: a replayed
    BROADCAST), the graph this rank runs and the NPU of each algorithm rank."""

    instance: int
    label: str
    alg: Algorithm | None
    graph_pos: int
    npus: tuple[int, ...]
    native: NativeRing | None = None
    size: int = 0


@dataclass
class _Builder:
    """The program's columns, appended node by node."""

    kind: list[int] = field(default_factory=list)
    rank: list[int] = field(default_factory=list)
    peer: list[int] = field(default_factory=list)
    tagx: list[int] = field(default_factory=list)
    size: list[int] = field(default_factory=list)
    dur: list[int] = field(default_factory=list)
    lid: list[int] = field(default_factory=list)
    inst: list[int] = field(default_factory=list)
    acq: list[int] = field(default_factory=list)
    rel: list[int] = field(default_factory=list)
    edges: list[tuple[int, int]] = field(default_factory=list)  # (parent, child)
    quorum: dict[int, int] = field(default_factory=dict)  # Program.quorum
    arm: dict[int, int] = field(default_factory=dict)  # Program.arm
    seq: dict[int, int] = field(default_factory=dict)  # Program.seq
    caps: int = 1  # slots of each native dimension queue (active-chunks-per-dimension)
    # (rank, collective kind, dimension) -> double-binary-tree phases generated so far, in file order
    trees: dict[tuple[int, Collective, int], int] = field(default_factory=dict)
    labels: dict[int, str] = field(default_factory=dict)
    fkey: list[int] = field(default_factory=list)  # Program.fkey
    nfeeders: int = 0
    succ_order: dict[int, list[int]] = field(default_factory=dict)  # parent -> children, feeder order
    orders: dict[tuple[int, int], tuple[list[int], dict[int, list[int]]]] = field(default_factory=dict)

    def add(
        self,
        k: int,
        r: int,
        *,
        p: int = -1,
        tag: int = 0,
        sz: int = -1,
        d: int = 0,
        node_id: int = 0,
        instance: int = 0,
        a: int = 0,
        rl: int = 0,
        fk: int = -1,
    ) -> int:
        self.fkey.append(fk)
        self.kind.append(k)
        self.rank.append(r)
        self.peer.append(p)
        self.tagx.append(tag)
        self.size.append(sz)
        self.dur.append(d)
        self.lid.append(node_id)
        self.inst.append(instance)
        self.acq.append(a)
        self.rel.append(rl)
        return len(self.kind) - 1


def program_from_workload(
    wl: Workload,
    algorithm_for: Pick,
    npus: int,
    reduction_GBps: float | None = None,
    native: Mapping[Collective, NativeRing] | None = None,
    comm_groups: Mapping[str, Sequence[int]] | None = None,
) -> Program:
    """Flatten ``wl``; ``algorithm_for(collective, comm_size, ranks)`` returns a bound algorithm
    (or None for a BROADCAST replayed as its ``duration_micros``, like ASTRA-sim); ``native``:
    collectives served by ASTRA-sim's native implementation instead (``hub.sim._astrasim.collectives``);
    ``comm_groups``: process groups declared outside the workload (ASTRA-sim's
    ``--comm-group-configuration``: name -> NPUs in declared order).

    Raises :class:`hub.errors.VerificationError` (exit 3) listing every bad collective (rank,
    node): ranks of a group disagreeing on the collective sequence, undeclared groups or groups
    naming absent ranks, an algorithm whose rank count is not the group's, a COMM_COLL without
    ``comm_size``; :class:`SimulationError` for other malformed nodes.
    """
    if wl.rank_count > npus:
        raise SimulationError(
            f"the workload has {wl.rank_count} ranks but the topology has only {npus} NPUs",
            hint="choose a topology with at least as many NPUs",
        )
    served = _plan(wl, algorithm_for, native or {}, comm_groups)
    b = _Builder()
    for r, nodes in enumerate(wl.ranks):
        _add_rank(b, r, nodes, served, wl.rank_count, reduction_GBps)
    return _finish(b, wl.rank_count)


def _plan(
    wl: Workload,
    pick: Pick,
    native: Mapping[Collective, NativeRing],
    comm_groups: Mapping[str, Sequence[int]] | None = None,
) -> dict[tuple[int, int], _Served]:
    """(rank, COMM_COLL id) -> how it is served, for every collective instance of ``wl``."""
    from ...workload import plan_collectives

    def choose(coll: Collective, size: int, ranks: int) -> Algorithm | None:
        return None if coll in native else pick(coll, size, ranks)

    out: dict[tuple[int, int], _Served] = {}
    planned = plan_collectives(wl, choose, action="simulate", refusal_is_problem=False, comm_groups=comm_groups)
    for k, (inst, alg) in enumerate(planned, start=1):
        order = sorted(inst.group)
        for r, node in inst.nodes.items():
            out[(r, node.id)] = _Served(
                k, f"{inst.coll.value}#{k - 1}", alg, order.index(r), inst.group, native.get(inst.coll), inst.size
            )
    return out


def _add_rank(
    b: _Builder,
    r: int,
    nodes: list[WorkloadNode],
    served: dict[tuple[int, int], _Served],
    nr: int,
    reduction_GBps: float | None,
) -> None:
    """Rank ``r``'s nodes (a COMM_COLL as START, its algorithm graph, END), then their dependencies."""
    entry: dict[int, int] = {}  # workload node id -> engine node that starts it
    exit_: dict[int, int] = {}  # workload node id -> engine node whose completion ends it
    for node in nodes:
        if node.id in entry:
            raise SimulationError(f"workload rank {r}: node id {node.id} appears twice")
        t = int(node.type)
        if t == NodeType.COMP:
            dm = node.duration_micros  # comp_ns for one node without a size: µs x 1000, 0 -> 1 ns
            res = RES_CPU if node.is_cpu_op else RES_COMP
            g = b.add(K_COMP, r, d=dm * 1000 if dm > 0 else 1, node_id=node.id, a=res, rl=res)
            entry[node.id] = exit_[node.id] = g
        elif t in (NodeType.SEND, NodeType.RECV):
            entry[node.id] = exit_[node.id] = _add_p2p(b, r, node, nr)
        elif t == NodeType.COLL:
            if node.is_cpu_op:
                raise SimulationError(f"workload rank {r} node {node.id}: a COMM_COLL must have is_cpu_op = false")
            entry[node.id], exit_[node.id] = _add_collective(b, r, node, served[(r, node.id)], reduction_GBps)
        else:  # METADATA and the rest: a zero-time no-op
            entry[node.id] = exit_[node.id] = b.add(K_NOP, r, node_id=node.id)
    for node in nodes:
        for d in node.deps:
            if d not in exit_:
                raise SimulationError(f"workload rank {r} node {node.id}: dependency {d} is not a node of this rank")
            b.edges.append((exit_[d], entry[node.id]))


def _add_p2p(b: _Builder, r: int, node: WorkloadNode, nr: int) -> int:
    """A workload-level SEND (holds the NPU's communication resource until its data arrives) or RECV."""
    is_send = node.type == NodeType.SEND
    other = node.comm_dst if is_send else node.comm_src
    if other is None or node.comm_size is None:
        raise SimulationError(
            f"workload rank {r} node {node.id}: {'SEND' if is_send else 'RECV'} without "
            f"{'comm_dst' if is_send else 'comm_src'}/comm_size"
        )
    if not 0 <= other < nr or other == r:
        raise SimulationError(f"workload rank {r} node {node.id}: peer NPU {other} is not another rank")
    res = (RES_CPU if node.is_cpu_op else RES_COMM) if is_send else 0
    return b.add(
        K_SEND if is_send else K_RECV,
        r,
        p=other,
        tag=int(node.comm_tag or 0),
        sz=int(node.comm_size),
        node_id=node.id,
        a=res,
        rl=res,
    )


def _add_collective(
    b: _Builder, r: int, node: WorkloadNode, sv: _Served, reduction_GBps: float | None
) -> tuple[int, int]:
    """(entry, exit) engine nodes of one COMM_COLL on rank ``r``: START, the algorithm graph, END."""
    k = sv.instance
    b.labels[k] = sv.label
    if sv.native is not None:
        assert node.collective is not None
        # (a process group's plan involves every dimension: CommunicatorGroup::get_collective_plan)
        involved = node.attrs.get("involved_dim") if means_everyone(node.pg_name) else None
        return _add_native(b, r, node, node.collective, sv, involved)
    if sv.alg is None:  # BROADCAST: replayed as a fixed duration (ASTRA-sim)
        d = int(comp_ns(np.array([node.duration_micros]), np.array([-1]), None)[0])
        g = b.add(K_COMP, r, d=d, node_id=node.id, a=RES_COMM, rl=RES_COMM)
        return g, g
    fk = b.nfeeders  # this instance's own feeder on this rank (CustomAlgorithm's ETFeeder)
    b.nfeeders += 1
    s = b.add(K_START, r, node_id=node.id, instance=k, a=RES_COMM, fk=fk)
    graph = sv.alg.graphs[sv.graph_pos]
    base = len(b.kind)
    gk, gp, gt, gs = graph.kind.tolist(), graph.peer.tolist(), graph.tag.tolist(), graph.size.tolist()
    gd = comp_ns(graph.duration, graph.size, reduction_GBps).tolist()
    gi = graph.ids.tolist()
    npus = sv.npus
    for pos in range(len(graph)):
        kk = gk[pos]
        ek = kk if kk in (K_SEND, K_RECV, K_COMP) else K_NOP
        peer = npus[gp[pos]] if ek in (K_SEND, K_RECV) else -1
        b.add(
            ek,
            r,
            p=peer,
            tag=gt[pos] + (k << 32),
            sz=gs[pos],
            d=gd[pos] if ek == K_COMP else 0,
            node_id=gi[pos],
            instance=k,
            fk=fk,
        )
    has_succ = np.zeros(len(graph), dtype=bool)
    ptr, dep = graph.dep_ptr.tolist(), graph.dep_pos.tolist()
    for pos in range(len(graph)):
        deps = dep[ptr[pos] : ptr[pos + 1]]
        if not deps:
            b.edges.append((s, base + pos))
        for dpos in deps:
            b.edges.append((base + dpos, base + pos))
            has_succ[dpos] = True
    e = b.add(K_END, r, node_id=node.id, instance=k, rl=RES_COMM)
    key = (id(sv.alg), sv.graph_pos)
    if key not in b.orders:
        b.orders[key] = feeder_orders(graph)
    roots, kids = b.orders[key]
    b.succ_order[s] = [base + x for x in roots]
    for pos, children in kids.items():
        b.succ_order[base + pos] = [base + x for x in children]
    sinks = np.flatnonzero(~has_succ).tolist() if len(graph) else []
    for pos in sinks:
        b.edges.append((base + pos, e))
    if not sinks:
        b.edges.append((s, e))
    return s, e


def _add_native(
    b: _Builder, r: int, node: WorkloadNode, coll: Collective, sv: _Served, involved: list[bool] | None
) -> tuple[int, int]:
    """ASTRA-sim's native collective on rank ``r`` (``hub.sim._astrasim.streams``): per stream and
    phase, the phase's algorithm schedule (``hub.sim._astrasim.ops``) whose first op takes a slot of
    the phase's dimension queue (a zero-time gate when the schedule starts with several) and
    whose ending op frees it and starts the stream's next phase. END waits for every stream's
    last phase."""
    ns = sv.native
    assert ns is not None
    k, node_id = sv.instance, node.id
    dims = ns.dims or (len(sv.npus),)
    group = sv.npus if len(sv.npus) < math.prod(dims) else None
    plan = stream_plan(
        coll,
        sv.size,
        r,
        dims,
        ns.impls,
        splits=ns.splits,
        delay=ns.endpoint_delay,
        active=ns.active_chunks,
        local_bw_aware=ns.local_bw_aware,
        group=group,
        involved=tuple(bool(v) for v in involved) if involved is not None else None,
        windows=ns.windows,
    )
    b.caps = max(b.caps, plan.active)
    s = b.add(K_START, r, node_id=node_id, instance=k, a=RES_COMM)
    e = b.add(K_END, r, node_id=node_id, instance=k, rl=RES_COMM)
    tag = 0  # one per phase of a stream (ASTRA-sim's stream ids): its messages pair in order
    for _c in range(plan.chunks):
        last = s
        for ph in plan.phases:
            trees = (r, coll, ph.dim)  # (DoubleBinaryTreeTopology: one counter per kind and dimension)
            ops, ends = phase_schedule(ph, b.trees.get(trees, 0), ns.local_mem_bw)
            b.trees[trees] = b.trees.get(trees, 0) + 1
            q = QUEUE_CLASS + ph.dim
            roots = [i for i, op in enumerate(ops) if not op.deps]
            if len(roots) > 1:  # (the slot is one stream's: taken once, by a gate before them)
                last = _edge(b, last, b.add(K_NOP, r, node_id=node_id, instance=k, a=q))
            base = len(b.kind)
            for i, op in enumerate(ops):
                comm = op.kind in (K_SEND, K_RECV)
                peer, sz = (ph.members[op.peer], op.size) if comm else (-1, -1)
                acq = q if len(roots) == 1 and i == roots[0] else 0
                rel = q if i == ends[-1] else 0
                t = tag + (k << 32)
                b.add(op.kind, r, p=peer, tag=t, sz=sz, d=op.dur, node_id=node_id, instance=k, a=acq, rl=rel)
            for i, op in enumerate(ops):
                b.edges.extend((base + j, base + i) for j in op.deps or ())
                if not op.deps:
                    b.edges.append((last, base + i))
                if op.need or op.arm >= 0:  # (counted joins: hub.sim._astrasim.direct)
                    b.quorum[base + i] = op.need or len(op.deps)
                if op.arm >= 0:
                    b.edges.append((base + op.arm, base + i))
                    b.arm[base + i] = base + op.arm
                if op.seq:
                    b.seq[base + i] = op.seq
            last = base + ends[-1]
            tag += 1
        b.edges.append((last, e))
    return s, e


def _edge(b: _Builder, parent: int, child: int) -> int:
    b.edges.append((parent, child))
    return child


def _finish(b: _Builder, nr: int) -> Program:
    """The program's columns and its successor lists (CSR, children ascending per parent)."""
    n = len(b.kind)
    karr = np.asarray(b.kind, dtype=np.int64)
    sarr = np.asarray(b.size, dtype=np.int64)
    comm = (karr == K_SEND) | (karr == K_RECV)
    if (comm & (sarr < 0)).any():
        g = int(np.argmax(comm & (sarr < 0)))
        raise SimulationError(f"workload rank {b.rank[g]}: node {b.lid[g]} has no message size")
    par = np.asarray([e[0] for e in b.edges], dtype=np.int64)
    chi = np.asarray([e[1] for e in b.edges], dtype=np.int64)
    indeg = np.bincount(chi, minlength=n) if chi.size else np.zeros(n, dtype=np.int64)
    order = np.lexsort((chi, par)) if par.size else np.zeros(0, dtype=np.int64)
    succ_ptr = np.zeros(n + 1, dtype=np.int64)
    if par.size:
        np.cumsum(np.bincount(par, minlength=n), out=succ_ptr[1:])
    succ_idx = chi[order] if chi.size else chi
    fkey = None
    if b.nfeeders:  # (hub.sim._engine.layout then writes lists of two reversed: the feeder's child-set order)
        fkey = b.fkey
        succ_idx = _feeder_lists(succ_ptr, succ_idx, b.succ_order, np.asarray(b.fkey) < 0)
    sends = karr == K_SEND
    return Program(
        n=n,
        ranks=nr,
        kind=b.kind,
        rank=_to_array(np.asarray(b.rank), "i"),
        peer=_to_array(np.asarray(b.peer), "i"),
        tagx=_to_array(np.asarray(b.tagx, dtype=np.int64), "q"),
        size=_to_array(sarr, "q"),
        dur=_to_array(np.asarray(b.dur), "q"),
        succ_ptr=_to_array(succ_ptr, "q"),
        succ_idx=_to_array(succ_idx, "q"),
        indeg=indeg.tolist(),
        local_id=_to_array(np.asarray(b.lid), "q"),
        inst=_to_array(np.asarray(b.inst), "i"),
        acq=b.acq,
        rel=b.rel,
        caps=[1] * QUEUE_CLASS + [b.caps] * (16 - QUEUE_CLASS),
        labels=b.labels,
        quorum=b.quorum,
        arm=b.arm,
        seq=b.seq,
        fkey=fkey,
        messages=int(sends.sum()),
        bytes=int(sarr[sends].sum()),
    )


def _feeder_lists(
    succ_ptr: np.ndarray, succ_idx: np.ndarray, chosen: dict[int, list[int]], plain: np.ndarray
) -> np.ndarray:
    """The successor lists as the engine reads them in a workload with custom collectives: a
    collective's START lists its roots, and each of its nodes its children, in their feeder's
    order (``chosen``); every other list of two is stored reversed, so that the layout's reversal
    of lists of two (the feeder's rule) gives back file order for nodes without a feeder."""
    out = succ_idx.copy()
    for parent, children in chosen.items():
        lo, hi = int(succ_ptr[parent]), int(succ_ptr[parent + 1])
        if hi - lo == len(children):
            out[lo:hi] = children
    two = np.flatnonzero((np.diff(succ_ptr) == 2) & plain)
    if two.size:
        first = succ_ptr[two]
        out[first], out[first + 1] = succ_idx[first + 1], succ_idx[first]
    return out


def feeder_orders(graph: Any) -> tuple[list[int], dict[int, list[int]]]:
    """One algorithm graph as its own feeder walks it (``hub.sim._engine.feeder``, rule 3 of
    docs/simulator.md): the roots in the order they enter the dependency-free set (the hash
    order of every node id, file order inserted, ``_map_sequence``; two roots stored newest first, as the engine
    reverses lists of two), and per node with several children its children in child-set order
    (lists of two in file order: reversed by the layout)."""
    from .._engine.feeder import _child_order, _dedup_edges, _map_sequence, insert_order_np

    n = len(graph)
    ids = np.asarray(graph.ids, dtype=np.int64).astype(np.uint64)
    ptr = np.asarray(graph.dep_ptr, dtype=np.int64)
    parents = np.asarray(graph.dep_pos, dtype=np.int64)
    child = np.repeat(np.arange(n, dtype=np.int64), np.diff(ptr))
    o = np.lexsort((child, parents))
    sp = np.zeros(n + 1, dtype=np.int64)
    if parents.size:
        np.cumsum(np.bincount(parents, minlength=n), out=sp[1:])
    si = child[o]
    indeg = np.bincount(child, minlength=n)
    sp, si, indeg = _dedup_edges(sp, si, n, indeg)
    si = _child_order(sp, si, ids)
    kids = {p: si[sp[p] : sp[p + 1]].tolist() for p in np.flatnonzero(np.diff(sp) > 1).tolist()}
    is_root = indeg == 0
    roots = np.flatnonzero(is_root)
    if roots.size > 1:
        where = {int(k): int(i) for i, k in enumerate(ids.tolist())}
        seq = _map_sequence(ids, ptr, parents)  # (parents named before their node enter first)
        roots = np.asarray([where[int(k)] for k in insert_order_np(seq).tolist() if is_root[where[int(k)]]])
    out = roots.tolist()
    if len(out) == 2:
        out.reverse()
    return out, kids
