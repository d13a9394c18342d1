"""The collective instances of a workload, checked, and the algorithm serving each.

The k-th COMM_COLL node of a process group on each of its member ranks is one collective
instance: every member must list the same kinds and sizes in the same order. Groups come from the
METADATA node as ASTRA-sim reads them (``_groups.py`` states who belongs to which). Every bad
input is collected before anything is built and reported at once
(:class:`hub.errors.VerificationError`, exit 3), each problem with rank and node. Shared by
``hub.inline``/``hub.overlap`` and ``hub.simulate``'s COMM_COLL path.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..chakra import Algorithm, Collective, NodeType, Workload, WorkloadNode
from ..errors import Problem, VerificationError
from ._groups import EVERYONE, declared_groups, means_everyone

__all__ = ["CollectiveInstance", "collective_instances", "plan_collectives"]


@dataclass
class CollectiveInstance:
    """One collective: kind, size, group (algorithm rank k = ``group[k]``) and each member's node."""

    coll: Collective
    size: int
    group: tuple[int, ...]
    nodes: dict[int, WorkloadNode] = field(default_factory=dict)  # rank -> its COMM_COLL node


class Selection(Protocol):
    """Which collectives to take (:class:`hub.workload.InlineParams` is one); None in a field: all."""

    @property
    def kinds(self) -> list[str] | None: ...
    @property
    def min_size(self) -> int | None: ...
    @property
    def max_size(self) -> int | None: ...
    @property
    def groups(self) -> list[str] | None: ...


def _wanted(node: WorkloadNode, p: Selection | None) -> bool:
    if p is None:
        return True
    coll = node.collective
    if p.kinds is not None and (coll is None or coll not in {Collective.parse(k) for k in p.kinds}):
        return False
    size = node.comm_size if node.comm_size is not None else -1
    if p.min_size is not None and size < p.min_size:
        return False
    if p.max_size is not None and size > p.max_size:
        return False
    return (
        p.groups is None
        or node.pg_name in p.groups
        or (means_everyone(node.pg_name) and bool(EVERYONE & set(p.groups)))
    )


def _kind(n: WorkloadNode) -> str:
    return n.collective.value if n.collective is not None else f"comm_type {n.comm_type}"


def collective_instances(
    wl: Workload,
    p: Selection | None,
    problems: list[Problem],
    comm_groups: Mapping[str, Sequence[int]] | None = None,
) -> list[CollectiveInstance]:
    """``comm_groups``: groups declared outside the workload (ASTRA-sim's
    ``--comm-group-configuration``), next to those of its METADATA node."""
    groups = declared_groups(wl)
    for name, members in (comm_groups or {}).items():
        groups[str(name)] = tuple(int(m) for m in members)
    seqs: dict[str, dict[int, list[WorkloadNode]]] = {}
    for rank, nodes in enumerate(wl.ranks):
        for n in nodes:
            if n.type != NodeType.COLL or not _wanted(n, p):
                continue
            if n.comm_size is None:
                problems.append(Problem("structure", "COMM_COLL node without comm_size", rank, n.id))
                continue
            if n.collective is None or n.collective is Collective.CUSTOM:
                problems.append(
                    Problem("structure", f"COMM_COLL node with unknown comm_type {n.comm_type}", rank, n.id)
                )
                continue
            group = groups.get(n.pg_name)
            if group is None:
                problems.append(
                    Problem(
                        "structure",
                        f"process group {n.pg_name!r} is not declared (no METADATA node names it)",
                        rank,
                        n.id,
                    )
                )
                continue
            absent = [m for m in group if not 0 <= m < wl.rank_count]
            if absent:
                problems.append(
                    Problem(
                        "structure",
                        f"process group {n.pg_name!r} names absent ranks {absent} (the workload has {wl.rank_count})",
                        rank,
                        n.id,
                    )
                )
                continue
            if rank not in group:
                problems.append(
                    Problem("structure", f"rank {rank} is not a member of process group {n.pg_name!r}", rank, n.id)
                )
                continue
            seqs.setdefault(n.pg_name, {}).setdefault(rank, []).append(n)
    out: list[CollectiveInstance] = []
    for pg, per_rank in seqs.items():
        group = groups[pg]
        ref_rank = min(per_rank)
        ref = per_rank[ref_rank]
        for m in group:
            mine = per_rank.get(m, [])
            for k in range(max(len(ref), len(mine))):
                a = ref[k] if k < len(ref) else None
                b = mine[k] if k < len(mine) else None
                if a is None or b is None or (a.collective, a.comm_size) != (b.collective, b.comm_size):
                    have = f"{_kind(b)} of {b.comm_size} B" if b else "nothing"
                    want = f"{_kind(a)} of {a.comm_size} B" if a else "nothing"
                    where = b if b is not None else a
                    problems.append(
                        Problem(
                            "structure",
                            f"collective #{k} of group {pg!r}: this rank has {have}, rank {ref_rank} {want}",
                            m,
                            where.id if where is not None else None,
                        )
                    )
                    break
        for k, a in enumerate(ref):
            inst = CollectiveInstance(a.collective, int(a.comm_size), group)  # type: ignore[arg-type]
            for m in group:
                if k < len(per_rank.get(m, [])):
                    inst.nodes[m] = per_rank[m][k]
            out.append(inst)
    return out


