"""Schedules to :class:`~hub.chakra.Algorithm` objects in the collective profile.

Every transfer becomes one SEND on the sender and one RECV on the receiver with a tag of its
own (so matching never depends on timing). A SEND depends on the RECV that brought its chunk
(or, reducing, on the last reduction of that chunk); nothing else, so a simulator runs the
schedule as fast as the data allows. Nodes are laid out on each rank in schedule-time order,
which makes every dependency point to an earlier node and puts simultaneous SENDs in the order
the schedule chose.

* all-gather: in place, in the output (chunk ``src*c + j``);
* all-to-all: input block ``d*c + j`` of rank s lands in output block ``s*c + j`` of rank d;
  relays keep chunks in scratch;
* reduce-scatter: the reversal of an all-gather schedule on the transposed network; partial
  sums reduce in place in the input (one chained REDUCE per incoming partial, then a
  cost-only COMP), rank r ends with block r;
* all-reduce: that reduce-scatter, then an all-gather of the reduced blocks in the input.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from hub.chakra import Algorithm, AlgorithmMeta, Buffer, Collective, Op, RankGraphBuilder, build_algorithm

from ._problem import Problem
from ._schedule import Schedule

__all__ = ["build"]

Key = tuple[Any, ...]


class _Plan:
    """Per-rank node lists, sorted by (phase, time, kind) before they are emitted."""

    def __init__(self, ranks: int) -> None:
        self.events: list[
            list[tuple[tuple[int, int, int, int], Key, Callable[[RankGraphBuilder, list[int]], int], list[Key]]]
        ] = [[] for _ in range(ranks)]
        self._seq = 0
        self._queues: dict[tuple[int, int], list[tuple[tuple[int, int, int, int], list[Key]]]] = {}

    def add(
        self,
        rank: int,
        when: tuple[int, int, int],
        key: Key,
        emit: Callable[[RankGraphBuilder, list[int]], int],
        deps: list[Key],
        queue: int | None = None,
    ) -> None:
        """``queue``: the first link of a SEND; SENDs on one link keep the schedule's order."""
        self._seq += 1
        deps = list(deps)
        self.events[rank].append(((*when, self._seq), key, emit, deps))
        if queue is not None:
            self._queues.setdefault((rank, queue), []).append(((*when, self._seq), deps))

    def _order_queues(self) -> None:
        # A simulator queues SENDs on a link in the order they become ready. A SEND that the
        # schedule puts after another on the same link also waits for that one's data (which
        # is there no later than the earlier SEND's start), so simultaneous readiness resolves
        # to the earlier SEND first (it comes first on the rank) and nothing is delayed.
        for sends in self._queues.values():
            sends.sort(key=lambda s: s[0])
            for (_w, before), (_w2, after) in zip(sends, sends[1:], strict=False):
                own = list(after)
                after.extend(d for d in before if d not in own)

    def builders(self, queued: bool = True) -> list[RankGraphBuilder]:
        if queued:
            self._order_queues()
        out = []
        for r, evs in enumerate(self.events):
            b = RankGraphBuilder(r)
            pos: dict[Key, int] = {}
            for _when, key, emit, deps in sorted(evs, key=lambda ev: ev[0]):
                missing = [d for d in deps if d not in pos]
                if missing:  # pragma: no cover - guards the schedule construction itself
                    raise AssertionError(f"rank {r}: node {key} depends on {missing[0]}, not yet emitted")
                pos[key] = emit(b, [pos[d] for d in deps])
            out.append(b)
        return out


def _send(peer: int, buf: Buffer, off: int, tag: int) -> Callable[[RankGraphBuilder, list[int]], int]:
    return lambda b, deps: b.send(peer, src=(buf, off), tag=tag, deps=deps)


def _recv(peer: int, buf: Buffer, off: int, tag: int, op: Op = Op.COPY) -> Callable[[RankGraphBuilder, list[int]], int]:
    return lambda b, deps: b.recv(peer, dst=(buf, off), op=op, tag=tag, deps=deps)


def _allgather(
    plan: _Plan,
    problem: Problem,
    sched: Schedule,
    buf: Buffer,
    *,
    phase: int,
    tag0: int,
    shift: int = 0,
    start_deps: Callable[[int, int], list[Key]] | None = None,
    recv_deps: Callable[[int, int], list[Key]] | None = None,
) -> None:
    c = problem.chunks_per_rank
    for i, t in enumerate(sched.transfers):
        ch = problem.chunks[t.chunk]
        e = problem.edges[t.edge]
        off = ch.src * c + ch.index
        tag = tag0 + i
        deps = [("ag", ch.id, e.src)] if e.src != ch.src else (start_deps(ch.id, e.src) if start_deps else [])
        plan.add(e.src, (phase, shift + t.start, 1), ("ags", i), _send(e.dst, buf, off, tag), deps, e.resources[0])
        rdeps = recv_deps(ch.id, e.dst) if recv_deps else []
        plan.add(e.dst, (phase, shift + t.end, 0), ("ag", ch.id, e.dst), _recv(e.src, buf, off, tag), rdeps)


