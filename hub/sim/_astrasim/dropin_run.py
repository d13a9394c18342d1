"""The drop-in's run (``hub.sim._astrasim.dropin``): a workload on hub.simulate's engine, and the lines
ASTRA-sim's workload layer prints for it.

Per rank (``Workload::report``, ``Statistics``; astra-sim ``518bd51``): every issued workload
node is an *operator*, typed GPU (a COMP, not a CPU op), CPU (a COMP on the CPU), COMM (a
COMM_COLL from its issue to its end on that rank, a SEND, a RECV; a replayed BROADCAST) or INVALID;

* ``finished, T cycles, exposed communication E cycles``: T = when the rank's last operator
  completed, E = T - the replayed durations of its GPU operators (``tics_gpu_ops``);
* ``Wall time`` = T; per type, the length of the union of its operators' [issue, end] intervals,
  in the order ``Statistics::report`` walks its ``std::unordered_map`` of types: the order in
  which each type first appears in the hash order of the operators' node ids (the map of types
  is filled from a map whose order is the reverse of insertion; both reversals cancel);
* ``Total compute-communication overlap`` = GPU + COMM - wall, when positive;
* a rank with operators other than GPU and COMM prints no statistics but ASTRA-sim's warning
  (``hub.sim._astrasim.refusals.overlap_types``).

Ranks finish in event order: the engine's completion sequence of their last operator.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...chakra import Algorithm, Collective, Workload
from ...errors import SimulationError
from ...workload import means_everyone
from .._engine.program import K_COMP, K_END, K_NOP, K_RECV, K_SEND, K_START

__all__ = ["Sim", "report_lines", "run_workload"]

_RES_COMP, _RES_COMM, _RES_CPU = 1, 2, 3  # as hub.sim._astrasim.workload


def _custom_pick(custom: Mapping[Collective, str]) -> Any:
    """ASTRA-sim's custom path: the collective's one ET prefix, read once, as written."""
    cache: dict[str, Algorithm] = {}

    def pick(coll: Collective, comm_size: int, ranks: int) -> Algorithm | None:
        prefix = custom.get(coll)
        if prefix is None:
            if coll == Collective.BROADCAST:
                return None  # replayed as its duration_micros
            raise SimulationError(
                f"no implementation for {coll.value} in the system configuration",
                hint=f'ASTRA-sim throws "No collective implementation found"; add "{coll.value}-implementation-custom"',
            )
        alg = cache.get(prefix)
        if alg is None:
            from ...chakra import check_algorithm, read_algorithm

            alg = read_algorithm(prefix)
            check_algorithm(alg, what=f"custom {coll.value} {prefix}")
            if not alg.is_bound:
                raise SimulationError(f"{prefix}: custom collective ETs without message sizes")
            cache[prefix] = alg
        return alg

    return pick


def run_workload(
    wl: Workload, topo: Any, mode: str, cfg: dict[str, Any], groups: Mapping[str, Sequence[int]] | None
) -> Sim:
    """Simulate ``wl`` served as ``cfg`` (a system.json) says; ranks that never finish stay
    unfinished (``fin`` -1), as in ASTRA-sim."""
    from .._engine.loop import run_engine
    from .._engine.network import network_model
    from .system import serve_from_system
    from .workload import program_from_workload

    sizes = tuple(d.npus for d in topo.dims)
    custom, native = serve_from_system(cfg, wl, len(sizes), frozenset(), dim_sizes=sizes)
    pick = _custom_pick(custom)
    delay, net = network_model(topo, mode)
    alg = _one_collective(wl, custom, pick, topo.npus)
    if alg is not None:
        from .._engine.program import program_from_algorithm

        prog = program_from_algorithm(alg)
        st = run_engine(prog, delay=delay, net=net, order=True, stuck_ok=True)
        return Sim(prog, st, topo.npus, _collective_ops(wl, prog, st))
    prog = program_from_workload(wl, pick, topo.npus, None, native=native, comm_groups=groups)
    st = run_engine(prog, delay=delay, net=net, order=True, stuck_ok=True)
    return Sim(prog, st, topo.npus, _operators(prog, st))


def _one_collective(wl: Workload, custom: Mapping[Collective, str], pick: Any, npus: int) -> Algorithm | None:
    """The microbenchmark shape (one COMM_COLL per NPU, over every NPU, served by a custom ET
    with a graph per NPU): its algorithm, run as ASTRA-sim's walker runs it (feeder order,
    ``hub.sim._engine.feeder``); None for any other workload."""
    from ...chakra import NodeType

    first = wl.ranks[0][0] if wl.ranks and wl.ranks[0] else None
    if first is None or first.collective not in custom or len(wl.ranks) != npus:
        return None
    for nodes in wl.ranks:
        if len(nodes) != 1:
            return None
        n = nodes[0]
        if n.type != NodeType.COLL or n.is_cpu_op or n.collective != first.collective or not means_everyone(n.pg_name):
            return None
    alg = pick(first.collective, int(first.comm_size or 0), npus)
    return alg if alg is not None and alg.ranks == npus else None


def _collective_ops(wl: Workload, prog: Any, st: Any) -> _Ops:
    """One COMM operator per rank, issued at 0, ending with the rank's last algorithm node."""
    n = wl.rank_count
    end, seq, done = st.rank_last(n)
    seq[done & (seq < 0)] = 0  # (a rank without algorithm nodes: done at once)
    seq[~done] = -1
    zeros = np.zeros(n, dtype=np.int64)
    node = np.asarray([nodes[0].id for nodes in wl.ranks], dtype=np.int64)
    return _Ops(
        np.arange(n, dtype=np.int32),
        node,
        np.full(n, 2, dtype=np.int8),
        zeros,
        end,
        seq,
        np.full(n, -1, dtype=np.int64),
        zeros,
        np.ones(n, dtype=np.int8),
    )


