"""A CPU run of the replay's execution rules over all ranks at once, in rounds.

Round r: every rank runs what it can locally (COMP nodes, commits of arrived receives) until
nothing more is ready, then issues its ready SENDs (in connection order); those messages arrive
at the end of the round. The rounds are the NCCL schedule (one ``batch_isend_irecv`` group per
rank and round, holding its round's sends and the receives matching its peers' sends, so both
ends of every message are in the same group and no rank can block its peer). If the run gets
stuck, the replay would hang: the pre-flight refuses the algorithm, naming the waiting nodes.
"""

from __future__ import annotations

from ._plan import RECV_COPY, RECV_REDUCE, SEND, Plan

__all__ = ["schedule"]


def schedule(plan: Plan) -> list[str]:
    """Fill ``rounds`` of every rank plan; return the problems (empty when every node runs)."""
    rps = plan.ranks_plan
    where: dict[int, tuple[int, int]] = {}  # message -> (receiving rank, recv position)
    for rp in rps:
        for v, k in enumerate(rp.kind):
            if k in (RECV_COPY, RECV_REDUCE) and rp.msg[v] >= 0:
                where[rp.msg[v]] = (rp.rank, v)
    left = [[len(d) for d in rp.deps] for rp in rps]
    done = [[False] * len(rp) for rp in rps]
    issued = [[False] * len(rp) for rp in rps]
    arrived = [[False] * len(rp) for rp in rps]
    ready = [[v for v in range(len(rp)) if left[r][v] == 0] for r, rp in enumerate(rps)]
    remaining = sum(len(rp) for rp in rps)
    for rp in rps:
        rp.rounds = []

    def finish(r: int, v: int) -> None:
        nonlocal remaining
        done[r][v] = True
        remaining -= 1
        for s in rps[r].succ[v]:
            left[r][s] -= 1
            if left[r][s] == 0:
                ready[r].append(s)

    while remaining:
        groups: list[list[int]] = [[] for _ in rps]
        progress = False
        for r, rp in enumerate(rps):
            local: list[int] = []
            waiting: list[int] = []
            while ready[r]:
                v = ready[r].pop(0)
                if done[r][v] or v in waiting:
                    continue
                k = rp.kind[v]
                if k == SEND:
                    waiting.append(v)
                elif k in (RECV_COPY, RECV_REDUCE) and not arrived[r][v]:
                    waiting.append(v)
                else:
                    local.append(v)
                    finish(r, v)
            # sends in connection order; a send whose predecessor is not issued waits
            again = True
            while again:
                again = False
                for v in list(waiting):
                    if rp.kind[v] == SEND and not issued[r][v] and (rp.conn_prev[v] < 0 or issued[r][rp.conn_prev[v]]):
                        issued[r][v] = True
                        groups[r].append(v)
                        again = True
            ready[r] = [v for v in waiting if not issued[r][v]]
            rp.rounds.append((local, []))
            progress = progress or bool(local)
        for r, rp in enumerate(rps):
            for v in groups[r]:
                m = rp.msg[v]
                if m in where:
                    q, w = where[m]
                    rps[q].rounds[-1][1].append(w)
                    arrived[q][w] = True
                    if left[q][w] == 0 and not done[q][w]:
                        ready[q].append(w)
                rp.rounds[-1][1].append(v)
            for v in groups[r]:
                finish(r, v)
            progress = progress or bool(groups[r])
        for rp in rps:  # both ends order a group by message, so NCCL's issue order agrees
            rp.rounds[-1][1].sort(key=rp.msg.__getitem__)
        if not progress:
            return _stuck(plan, done, issued, arrived)
    for rp in rps:  # drop empty trailing rounds
        while rp.rounds and not rp.rounds[-1][0] and not rp.rounds[-1][1]:
            rp.rounds.pop()
    return []


def _stuck(plan: Plan, done: list[list[bool]], issued: list[list[bool]], arrived: list[list[bool]]) -> list[str]:
    out: list[str] = []
    for r, rp in enumerate(plan.ranks_plan):
        for v in range(len(rp)):
            if done[r][v]:
                continue
            blocked = [d for d in rp.deps[v] if not done[r][d]]
            k = rp.kind[v]
            if k in (RECV_COPY, RECV_REDUCE) and not arrived[r][v]:
                why = "its message is never sent"
            elif k == SEND and rp.conn_prev[v] >= 0 and not issued[r][rp.conn_prev[v]]:
                why = f"the earlier send on its connection, {rp.describe(rp.conn_prev[v])}, never runs"
            elif blocked:
                why = f"it waits for {rp.describe(blocked[0])}"
            else:
                why = "it never becomes ready"
            if not blocked or k in (RECV_COPY, RECV_REDUCE):
                out.append(f"rank {r} {rp.describe(v)} waits forever: {why}")
    return out or ["the replay would stop making progress"]
