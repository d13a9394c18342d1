"""Schedules: the greedy warm start, the ordering heuristic (stage 2) and exact timing (stage 3).

A :class:`Schedule` is a set of transfers (chunk, logical edge, start, arrival) in integer ns.
Timing is exact for the model of :mod:`._problem`: a transfer starts once its chunk has arrived
at the edge's source and every resource of the edge is free; it holds the resources ``hold`` ns
and arrives ``arrive`` ns after its start. For fixed routes and a fixed order per resource the
earliest start times are the optimum of the fixed-order LP (a longest-path problem on the DAG
of data and resource precedences), which :func:`timed` computes directly.
"""

from __future__ import annotations

import heapq
import random
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from ._problem import Problem

__all__ = ["Prepared", "Schedule", "Transfer", "greedy", "list_schedule", "timed"]


@dataclass(frozen=True)
class Transfer:
    chunk: int
    edge: int
    start: int
    end: int


@dataclass
class Schedule:
    transfers: list[Transfer]
    makespan: int
    origin: str  # "greedy" or "milp" (stages 1-3)

    def routes(self, nchunks: int) -> list[list[int]]:
        out: list[list[int]] = [[] for _ in range(nchunks)]
        for t in self.transfers:
            out[t.chunk].append(t.edge)
        return out


def _makespan(transfers: Sequence[Transfer]) -> int:
    return max((t.end for t in transfers), default=0)


def greedy(problem: Problem, dags: Sequence[Sequence[int]] | None, seed: int) -> Schedule:
    """TACOS-style link-chunk matching: repeatedly start the (chunk, edge) transfer that arrives
    earliest at a rank still missing the chunk. With ``dags`` the chunks stay on their
    shortest-path DAGs (so the result is a feasible stage-1 point); all-to-all chunks always do,
    and travel one path (a relay forwards each chunk once)."""
    rng = random.Random(seed)
    edges = problem.edges
    free = [0] * len(problem.resources)
    path_only = problem.collective == "alltoall"
    if path_only and dags is None:
        dags = [problem.dag(ch) for ch in problem.chunks]
    allowed = [set(d) for d in dags] if dags is not None else None
    have: list[dict[int, int]] = [{ch.src: 0} for ch in problem.chunks]
    heap: list[tuple[int, float, int, int]] = []

    def push(k: int, u: int) -> None:
        at = have[k][u]
        for ei in problem.out_edges[u]:
            e = edges[ei]
            if e.dst in have[k] or (allowed is not None and ei not in allowed[k]):
                continue
            if allowed is None and not problem.allowed(problem.chunks[k], ei):
                continue
            est = max([at, *(free[r] for r in e.resources)])
            heapq.heappush(heap, (est + e.arrive, rng.random(), k, ei))

    for ch in problem.chunks:
        push(ch.id, ch.src)
    out: list[Transfer] = []
    forwarded: set[tuple[int, int]] = set()
    while heap:
        key, tie, k, ei = heapq.heappop(heap)
        e = edges[ei]
        if e.dst in have[k] or (path_only and (k, e.src) in forwarded):
            continue
        est = max([have[k][e.src], *(free[r] for r in e.resources)])
        if est + e.arrive > key:
            heapq.heappush(heap, (est + e.arrive, tie, k, ei))
            continue
        for r in e.resources:
            free[r] = est + e.hold
        have[k][e.dst] = est + e.arrive
        forwarded.add((k, e.src))
        out.append(Transfer(k, ei, est, est + e.arrive))
        push(k, e.dst)
    missing = [(ch.id, d) for ch in problem.chunks for d in ch.dests if d not in have[ch.id]]
    if missing:
        k, d = missing[0]
        raise ValueError(f"chunk {k} (from rank {problem.chunks[k].src}) cannot reach rank {d}")
    return Schedule(out, _makespan(out), "greedy")


def _tree(
    problem: Problem, routes: Sequence[Sequence[int]]
) -> tuple[list[tuple[int, int]], list[int], list[list[int]]]:
    """Transfers (chunk, edge) of ``routes``, each one's predecessor (-1 at the source) and children."""
    items: list[tuple[int, int]] = []
    into: dict[tuple[int, int], int] = {}
    for k, route in enumerate(routes):
        for ei in route:
            into[(k, problem.edges[ei].dst)] = len(items)
            items.append((k, ei))
    pred = [into.get((k, problem.edges[ei].src), -1) for k, ei in items]
    kids: list[list[int]] = [[] for _ in items]
    for t, p in enumerate(pred):
        if p >= 0:
            kids[p].append(t)
    return items, pred, kids


