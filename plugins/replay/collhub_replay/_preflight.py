"""Checks on the CPU before any rank process starts.

gloo aborts the whole process (``gloo::EnforceNotMet`` -> ``terminate``) when a receive buffer
does not match the message, and a deadlock costs a full timeout. So, before launch: the
verifier's structure and progress levels, the byte count of every message on both ends for
every size and dtype to be run, and a dry run of the replay's own execution rules.
"""

from __future__ import annotations

from hub.chakra import Algorithm
from hub.errors import DeadlockError, Problem, StructureError

from ._geometry import geometry
from ._plan import SEND, Plan, build_plan
from ._schedule import schedule

__all__ = ["preflight"]

_MAX_LISTED = 8


def _verify(alg: Algorithm) -> None:
    from hub.verify import verify

    rep = verify(alg, level="progress")
    if rep.ok:
        return
    cls = StructureError if rep.failed_level == "structure" else DeadlockError
    first = rep.problems[0] if rep.problems else None
    where = (
        f" (rank {first.rank} node {first.node}: {first.message})"
        if first and first.rank is not None
        else (f" ({first.message})" if first else "")
    )
    raise cls(
        f"pre-flight: {alg.name or 'algorithm'} fails the {rep.failed_level} check{where}; nothing was launched",
        problems=rep.problems,
        hint="`collhub verify` lists every finding",
    )


def _bytes(plan: Plan, sizes: list[int], dtype: str) -> None:
    """Sender and receiver of every message agree on its bytes, and both fit their memory."""
    recv_of: dict[int, tuple[int, int]] = {}
    for rp in plan.ranks_plan:
        for v, m in enumerate(rp.msg):
            if m >= 0 and rp.kind[v] != SEND:
                recv_of[m] = (rp.rank, v)
    for size in sizes:
        geo = geometry(plan, size, dtype)
        problems: list[Problem] = []
        for rp in plan.ranks_plan:
            limit = rp.layout.size
            for v, k in enumerate(rp.kind):
                if k == SEND:
                    m = rp.msg[v]
                    if m < 0 or m not in recv_of:
                        problems.append(
                            Problem("structure", f"{rp.describe(v)} has no matching receive", rp.rank, rp.ids[v])
                        )
                        continue
                    q, w = recv_of[m]
                    peer = plan.ranks_plan[q]
                    sent, got = rp.cnt[v] * geo.chunk * geo.esize, peer.cnt[w] * geo.chunk * geo.esize
                    if sent != got:
                        problems.append(
                            Problem(
                                "structure",
                                f"{rp.describe(v)} sends {sent} B but rank {q} {peer.describe(w)} receives {got} B",
                                rp.rank,
                                rp.ids[v],
                            )
                        )
                for start in (rp.src[v], rp.dst[v]):
                    if start >= 0 and start + rp.cnt[v] > limit:
                        problems.append(
                            Problem(
                                "structure",
                                f"{rp.describe(v)} reaches chunk {start + rp.cnt[v]} of a {limit}-chunk memory",
                                rp.rank,
                                rp.ids[v],
                            )
                        )
        if problems:
            raise StructureError(
                f"pre-flight at size {size} B ({dtype}): {problems[0].message}"
                + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else "")
                + "; nothing was launched",
                problems=problems[:_MAX_LISTED],
                hint="gloo would abort the process on a size mismatch",
            )


def preflight(alg: Algorithm, sizes: list[int], dtype: str, *, verify: bool = True) -> Plan:
    """The replay plan of ``alg`` after every pre-flight check passed (``verify=False`` skips
    the verifier and the dry run, leaving deadlocks to the runtime watchdog: for testing it)."""
    if verify:
        _verify(alg)
    plan = build_plan(alg)
    _bytes(plan, sizes, dtype)
    stuck = schedule(plan)
    if stuck and verify:
        raise DeadlockError(
            f"pre-flight: the replay of {plan.name} would hang: {stuck[0]}"
            + (f" (and {len(stuck) - 1} more)" if len(stuck) > 1 else "")
            + "; nothing was launched",
            problems=[Problem("progress", s) for s in stuck[:_MAX_LISTED]],
            hint="a receive waits for a send that can only run after it",
        )
    return plan
