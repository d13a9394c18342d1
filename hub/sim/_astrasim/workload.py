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

import gc
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
    # more (parent, child) edges, a block at a time (n x 2 int64): their order does not matter
    edge_blocks: list[np.ndarray] = field(default_factory=list)
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
    orders: dict[tuple[tuple[str, bytes], ...], tuple[list[int], _Kids]] = field(default_factory=dict)
    # more parent -> children in feeder order, a graph instance at a time: (parents, count of
    # children per parent, the children one after another), engine indices
    kid_blocks: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=list)
    # (algorithm, graph position, NPUs) -> the graph's engine nodes, made once (_Template)
    templates: dict[tuple[int, int, tuple[int, ...]], _Template] = field(default_factory=dict)

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


@dataclass(frozen=True)
class _Kids:
    """A graph's nodes with several children, each with its children in feeder order (positions):
    ``parents``, ``counts`` (children per parent) and ``children`` (one parent's after another)."""

    parents: np.ndarray
    counts: np.ndarray
    children: np.ndarray


@dataclass(frozen=True)
class _Template:
    """One algorithm graph as engine nodes, the same for every instance of it (only the rank, the
    instance number in the tags and ``inst``, the feeder and the base index differ): the columns
    (tags without the instance), the graph's own edges, its roots and sinks (positions)."""

    kind: list[int]
    peer: list[int]
    tag: np.ndarray
    size: list[int]
    dur: list[int]
    ids: list[int]
    zeros: list[int]
    edges: np.ndarray  # (m, 2) positions: (parent, child)
    roots: np.ndarray
    sinks: np.ndarray


def _template(graph: Any, npus: tuple[int, ...], reduction_GBps: float | None) -> _Template:
    """The engine nodes of ``graph`` run by NPUs ``npus`` (algorithm rank k on ``npus[k]``): kinds
    other than SEND/RECV/COMP are no-ops; a peer only on SEND/RECV, a duration only on COMP."""
    n = len(graph)
    gk = np.asarray(graph.kind, dtype=np.int64)
    ek = np.where(np.isin(gk, (K_SEND, K_RECV, K_COMP)), gk, K_NOP)
    comm = (ek == K_SEND) | (ek == K_RECV)
    peer = np.full(n, -1, dtype=np.int64)
    if comm.any():
        peer[comm] = np.asarray(npus, dtype=np.int64)[np.asarray(graph.peer, dtype=np.int64)[comm]]
    gd = np.asarray(comp_ns(graph.duration, graph.size, reduction_GBps), dtype=np.int64)
    dur = np.where(ek == K_COMP, gd, 0) if n else np.zeros(0, dtype=np.int64)
    ptr = np.asarray(graph.dep_ptr, dtype=np.int64)
    parents = np.asarray(graph.dep_pos, dtype=np.int64)
    child = np.repeat(np.arange(n, dtype=np.int64), np.diff(ptr))
    has_succ = np.zeros(n, dtype=bool)
    has_succ[parents] = True
    return _Template(
        kind=ek.tolist(),
        peer=peer.tolist(),
        tag=np.asarray(graph.tag, dtype=np.int64),
        size=np.asarray(graph.size, dtype=np.int64).tolist(),
        dur=dur.tolist(),
        ids=np.asarray(graph.ids, dtype=np.int64).tolist(),
        zeros=[0] * n,
        edges=np.stack([parents, child], axis=1) if n else np.zeros((0, 2), dtype=np.int64),
        roots=np.flatnonzero(np.diff(ptr) == 0),
        sinks=np.flatnonzero(~has_succ),
    )


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
    was = gc.isenabled()
    gc.disable()  # (millions of lists and ints, no cycles: the collector's passes over the
    try:  # workload's nodes cost a fifth of the lowering, 2.3 of 10 s CPU at 1.1M nodes)
        served = _plan(wl, algorithm_for, native or {}, comm_groups)
        b = _Builder()
        for r, nodes in enumerate(wl.ranks):
            _add_rank(b, r, nodes, served, wl.rank_count, reduction_GBps)
        return _finish(b, wl.rank_count)
    finally:
        if was:
            gc.enable()


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
    """Rank ``r``'s nodes (a COMM_COLL as START, its algorithm graph, END), then their dependencies.

    The nodes between two COMM_COLLs (COMP, SEND, RECV, no-ops: one engine node each) are
    appended as columns, a run at a time; the first bad node (:func:`_first_bad`) is refused
    where the node-by-node walk would reach it, after the collectives before it."""
    n = len(nodes)
    types = [int(node.type) for node in nodes]
    cols = _simple_columns(r, nodes, types)
    bad, err = _first_bad(r, nodes, types, nr)
    entry = np.empty(n, dtype=np.int64)  # node position -> engine node that starts it
    exit_ = np.empty(n, dtype=np.int64)  # node position -> engine node whose completion ends it
    coll = int(NodeType.COLL)
    stops = [i for i, t in enumerate(types) if t == coll and i < bad] + [bad]
    start = 0
    for c in stops:
        base = len(b.kind)
        entry[start:c] = exit_[start:c] = np.arange(base, base + c - start)
        _extend(b, r, cols, start, c)
        if c == bad:
            break
        node = nodes[c]
        entry[c], exit_[c] = _add_collective(b, r, node, served[(r, node.id)], reduction_GBps)
        start = c + 1
    if err is not None:
        raise err
    _add_deps(b, r, nodes, entry, exit_)