class Prepared:
    """The transfers of fixed routes, their tree links and critical-path priorities (computed once
    for all restarts)."""

    def __init__(self, problem: Problem, routes: Sequence[Sequence[int]]) -> None:
        self.problem = problem
        self.items, self.pred, self.kids = _tree(problem, routes)
        depth = [0] * len(self.items)
        for t in range(len(self.items)):  # parents come first within a chunk's BFS-ordered route
            depth[t] = _depth(t, self.pred)
        rem = [0.0] * len(self.items)
        for t in sorted(range(len(self.items)), key=depth.__getitem__, reverse=True):
            e = problem.edges[self.items[t][1]]
            rem[t] = e.arrive + max((rem[c] for c in self.kids[t]), default=0.0)
        self.rem = rem


def list_schedule(
    problem: Problem,
    routes: Sequence[Sequence[int]] | Prepared,
    *,
    seed: int = 0,
    noise: float = 0.0,
    origin: str = "milp",
) -> Schedule:
    """Stage 2: order the transfers of fixed routes on every resource and time them exactly.

    Non-delay list scheduling: among the transfers whose chunk is present, start the one that
    can start earliest; ties go to (with ``enforce_ordering``) a relay's own chunks, then to the
    longest remaining path below the transfer (critical path first), then to a seeded random key.
    ``noise`` perturbs the remaining-path priorities multiplicatively (for restarts)."""
    rng = random.Random(seed)
    edges = problem.edges
    prep = routes if isinstance(routes, Prepared) else Prepared(problem, routes)
    items, pred, kids = prep.items, prep.pred, prep.kids
    rem = [r * (1.0 + noise * rng.random()) for r in prep.rem] if noise else prep.rem
    relay = problem.relay

    def own(t: int) -> int:
        k, ei = items[t]
        e = edges[ei]
        if relay is None or not relay.enforce_ordering or not e.remote:
            return 0
        return 0 if problem.chunks[k].src == relay.sender(e) else 1

    free = [0] * len(problem.resources)
    ready = [0] * len(items)
    heap: list[tuple[int, int, float, float, int]] = []
    for t, p in enumerate(pred):
        if p < 0:
            heapq.heappush(heap, (0, own(t), -rem[t], rng.random(), t))
    start = [0] * len(items)
    while heap:
        est, o, r, tie, t = heapq.heappop(heap)
        res = edges[items[t][1]].resources
        now = ready[t]
        for x in res:
            if free[x] > now:
                now = free[x]
        if now > est:
            heapq.heappush(heap, (now, o, r, tie, t))
            continue
        e = edges[items[t][1]]
        start[t] = now
        for x in res:
            free[x] = now + e.hold
        for c in kids[t]:
            ready[c] = now + e.arrive
            heapq.heappush(heap, (ready[c], own(c), -rem[c], rng.random(), c))
    out = [Transfer(k, ei, start[t], start[t] + edges[ei].arrive) for t, (k, ei) in enumerate(items)]
    return Schedule(out, _makespan(out), origin)


def _depth(t: int, pred: Sequence[int]) -> int:
    d = 0
    while pred[t] >= 0:
        t = pred[t]
        d += 1
    return d


def timed(problem: Problem, schedule: Schedule) -> Schedule:
    """Stage 3: re-time a schedule exactly for its routes and its per-resource orders.

    The orders are those of the schedule's start times; every transfer then starts at the
    earliest time its data and its resources allow (the fixed-order LP optimum), so the result
    is never later than the input and is feasible under real serialization."""
    edges = problem.edges
    items = sorted(range(len(schedule.transfers)), key=lambda i: (schedule.transfers[i].start, i))
    arrival: dict[tuple[int, int], int] = {}
    free: dict[int, int] = defaultdict(int)
    out: list[Transfer] = [schedule.transfers[0]] * len(schedule.transfers) if schedule.transfers else []
    srcs = {ch.id: ch.src for ch in problem.chunks}
    for i in items:
        t = schedule.transfers[i]
        e = edges[t.edge]
        at = 0 if srcs[t.chunk] == e.src else arrival[(t.chunk, e.src)]
        s = max([at, *(free[x] for x in e.resources)])
        for x in e.resources:
            free[x] = s + e.hold
        arrival[(t.chunk, e.dst)] = s + e.arrive
        out[i] = Transfer(t.chunk, t.edge, s, s + e.arrive)
    return Schedule(out, _makespan(out), schedule.origin)