# -- the lines ------------------------------------------------------------------------------------
@dataclass
class _Ops:
    """The workload-level operators of every rank (program positions and their columns)."""

    rank: np.ndarray
    node: np.ndarray  # workload node id
    typ: np.ndarray  # 0 GPU, 1 CPU, 2 COMM, 3 INVALID
    start: np.ndarray
    end: np.ndarray
    seq: np.ndarray  # completion sequence of the operator's end (-1: not ended)
    issue_seq: np.ndarray  # completion sequence of its start marker (collectives), else -1
    gpu_ticks: np.ndarray
    holds: np.ndarray  # 0: no resource (RECV, INVALID), 1 GPU comm, 2 GPU comp, 3 CPU


@dataclass
class Sim:
    prog: Any
    state: Any
    npus: int
    ops: _Ops


_TYPE_NAMES = ("GPU", "CPU", "COMM", "INVALID")


def _operators(prog: Any, st: Any) -> _Ops:
    kind = prog.kind_array()
    inst = np.frombuffer(prog.inst, dtype=np.int32)
    top = np.flatnonzero((inst == 0) | (kind == K_START) | (kind == K_END))
    k = kind[top]
    rank = np.frombuffer(prog.rank, dtype=np.int32)[top]
    node = np.frombuffer(prog.local_id, dtype=np.int64)[top]
    acq = np.asarray(prog.acq, dtype=np.int64)[top] if prog.acq is not None else np.zeros(top.size, np.int64)
    dur = np.frombuffer(prog.dur, dtype=np.int64)[top]
    start = np.asarray(st.start, dtype=np.int64)[top]
    fin = np.asarray(st.fin, dtype=np.int64)[top]
    order = np.asarray(st.order, dtype=np.int64)[top]
    ends = k == K_END
    # a collective: START's issue and END's completion, paired by (rank, instance)
    ins = np.frombuffer(prog.inst, dtype=np.int32)[top]
    end_of = {(int(r), int(i)): j for j, (r, i) in enumerate(zip(rank[ends], ins[ends], strict=True))}
    end_pos = np.flatnonzero(ends)
    keep = ~ends
    end = fin.copy()
    seq = order.copy()
    issue_seq = np.full(top.size, -1, dtype=np.int64)
    for j in np.flatnonzero(k == K_START).tolist():
        e = end_pos[end_of[(int(rank[j]), int(ins[j]))]]
        end[j], seq[j] = fin[e], order[e]
        issue_seq[j] = order[j]
    comp = k == K_COMP
    typ = np.full(top.size, 2, dtype=np.int8)
    typ[comp & (acq == _RES_COMP)] = 0
    typ[comp & (acq == _RES_CPU)] = 1
    typ[k == K_NOP] = 3
    gpu_ticks = np.where(comp & (acq != _RES_CPU), dur, 0)
    holds = np.zeros(top.size, dtype=np.int8)
    holds[(k == K_START) | (k == K_SEND) | (comp & (acq == _RES_COMM))] = 1
    holds[comp & (acq == _RES_COMP)] = 2
    holds[comp & (acq == _RES_CPU)] = 3
    holds[(k == K_RECV) | (k == K_NOP)] = 0
    m = keep
    return _Ops(rank[m], node[m], typ[m], start[m], end[m], seq[m], issue_seq[m], gpu_ticks[m], holds[m])


def _union(starts: np.ndarray, ends: np.ndarray) -> int:
    """ASTRA-sim's ``_calculateTotalRuntimeFromIntervals``."""
    if starts.size == 0:
        return 0
    o = np.lexsort((ends, starts))
    total, ms, me = 0, int(starts[o[0]]), int(ends[o[0]])
    for s, e in zip(starts[o].tolist(), ends[o].tolist(), strict=True):
        if s <= me:
            me = max(me, e)
        else:
            total += me - ms
            ms, me = s, e
    return total + me - ms


def _type_order(node: np.ndarray, typ: np.ndarray, start: np.ndarray, issue_seq: np.ndarray) -> list[int]:
    """The types in the order ``Statistics::report`` prints them (module docstring)."""
    present = sorted(set(typ.tolist()))
    if len(present) < 2:
        return present
    from .._engine.feeder import FreeSet

    # issue order: by time, then ASTRA-sim's ascending node id within one issue pass
    o = np.lexsort((node, start))
    ids = node[o].tolist()
    walk = FreeSet().order(ids)
    seen: list[int] = []
    tt = typ[o].tolist()
    for i in walk:
        if tt[i] not in seen:
            seen.append(tt[i])
    return seen