def _simple_columns(r: int, nodes: list[WorkloadNode], types: list[int]) -> list[list[int]]:
    """Per node, as a COMP (µs x 1000, 0 -> 1 ns: comp_ns for one node without a size; the CPU
    or GPU compute resource), SEND/RECV (peer, tag, size; a SEND holds the CPU or communication
    resource) or no-op would be added: kind, peer, tag, size, duration, id, resource. A COMM_COLL's
    row is never used; a bad node's values are checked by :func:`_first_bad` before use."""
    comp, send, recv = int(NodeType.COMP), int(NodeType.SEND), int(NodeType.RECV)
    kind = [K_COMP if t == comp else K_SEND if t == send else K_RECV if t == recv else K_NOP for t in types]
    peer = [-1] * len(nodes)
    tag = [0] * len(nodes)
    size = [-1] * len(nodes)
    dur = [0] * len(nodes)
    res = [0] * len(nodes)
    for i, t in enumerate(types):
        if t == comp:
            node = nodes[i]
            dm = node.duration_micros
            dur[i] = dm * 1000 if dm > 0 else 1
            res[i] = RES_CPU if node.is_cpu_op else RES_COMP
        elif t == send or t == recv:
            node = nodes[i]
            peer[i] = (node.comm_dst if t == send else node.comm_src) or 0
            tag[i] = int(node.comm_tag or 0)
            size[i] = int(node.comm_size or 0)
            if t == send:
                res[i] = RES_CPU if node.is_cpu_op else RES_COMM
    return [kind, peer, tag, size, dur, [node.id for node in nodes], res]


def _extend(b: _Builder, r: int, cols: list[list[int]], lo: int, hi: int) -> None:
    """Rows ``lo:hi`` of :func:`_simple_columns` appended (workload nodes: no instance, no feeder)."""
    if hi <= lo:
        return
    kind, peer, tag, size, dur, ids, res = cols
    m = hi - lo
    b.kind.extend(kind[lo:hi])
    b.rank.extend([r] * m)
    b.peer.extend(peer[lo:hi])
    b.tagx.extend(tag[lo:hi])
    b.size.extend(size[lo:hi])
    b.dur.extend(dur[lo:hi])
    b.lid.extend(ids[lo:hi])
    b.inst.extend([0] * m)
    b.acq.extend(res[lo:hi])
    b.rel.extend(res[lo:hi])
    b.fkey.extend([-1] * m)


def _first_bad(r: int, nodes: list[WorkloadNode], types: list[int], nr: int) -> tuple[int, SimulationError | None]:
    """The position of the first node the lowering refuses, and why: an id used before, a
    SEND/RECV without its peer or size or with a peer that is not another rank, a COMM_COLL
    with ``is_cpu_op``; (len(nodes), None) where none is."""
    seen: set[int] = set()
    send, recv, coll = int(NodeType.SEND), int(NodeType.RECV), int(NodeType.COLL)
    for i, node in enumerate(nodes):
        if node.id in seen:
            return i, SimulationError(f"workload rank {r}: node id {node.id} appears twice")
        seen.add(node.id)
        t = types[i]
        if t == send or t == recv:
            is_send = t == send
            other = node.comm_dst if is_send else node.comm_src
            if other is None or node.comm_size is None:
                return i, SimulationError(
                    f"workload rank {r} node {node.id}: {'SEND' if is_send else 'RECV'} without "
                    f"{'comm_dst' if is_send else 'comm_src'}/comm_size"
                )
            if not 0 <= other < nr or other == r:
                return i, SimulationError(f"workload rank {r} node {node.id}: peer NPU {other} is not another rank")
        elif t == coll and node.is_cpu_op:
            return i, SimulationError(f"workload rank {r} node {node.id}: a COMM_COLL must have is_cpu_op = false")
    return len(nodes), None


