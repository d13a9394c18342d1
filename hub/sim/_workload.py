"""Expanding a :class:`~hub.chakra.Workload` into an engine program.

Each rank's workload nodes become engine nodes; every COMM_COLL node becomes a START marker,
the rank's nodes of the serving algorithm (one *instance* per collective), and an END marker.
ASTRA-sim's resource rules apply to workload nodes only: per NPU one in-flight GPU COMP, one
in-flight GPU SEND-or-COLL (held from START to END, or until a SEND's data arrives) and one CPU
op; RECVs are unlimited; nodes inside a custom collective are never throttled. The engine issues
ready workload nodes per NPU in ascending node id (ASTRA-sim's ``Workload::issue_dep_free_nodes``).

Differences from ASTRA-sim (documented in docs/simulator.md): the k-th COMM_COLL of every rank
(in file order) is the same collective instance, and its messages are matched only within that
instance (ASTRA-sim shares one tag space, so concurrent collectives with equal tags and sizes
could cross-match); communicator groups (``pg_name``) are not supported.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..chakra import Algorithm, Collective, NodeType, Workload
from ..errors import SimulationError
from ._program import K_COMP, K_END, K_NOP, K_RECV, K_SEND, K_START, Program, _to_array, comp_ns

__all__ = ["program_from_workload"]

RES_COMP, RES_COMM, RES_CPU = 1, 2, 3


def program_from_workload(
    wl: Workload,
    algorithm_for: Callable[[Collective, int, int], Algorithm | None],
    npus: int,
    reduction_GBps: float | None = None,
) -> Program:
    """Flatten ``wl``; ``algorithm_for(collective, comm_size, ranks)`` returns a bound algorithm
    (or None for a BROADCAST replayed as its ``duration_micros``, like ASTRA-sim)."""
    nr = wl.rank_count
    if nr > npus:
        raise SimulationError(f"the workload has {nr} ranks but the topology has only {npus} NPUs",
                              hint="choose a topology with at least as many NPUs")
    kind: list[int] = []
    rank: list[int] = []
    peer: list[int] = []
    tagx: list[int] = []
    size: list[int] = []
    dur: list[int] = []
    lid: list[int] = []
    inst: list[int] = []
    acq: list[int] = []
    rel: list[int] = []
    edges: list[tuple[int, int]] = []  # (parent, child)
    labels: dict[int, str] = {}
    colls_per_rank: list[list[tuple[int, int]]] = []  # (comm_type, comm_size) per rank, file order

    def add(k: int, r: int, *, p: int = -1, tag: int = 0, sz: int = -1, d: int = 0, node_id: int = 0,
            instance: int = 0, a: int = 0, rl: int = 0) -> int:
        kind.append(k); rank.append(r); peer.append(p); tagx.append(tag); size.append(sz); dur.append(d)
        lid.append(node_id); inst.append(instance); acq.append(a); rel.append(rl)
        return len(kind) - 1

    for r, nodes in enumerate(wl.ranks):
        entry: dict[int, int] = {}  # workload node id -> engine node that starts it
        exit_: dict[int, int] = {}  # workload node id -> engine node whose completion ends it
        coll_k = 0
        colls: list[tuple[int, int]] = []
        for node in nodes:
            if node.id in entry:
                raise SimulationError(f"workload rank {r}: node id {node.id} appears twice")
            t = int(node.type)
            cpu = RES_CPU if node.is_cpu_op else 0
            if t == NodeType.COMP:
                dm = node.duration_micros  # comp_ns for one node without a size: µs x 1000, 0 -> 1 ns
                d = dm * 1000 if dm > 0 else 1
                res = cpu or RES_COMP
                g = add(K_COMP, r, d=d, node_id=node.id, a=res, rl=res)
                entry[node.id] = exit_[node.id] = g
            elif t in (NodeType.SEND, NodeType.RECV):
                is_send = t == NodeType.SEND
                other = node.comm_dst if is_send else node.comm_src
                if other is None or node.comm_size is None:
                    raise SimulationError(
                        f"workload rank {r} node {node.id}: {'SEND' if is_send else 'RECV'} without "
                        f"{'comm_dst' if is_send else 'comm_src'}/comm_size")
                if not 0 <= other < nr or other == r:
                    raise SimulationError(f"workload rank {r} node {node.id}: peer NPU {other} is not another rank")
                res = (cpu or RES_COMM) if is_send else 0
                g = add(K_SEND if is_send else K_RECV, r, p=other, tag=int(node.comm_tag or 0),
                        sz=int(node.comm_size), node_id=node.id, a=res, rl=res)
                entry[node.id] = exit_[node.id] = g
            elif t == NodeType.COLL:
                if node.is_cpu_op:
                    raise SimulationError(f"workload rank {r} node {node.id}: a COMM_COLL must have is_cpu_op = false")
                if node.pg_name not in ("", "0"):
                    raise SimulationError(
                        f"workload rank {r} node {node.id}: communicator group {node.pg_name!r} is not supported",
                        hint="hub.simulate runs collectives over all ranks; use the ASTRA-sim consumer for groups")
                coll = node.collective
                if coll is None or node.comm_size is None:
                    raise SimulationError(f"workload rank {r} node {node.id}: COMM_COLL without comm_type/comm_size")
                colls.append((int(node.comm_type or 0), int(node.comm_size)))
                alg = algorithm_for(coll, int(node.comm_size), nr)
                k = coll_k + 1
                coll_k += 1
                labels[k] = f"{coll.value}#{k - 1}"
                if alg is None:  # BROADCAST: replayed as a fixed duration (ASTRA-sim)
                    d = int(comp_ns(np.array([node.duration_micros]), np.array([-1]), None)[0])
                    g = add(K_COMP, r, d=d, node_id=node.id, a=RES_COMM, rl=RES_COMM)
                    entry[node.id] = exit_[node.id] = g
                    continue
                if alg.ranks != nr:
                    raise SimulationError(
                        f"workload rank {r} node {node.id}: the {coll.value} algorithm has {alg.ranks} ranks, "
                        f"the workload {nr}")
                s = add(K_START, r, node_id=node.id, instance=k, a=RES_COMM)
                graph = alg.graphs[r]
                base = len(kind)
                gk = graph.kind.tolist()
                gp = graph.peer.tolist()
                gt = graph.tag.tolist()
                gs = graph.size.tolist()
                gd = comp_ns(graph.duration, graph.size, reduction_GBps).tolist()
                gi = graph.ids.tolist()
                for pos in range(len(graph)):
                    kk = gk[pos]
                    ek = kk if kk in (K_SEND, K_RECV, K_COMP) else K_NOP
                    add(ek, r, p=gp[pos], tag=gt[pos] + (k << 32), sz=gs[pos],
                        d=gd[pos] if ek == K_COMP else 0, node_id=gi[pos], instance=k)
                has_succ = np.zeros(len(graph), dtype=bool)
                ptr, dep = graph.dep_ptr.tolist(), graph.dep_pos.tolist()
                for pos in range(len(graph)):
                    deps = dep[ptr[pos]:ptr[pos + 1]]
                    if not deps:
                        edges.append((s, base + pos))
                    for dpos in deps:
                        edges.append((base + dpos, base + pos))
                        has_succ[dpos] = True
                e = add(K_END, r, node_id=node.id, instance=k, rl=RES_COMM)
                sinks = np.flatnonzero(~has_succ).tolist() if len(graph) else []
                for pos in sinks:
                    edges.append((base + pos, e))
                if not sinks:
                    edges.append((s, e))
                entry[node.id], exit_[node.id] = s, e
            else:
                g = add(K_NOP, r, node_id=node.id)
                entry[node.id] = exit_[node.id] = g
        for node in nodes:
            for d in node.deps:
                if d not in exit_:
                    raise SimulationError(f"workload rank {r} node {node.id}: dependency {d} is not a node of this "
                                          "rank")
                edges.append((exit_[d], entry[node.id]))
        colls_per_rank.append(colls)

    first = colls_per_rank[0] if colls_per_rank else []
    for r, colls in enumerate(colls_per_rank):
        if len(colls) != len(first) or any(a[0] != b[0] for a, b in zip(colls, first, strict=False)):
            raise SimulationError(
                f"workload rank {r} issues collectives {[c[0] for c in colls]} (comm_type), rank 0 "
                f"{[c[0] for c in first]}", hint="every rank must list the same collectives in the same order")

    n = len(kind)
    karr = np.asarray(kind, dtype=np.int64)
    sarr = np.asarray(size, dtype=np.int64)
    comm = (karr == K_SEND) | (karr == K_RECV)
    if (comm & (sarr < 0)).any():
        g = int(np.argmax(comm & (sarr < 0)))
        raise SimulationError(f"workload rank {rank[g]}: node {lid[g]} has no message size")
    par = np.asarray([e[0] for e in edges], dtype=np.int64)
    chi = np.asarray([e[1] for e in edges], dtype=np.int64)
    indeg = np.bincount(chi, minlength=n) if chi.size else np.zeros(n, dtype=np.int64)
    order = np.lexsort((chi, par)) if par.size else np.zeros(0, dtype=np.int64)
    succ_ptr = np.zeros(n + 1, dtype=np.int64)
    if par.size:
        np.cumsum(np.bincount(par, minlength=n), out=succ_ptr[1:])
    sends = karr == K_SEND
    return Program(
        n=n,
        ranks=nr,
        kind=kind,
        rank=_to_array(np.asarray(rank), "i"),
        peer=_to_array(np.asarray(peer), "i"),
        tagx=_to_array(np.asarray(tagx, dtype=np.int64), "q"),
        size=_to_array(sarr, "q"),
        dur=_to_array(np.asarray(dur), "q"),
        succ_ptr=_to_array(succ_ptr, "q"),
        succ_idx=_to_array(chi[order] if chi.size else chi, "q"),
        indeg=indeg.tolist(),
        local_id=_to_array(np.asarray(lid), "q"),
        inst=_to_array(np.asarray(inst), "i"),
        acq=acq,
        rel=rel,
        labels=labels,
        messages=int(sends.sum()),
        bytes=int(sarr[sends].sum()),
    )