def _rank_block(r: int, ops: _Ops, sel: np.ndarray) -> list[str]:
    from .refusals import overlap_types

    end = ops.end[sel]
    t = int(end.max())
    exposed = t - int(ops.gpu_ticks[sel].sum())
    out = [
        f"[workload] [info] sys[{r}] finished, {t} cycles, exposed communication {exposed} cycles.",
        f"[statistics] [info] sys[{r}]. Post statistics processing start.",
    ]
    typ, start = ops.typ[sel], ops.start[sel]
    order = _type_order(ops.node[sel], typ, start, ops.issue_seq[sel])
    why = overlap_types(_TYPE_NAMES[x] for x in order)
    if why:
        return [*out, f"[system] [critical] warning! a callable is removed before call {why}"]
    out.append(f"[statistics] [info] sys[{r}]. Post statistics processing end.")
    out.append(f"[statistics] [info] sys[{r}], Wall time: {t}")
    times = {x: _union(start[typ == x], end[typ == x]) for x in order}
    for x in order:
        label = {0: "GPU", 1: "CPU", 2: "Comm", 3: "Invalid"}[x]
        out.append(f"[statistics] [info] sys[{r}], {label} time: {times[x]}")
    if 0 in times and 2 in times:
        overlap = times[0] + times[2] - t
        if overlap > 0:
            out.append(f"[statistics] [info] sys[{r}], Total compute-communication overlap: {overlap}")
    return out


def report_lines(wl: Workload, sim: Sim, groups: Mapping[str, Sequence[int]] | None) -> list[str]:
    """Every line after the start-up ones, in ASTRA-sim's order (module docstring)."""
    ops = sim.ops
    events: list[tuple[int, list[str]]] = []
    unfinished: list[int] = []
    by_rank = np.argsort(ops.rank, kind="stable")
    bounds = np.searchsorted(ops.rank[by_rank], np.arange(sim.npus + 1))
    for r in range(sim.npus):
        sel = by_rank[bounds[r] : bounds[r + 1]]
        if sel.size == 0:
            continue
        if (ops.seq[sel] < 0).any():
            unfinished.append(r)
            continue
        events.append((int(ops.seq[sel].max()), _rank_block(r, ops, sel)))
    events.extend(_group_rings(wl, ops, sim.npus, groups))
    events.sort(key=lambda e: e[0])
    lines = [line for _, block in events for line in block]
    for r in unfinished:
        lines.extend(_unreleased(r, ops, by_rank[bounds[r] : bounds[r + 1]]))
    lines.append("[system] [warning] Exiting")
    return lines


def _unreleased(r: int, ops: _Ops, sel: np.ndarray) -> list[str]:
    """``HardwareResource::~HardwareResource`` of a rank that never finished."""
    held = sel[(ops.start[sel] >= 0) & (ops.seq[sel] < 0) & (ops.holds[sel] > 0)]
    if held.size == 0:
        return []
    out = [f"[HardwareResource] [critical] !!!Hardware Resource sys.id={r} has unreleased nodes!!!"]
    for h, label in ((3, "CPU node id"), (2, "GPU comp node id"), (1, "GPU comm node id")):
        out.extend(f"[HardwareResource] [critical] {label}: {int(n)}" for n in ops.node[held[ops.holds[held] == h]])
    return out


def _group_rings(
    wl: Workload, ops: _Ops, npus: int, groups: Mapping[str, Sequence[int]] | None
) -> list[tuple[int, list[str]]]:
    """``CommunicatorGroup::get_collective_plan``: an NPU's first collective of a type in a group
    smaller than the network logs its ring (declared member order)."""
    from ...chakra import NodeType
    from ...workload import declared_groups

    named = [n for nodes in wl.ranks for n in nodes if n.type == NodeType.COLL and not means_everyone(n.pg_name)]
    if not named:
        return []
    declared = {**declared_groups(wl), **{str(k): tuple(v) for k, v in (groups or {}).items()}}
    coll = {
        (r, n.id): (n.pg_name, n.comm_type)
        for r, nodes in enumerate(wl.ranks)
        for n in nodes
        if n.type == NodeType.COLL
    }
    seen: set[tuple[int, str, Any]] = set()
    out = []
    issued = np.flatnonzero(ops.issue_seq >= 0)
    for j in issued[np.argsort(ops.issue_seq[issued])].tolist():
        r, nid = int(ops.rank[j]), int(ops.node[j])
        pg, ct = coll.get((r, nid), ("", None))
        members = declared.get(pg) if not means_everyone(pg) else None
        if not members or len(members) == npus or (r, pg, ct) in seen:
            continue
        seen.add((r, pg, ct))
        n = len(members)
        out.append(
            (
                int(ops.issue_seq[j]),
                [
                    f"[system::topology::RingTopology] [info] custom ring, id: {r}, dimension: local total nodes "
                    f"in ring: {n} index in ring: {list(members).index(r)} total nodes in ring {n}"
                ],
            )
        )
    return out