def _add_deps(b: _Builder, r: int, nodes: list[WorkloadNode], entry: np.ndarray, exit_: np.ndarray) -> None:
    """The edges of rank ``r``'s dependencies (exit of the dependency -> entry of the node), found
    by binary search in the rank's ids (unique: checked by the caller); the first dependency on an
    id the rank does not hold, in node then dependency order, is refused."""
    deps = [node.deps for node in nodes]
    counts = np.fromiter(map(len, deps), dtype=np.int64, count=len(nodes))
    flat = np.fromiter((d for ds in deps for d in ds), dtype=np.int64, count=int(counts.sum()))
    if not flat.size:
        return
    ids = np.fromiter((node.id for node in nodes), dtype=np.int64, count=len(nodes))
    order = np.argsort(ids, kind="stable")
    sids = ids[order]
    at = np.minimum(np.searchsorted(sids, flat), sids.size - 1)
    found = sids[at] == flat
    child = np.repeat(np.arange(len(nodes), dtype=np.int64), counts)
    if not found.all():
        j = int(np.argmin(found))
        raise SimulationError(
            f"workload rank {r} node {nodes[int(child[j])].id}: dependency {int(flat[j])} is not a node of this rank"
        )
    b.edge_blocks.append(np.stack([exit_[order[at]], entry[child]], axis=1))


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
    tkey = (id(sv.alg), sv.graph_pos, sv.npus)
    t = b.templates.get(tkey)
    if t is None:
        t = b.templates[tkey] = _template(graph, sv.npus, reduction_GBps)
    base = len(b.kind)
    n = len(t.kind)
    b.kind.extend(t.kind)
    b.rank.extend([r] * n)
    b.peer.extend(t.peer)
    b.tagx.extend((t.tag + (k << 32)).tolist())
    b.size.extend(t.size)
    b.dur.extend(t.dur)
    b.lid.extend(t.ids)
    b.inst.extend([k] * n)
    b.acq.extend(t.zeros)
    b.rel.extend(t.zeros)
    b.fkey.extend([fk] * n)
    e = b.add(K_END, r, node_id=node.id, instance=k, rl=RES_COMM)
    b.edge_blocks.append(t.edges + base)
    b.edges.extend((s, base + x) for x in t.roots.tolist())
    b.edges.extend((base + x, e) for x in t.sinks.tolist())
    if not t.sinks.size:
        b.edges.append((s, e))
    # (feeder_orders reads only the ids and the dependencies: graphs of one algorithm bound to
    # other sizes share them, so the key is their bytes)
    key = tuple((a.dtype.str, a.tobytes()) for a in (graph.ids, graph.dep_ptr, graph.dep_pos))
    got = b.orders.get(key)
    if got is None:
        got = b.orders[key] = feeder_orders(graph)
    roots, kids = got
    b.succ_order[s] = [base + x for x in roots]
    if kids.parents.size:
        b.kid_blocks.append((kids.parents + base, kids.counts, kids.children + base))
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
    pairs = np.concatenate([np.asarray(b.edges, dtype=np.int64).reshape(-1, 2), *b.edge_blocks])
    par, chi = pairs[:, 0].copy(), pairs[:, 1].copy()
    indeg = np.bincount(chi, minlength=n) if chi.size else np.zeros(n, dtype=np.int64)
    order = np.lexsort((chi, par)) if par.size else np.zeros(0, dtype=np.int64)
    succ_ptr = np.zeros(n + 1, dtype=np.int64)
    if par.size:
        np.cumsum(np.bincount(par, minlength=n), out=succ_ptr[1:])
    succ_idx = chi[order] if chi.size else chi
    fkey = None
    if b.nfeeders:  # (hub.sim._engine.layout then writes lists of two reversed: the feeder's child-set order)
        fkey = b.fkey
        succ_idx = _feeder_lists(succ_ptr, succ_idx, b.succ_order, b.kid_blocks, np.asarray(b.fkey) < 0)
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
    succ_ptr: np.ndarray,
    succ_idx: np.ndarray,
    chosen: dict[int, list[int]],
    blocks: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
    plain: np.ndarray,
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
    if blocks:  # (the same rule for the graphs' nodes, all at once)
        parents = np.concatenate([p for p, _, _ in blocks])
        counts = np.concatenate([c for _, c, _ in blocks])
        kids = np.concatenate([k for _, _, k in blocks])
        lo = succ_ptr[parents]
        fits = np.repeat(succ_ptr[parents + 1] - lo == counts, counts)
        starts = np.cumsum(counts) - counts
        at = np.repeat(lo - starts, counts) + np.arange(kids.size)
        out[at[fits]] = kids[fits]
    two = np.flatnonzero((np.diff(succ_ptr) == 2) & plain)
    if two.size:
        first = succ_ptr[two]
        out[first], out[first + 1] = succ_idx[first + 1], succ_idx[first]
    return out


def feeder_orders(graph: Any) -> tuple[list[int], _Kids]:
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
    many = np.flatnonzero(np.diff(sp) > 1)
    counts = (sp[many + 1] - sp[many]).astype(np.int64)
    at = np.repeat(sp[many] - (np.cumsum(counts) - counts), counts) + np.arange(int(counts.sum()))
    kids = _Kids(many.astype(np.int64), counts, np.asarray(si, dtype=np.int64)[at])
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
