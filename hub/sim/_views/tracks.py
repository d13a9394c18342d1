"""Track layout of the simulation trace: slices on one track never overlap; sends -> receives.

A rank issues many operations at once (channels, threadblocks, peers), so one thread per kind
(send / recv / comp) makes slices overlap, and Perfetto draws overlapping slices on one track
as nonsense. Here each rank's operations are grouped into streams (sends to one peer, receives
from one peer, computation) and each stream is split into as many lanes as it has operations in
flight at once (greedy interval partitioning: the fewest lanes for which no two slices on a lane
overlap). Message flows pair the k-th send from src to dst with tag t with the k-th receive on
dst from src with tag t, both in issue order: the order in which the engine matches them.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from dataclasses import dataclass, field

from .._engine.program import K_RECV, K_SEND, Program

__all__ = ["Tracks", "assign_tracks", "match_messages"]


@dataclass
class Tracks:
    """``tid[g]`` for every traced node ``g``; ``names[(rank, tid)]`` the track's label."""

    tid: dict[int, int] = field(default_factory=dict)
    names: dict[tuple[int, int], str] = field(default_factory=dict)


def _stream(prog: Program, g: int) -> tuple[int, int, str]:
    """(sort group, peer, label) of node g's stream: comp first, then sends, then receives."""
    k, peer = int(prog.kind[g]), int(prog.peer[g])  # numbers, not numpy scalars: they reach JSON
    if k == K_SEND:
        return (1, peer, f"send → {peer}")
    if k == K_RECV:
        return (2, peer, f"recv ← {peer}")
    return (0, 0, "comp")


def assign_tracks(prog: Program, start: list[int] | object, fin: list[int] | object, nodes: list[int]) -> Tracks:
    """Lanes per (rank, stream) such that the slices [start, fin) on one lane are disjoint."""
    streams: dict[tuple[int, tuple[int, int, str]], list[int]] = defaultdict(list)
    for g in nodes:
        streams[(int(prog.rank[g]), _stream(prog, g))].append(g)
    out = Tracks()
    next_tid: dict[int, int] = defaultdict(int)
    for (rank, (_, _, label)), members in sorted(streams.items(), key=lambda kv: (kv[0][0], kv[0][1][:2])):
        members.sort(key=lambda g: (start[g], fin[g], g))  # type: ignore[index]
        free: list[tuple[int, int]] = []  # (time the lane is free again, lane)
        lane_tid: list[int] = []
        for g in members:
            s, f = start[g], max(fin[g], start[g])  # type: ignore[index]
            if free and free[0][0] <= s:
                _, lane = heapq.heappop(free)
            else:
                lane = len(lane_tid)
                tid = next_tid[rank]
                next_tid[rank] += 1
                lane_tid.append(tid)
                out.names[(rank, tid)] = label if lane == 0 else f"{label} #{lane + 1}"
            out.tid[g] = lane_tid[lane]
            heapq.heappush(free, (f, lane))
    return out


def match_messages(prog: Program, start: list[int] | object, nodes: list[int]) -> list[tuple[int, int]]:
    """(send node, receive node) pairs, FIFO per (src, dst, tag) in issue order."""
    sends: dict[tuple[int, int, int], list[int]] = defaultdict(list)
    recvs: dict[tuple[int, int, int], list[int]] = defaultdict(list)
    for g in nodes:
        k = prog.kind[g]
        if k == K_SEND:
            sends[(prog.rank[g], prog.peer[g], prog.tagx[g])].append(g)
        elif k == K_RECV:
            recvs[(prog.peer[g], prog.rank[g], prog.tagx[g])].append(g)
    pairs: list[tuple[int, int]] = []
    for key, out in sends.items():
        into = recvs.get(key, [])
        order = lambda g: (start[g], g)  # type: ignore[index]  # noqa: E731
        pairs.extend(zip(sorted(out, key=order), sorted(into, key=order), strict=False))
    return pairs