def plan_collectives(
    wl: Workload,
    pick: Callable[[Collective, int, int], Algorithm | None],
    params: Any = None,
    *,
    copies: int = 1,
    action: str = "simulate",
    refusal_is_problem: bool = True,
    comm_groups: Mapping[str, Sequence[int]] | None = None,
) -> list[tuple[CollectiveInstance, Algorithm | None]]:
    """Every collective instance with its algorithm (``pick(collective, comm_size, group size)``;
    None: a BROADCAST replayed as its duration). ``params``: a :class:`Selection` such as InlineParams (None: all).
    ``refusal_is_problem`` False: an error of ``pick`` (an unknown algorithm name) propagates as is.

    Raises :class:`hub.errors.VerificationError` (exit 3) listing every problem (rank, node).
    """
    problems: list[Problem] = []
    instances = collective_instances(wl, params, problems, comm_groups)
    chosen: list[Algorithm | None] = []
    for inst in instances:
        try:
            alg = pick(inst.coll, inst.size, len(inst.group))
        except Exception as exc:  # a producer's refusal is a problem of this node, reported with the rest
            if not refusal_is_problem:
                raise
            msg = getattr(exc, "message", str(exc))
            r0 = next(iter(inst.nodes))
            problems.append(
                Problem(
                    "structure",
                    f"no {inst.coll.value} algorithm for {len(inst.group)} ranks: {msg}",
                    r0,
                    inst.nodes[r0].id,
                )
            )
            alg = None
        else:
            if alg is not None and alg.ranks != len(inst.group):
                for r, n in inst.nodes.items():
                    problems.append(
                        Problem(
                            "structure",
                            f"the {inst.coll.value} algorithm has {alg.ranks} ranks, "
                            f"process group {n.pg_name!r} has {len(inst.group)}",
                            r,
                            n.id,
                        )
                    )
            elif alg is not None and copies > 1:
                alg = _copies(alg, copies, inst, problems)
        chosen.append(alg)
    if problems:
        raise VerificationError(
            f"cannot {action} the workload's collectives: {len(problems)} problem(s); first: {problems[0]}",
            problems=problems,
            hint="every member of a group must list the same collectives in the same order",
        )
    return list(zip(instances, chosen, strict=True))


def _copies(alg: Algorithm, k: int, inst: CollectiveInstance, problems: list[Problem]) -> Algorithm | None:
    """``alg`` as k copies on disjoint data (overlap), or None with a problem per node."""
    from ..transforms import instances_algorithm
    from ..verify._layout import has_buffer_semantics

    if not has_buffer_semantics(alg.meta):
        for r, n in inst.nodes.items():
            problems.append(
                Problem(
                    "structure",
                    f"the {inst.coll.value} algorithm {alg.name or '?'} has no chunk "
                    "layout (an ET read as is), so it cannot be cut into copies on parts of the data",
                    r,
                    n.id,
                )
            )
        return None
    return instances_algorithm(alg, k)