def _reduce_scatter(
    plan: _Plan, problem_t: Problem, sched_t: Schedule, *, phase: int, tag0: int, reduction_comp: bool
) -> dict[tuple[int, int], list[Key]]:
    """Reverse ``sched_t`` (an all-gather on the transposed network); returns, per (chunk, rank),
    the keys after which that rank's copy of the chunk is final (reduced) for later phases."""
    c = problem_t.chunks_per_rank
    T = sched_t.makespan
    incoming: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for i, t in enumerate(sched_t.transfers):
        e = problem_t.edges[t.edge]
        # transposed edge a -> b is the real edge b -> a: b sends its partial to a at T - end
        incoming.setdefault((t.chunk, e.src), []).append((T - t.start, i))
    ready: dict[tuple[int, int], list[Key]] = {}
    for (k, a), arrivals in incoming.items():
        ch = problem_t.chunks[k]
        off = ch.src * c + ch.index
        prev: list[Key] = []
        for n, (when, i) in enumerate(sorted(arrivals)):
            t = sched_t.transfers[i]
            b = problem_t.edges[t.edge].dst
            key = ("red", k, a, n)
            plan.add(a, (phase, when, 0), key, _recv(b, Buffer.INPUT, off, tag0 + i, Op.REDUCE), prev)
            prev = [key]
            if reduction_comp:
                ckey = ("cost", k, a, n)
                plan.add(a, (phase, when, 0), ckey, lambda bld, deps: bld.comp(Op.NONE, count=1, deps=deps), prev)
                prev = [ckey]
        ready[(k, a)] = prev
    for i, t in enumerate(sched_t.transfers):
        e = problem_t.edges[t.edge]
        k, b, a = t.chunk, e.dst, e.src
        ch = problem_t.chunks[k]
        plan.add(
            b,
            (phase, T - t.end, 1),
            ("rss", k, b),
            _send(a, Buffer.INPUT, ch.src * c + ch.index, tag0 + i),
            ready.get((k, b), []),
            problem_t.edges[t.edge].resources[0],
        )
    return ready


def _own_copy(r: int, c: int) -> Callable[[RankGraphBuilder, list[int]], int]:
    """Emits rank ``r``'s own block, copied from its input to its output."""
    return lambda b, deps: b.comp(Op.COPY, src=(Buffer.INPUT, r * c), dst=(Buffer.OUTPUT, r * c), count=c)


def _alltoall(plan: _Plan, problem: Problem, sched: Schedule) -> int:
    c, p = problem.chunks_per_rank, problem.ranks
    slots = [0] * p
    slot_of: dict[tuple[int, int], int] = {}
    for r in range(p):
        plan.add(r, (0, -1, 0), ("own", r), _own_copy(r, c), [])
    # in time order, so that a relay's landing slot is known before it forwards the chunk
    for i in sorted(range(len(sched.transfers)), key=lambda i: (sched.transfers[i].start, i)):
        t = sched.transfers[i]
        ch = problem.chunks[t.chunk]
        e = problem.edges[t.edge]
        if e.src == ch.src:
            src_buf, src_off, deps = Buffer.INPUT, ch.dst * c + ch.index, []
        else:
            src_buf, src_off, deps = Buffer.SCRATCH, slot_of[(ch.id, e.src)], [("a2a", ch.id, e.src)]
        plan.add(e.src, (0, t.start, 1), ("a2as", i), _send(e.dst, src_buf, src_off, i), deps, e.resources[0])
        if e.dst == ch.dst:
            dst_buf, dst_off = Buffer.OUTPUT, ch.src * c + ch.index
        else:
            dst_buf, dst_off = Buffer.SCRATCH, slots[e.dst]
            slot_of[(ch.id, e.dst)] = slots[e.dst]
            slots[e.dst] += 1
        plan.add(e.dst, (0, t.end, 0), ("a2a", ch.id, e.dst), _recv(e.src, dst_buf, dst_off, i), [])
    return max(slots)


def build(
    collective: str,
    problem: Problem,
    sched: Schedule | None,
    problem_t: Problem | None,
    sched_t: Schedule | None,
    meta: AlgorithmMeta,
    *,
    reduction_comp: bool = True,
    queued: bool = True,
) -> Algorithm:
    """The algorithm of ``collective`` from the schedules (``*_t``: on the transposed network).

    ``queued``: a SEND also waits for the data of the SEND before it on the same link (the
    schedule's link order, unless simultaneous releases swap it); false: only for its own data."""
    p, c = problem.ranks, problem.chunks_per_rank
    plan = _Plan(p)
    if collective == "allgather":
        assert sched is not None
        _allgather(plan, problem, sched, Buffer.OUTPUT, phase=0, tag0=0)
        meta = replace(meta, collective=Collective.ALLGATHER, in_chunks=c, out_chunks=p * c, inplace=True)
    elif collective == "alltoall":
        assert sched is not None
        scratch = _alltoall(plan, problem, sched)
        meta = replace(
            meta,
            collective=Collective.ALLTOALL,
            in_chunks=p * c,
            out_chunks=p * c,
            inplace=False,
            scratch_chunks=scratch,
        )
    elif collective == "reducescatter":
        assert problem_t is not None and sched_t is not None
        _reduce_scatter(plan, problem_t, sched_t, phase=0, tag0=0, reduction_comp=reduction_comp)
        meta = replace(meta, collective=Collective.REDUCESCATTER, in_chunks=p * c, out_chunks=c, inplace=True)
    else:  # allreduce
        assert problem_t is not None and sched_t is not None and sched is not None
        ready = _reduce_scatter(plan, problem_t, sched_t, phase=0, tag0=0, reduction_comp=reduction_comp)
        _allgather(
            plan,
            problem,
            sched,
            Buffer.INPUT,
            phase=1,
            tag0=len(sched_t.transfers),
            start_deps=lambda k, r: ready.get((k, r), []),
            # the landing slot still holds this rank's partial until it has sent it
            recv_deps=lambda k, r: [("rss", k, r)],
        )
        meta = replace(meta, collective=Collective.ALLREDUCE, in_chunks=p * c, out_chunks=p * c, inplace=True)
    return build_algorithm(meta, plan.builders(queued))
