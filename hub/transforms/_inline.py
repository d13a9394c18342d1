"""``hub.inline``: collectives become SEND/RECV/COMP nodes of the workload's own graph.

Each COMM_COLL node (optionally only some kinds, sizes or process groups) is replaced, on every
rank of its group, by that rank's nodes of an algorithm bound to the node's ``comm_size``
(chosen by ``algorithm_for`` exactly as ``hub.simulate`` chooses: a ``hub.algorithms`` name, an
ET prefix or an :class:`Algorithm`; default ring). Algorithm rank k is the group's k-th member,
so SEND/RECV carry real NPU ids, as ASTRA-sim's workload layer wants. The COMM_COLL node's
dependencies go to the subgraph's entry nodes (those with no dependency inside it) and its
dependents depend on the exit nodes (those nothing inside depends on). New nodes get ids above
the rank's largest id and tags unique per collective instance, so two collectives never
exchange messages. The result is a plain workload ET.

The k-th COMM_COLL of a group on each of its member ranks is one collective instance: every
member must list the same kinds and sizes in the same order (checked, with every other bad
input, before anything is built; all problems are reported at once, exit 3).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ..chakra import Algorithm, Collective, NodeType, Workload, WorkloadNode
from ..errors import Problem, VerificationError

__all__ = ["InlineParams", "inline_transform", "inline_workload"]

#: ASTRA-sim takes tags mod 5e8 (NATIVE tag range); instance tags stay below it
_TAG_LIMIT = 500_000_000


class InlineParams(BaseModel):
    """Parameters of ``hub.inline``."""

    model_config = ConfigDict(extra="forbid")

    algorithm_for: dict[str, str] = Field(default_factory=dict, description="collective -> algorithm name in "
                                          "hub.algorithms (ring, direct, ...) or an ET prefix; default ring, as "
                                          "hub.simulate")
    kinds: list[str] | None = Field(default=None, description="inline only these collectives (default: all)")
    min_size: int | None = Field(default=None, ge=0, description="inline only collectives of at least this many bytes")
    max_size: int | None = Field(default=None, ge=0, description="inline only collectives of at most this many bytes")
    groups: list[str] | None = Field(default=None, description="inline only collectives of these process groups "
                                     "(pg_name; '' = all ranks)")
    recognize: bool = Field(default=False, description="first turn collectives that a CPU (gloo) trace holds as "
                            "COMP nodes (gloo:all_reduce, ...) into COMM_COLL nodes (hub/transforms/_recognize.py)")


@dataclass
class _Instance:
    coll: Collective
    size: int
    group: tuple[int, ...]
    nodes: dict[int, WorkloadNode] = field(default_factory=dict)  # rank -> its COMM_COLL node


def _groups(wl: Workload) -> dict[str, tuple[int, ...]]:
    """pg_name -> member ranks, from the METADATA nodes (ranks [] = all); '' and '0' = all."""
    from ..chakra._workload_summary import process_groups

    everyone = tuple(range(wl.rank_count))
    groups: dict[str, tuple[int, ...]] = {"": everyone}
    for g in process_groups(wl):
        groups[g["pg_name"]] = tuple(g["ranks"]) if g["ranks"] else everyone
    groups.setdefault("0", everyone)
    return groups


def _wanted(node: WorkloadNode, p: InlineParams | None) -> bool:
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
    return p.groups is None or node.pg_name in p.groups or (node.pg_name in ("", "0") and
                                                            bool({"", "0"} & set(p.groups)))


def _coll_text(node: WorkloadNode | None) -> str:
    """``ALLREDUCE of 1048576 B``: what a collective node of an instance is, for a mismatch message."""
    if node is None:
        return "nothing"
    coll = node.collective
    return f"{coll.value if coll is not None else 'no collective'} of {node.comm_size} B"


def _instances(wl: Workload, p: InlineParams | None, problems: list[Problem]) -> list[_Instance]:
    groups = _groups(wl)
    seqs: dict[str, dict[int, list[WorkloadNode]]] = {}
    for rank, nodes in enumerate(wl.ranks):
        for n in nodes:
            if n.type != NodeType.COLL or not _wanted(n, p):
                continue
            if n.comm_size is None:
                problems.append(Problem("structure", "COMM_COLL node without comm_size", rank, n.id))
                continue
            if n.collective is None or n.collective is Collective.CUSTOM:
                problems.append(Problem("structure", f"COMM_COLL node with unknown comm_type {n.comm_type}", rank,
                                        n.id))
                continue
            group = groups.get(n.pg_name)
            if group is None:
                problems.append(Problem("structure", f"process group {n.pg_name!r} is not declared (no METADATA "
                                        "node names it)", rank, n.id))
                continue
            absent = [m for m in group if not 0 <= m < wl.rank_count]
            if absent:
                problems.append(Problem("structure", f"process group {n.pg_name!r} names absent ranks {absent} "
                                        f"(the workload has {wl.rank_count})", rank, n.id))
                continue
            if rank not in group:
                problems.append(Problem("structure", f"rank {rank} is not a member of process group {n.pg_name!r}",
                                        rank, n.id))
                continue
            seqs.setdefault(n.pg_name, {}).setdefault(rank, []).append(n)
    out: list[_Instance] = []
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
                    have = _coll_text(b)
                    want = _coll_text(a)
                    where = b if b is not None else a
                    problems.append(Problem(
                        "structure", f"collective #{k} of group {pg!r}: this rank has {have}, rank {ref_rank} {want}",
                        m, where.id if where is not None else None))
                    break
        for k, a in enumerate(ref):
            inst = _Instance(a.collective, int(a.comm_size), group)  # type: ignore[arg-type]
            for m in group:
                if k < len(per_rank.get(m, [])):
                    inst.nodes[m] = per_rank[m][k]
            out.append(inst)
    return out


def inline_workload(wl: Workload, algorithm_for: Mapping[Any, Algorithm | str] | None = None,
                    params: InlineParams | None = None) -> Workload:
    """A new workload whose selected COMM_COLL nodes are their algorithm's SEND/RECV/COMP nodes.

    Raises :class:`hub.errors.VerificationError` (exit 3) listing every problem (rank, node).
    """
    from ..sim._api import _selector

    if params is not None and params.recognize:
        from ._recognize import recognize_collectives

        wl, _count = recognize_collectives(wl)
    problems: list[Problem] = []
    instances = _instances(wl, params, problems)
    pick = _selector(algorithm_for if algorithm_for is not None else (params.algorithm_for if params else None))
    chosen: list[Algorithm | None] = []
    for inst in instances:
        try:
            alg = pick(inst.coll, inst.size, len(inst.group))
        except Exception as exc:  # a producer's refusal is a problem of this node, reported with the rest
            msg = getattr(exc, "message", str(exc))
            r0 = next(iter(inst.nodes))
            problems.append(Problem("structure", f"no {inst.coll.value} algorithm for {len(inst.group)} ranks: {msg}",
                                    r0, inst.nodes[r0].id))
            alg = None
        else:
            if alg is not None and alg.ranks != len(inst.group):
                for r, n in inst.nodes.items():
                    problems.append(Problem("structure", f"the {inst.coll.value} algorithm has {alg.ranks} ranks, "
                                            f"process group {n.pg_name!r} has {len(inst.group)}", r, n.id))
        chosen.append(alg)
    if problems:
        raise VerificationError(f"cannot inline the workload's collectives: {len(problems)} problem(s); first: "
                                f"{problems[0]}", problems=problems,
                                hint="every member of a group must list the same collectives in the same order")
    replace_at: dict[tuple[int, int], tuple[int, Algorithm, tuple[int, ...]]] = {}
    tag_base = 0
    for inst, alg in zip(instances, chosen, strict=False):
        if alg is None:  # BROADCAST without an algorithm: stays a COMM_COLL (ASTRA-sim replays it)
            continue
        tags = [int(g.tag.max()) for g in alg.graphs if len(g)]
        width = (max(tags) if tags else 0) + 1
        if tag_base + width >= _TAG_LIMIT:
            raise VerificationError("too many inlined collectives for ASTRA-sim's tag range (5e8)")
        for r, n in inst.nodes.items():
            replace_at[(r, n.id)] = (tag_base, alg, inst.group)
        tag_base += width
    return Workload(ranks=[_rank(r, nodes, replace_at) for r, nodes in enumerate(wl.ranks)], version=wl.version,
                    name=wl.name, metadata=dict(wl.metadata))


def _rank(rank: int, nodes: list[WorkloadNode],
          replace_at: dict[tuple[int, int], tuple[int, Algorithm, tuple[int, ...]]]) -> list[WorkloadNode]:
    next_id = max((n.id for n in nodes), default=-1) + 1
    # pass 1: ids of every subgraph and its exit nodes (dependents may come before the
    # COMM_COLL in file order, and a COMM_COLL may depend on another)
    first: dict[int, int] = {}
    exits: dict[int, list[int]] = {}  # replaced COMM_COLL id -> ids its dependents now wait for
    for n in nodes:
        hit = replace_at.get((rank, n.id))
        if hit is None:
            continue
        g = hit[1].graphs[hit[2].index(rank)]
        first[n.id] = next_id
        has_child = np.zeros(len(g), dtype=bool)
        has_child[g.dep_pos] = True
        exits[n.id] = [next_id + i for i in np.flatnonzero(~has_child).tolist()] if len(g) else list(n.deps)
        next_id += len(g)
    out: list[WorkloadNode] = []
    for n in nodes:
        deps = _through(n.deps, exits)
        hit = replace_at.get((rank, n.id))
        if hit is None:
            out.append(n if deps == n.deps else replace(n, deps=deps, ctrl_deps=[d for d in n.ctrl_deps if d in deps]))
            continue
        tag_base, alg, group = hit
        g = alg.graphs[group.index(rank)]
        b0 = first[n.id]
        ptr, dpos = g.dep_ptr.tolist(), g.dep_pos.tolist()
        kinds, peers, tags, sizes, durs = (g.kind.tolist(), g.peer.tolist(), g.tag.tolist(), g.size.tolist(),
                                           g.duration.tolist())
        label = n.name or alg.collective.value
        for i in range(len(g)):
            inner = dpos[ptr[i]:ptr[i + 1]]
            base: dict[str, Any] = dict(id=b0 + i, deps=[b0 + d for d in inner] if inner else list(deps),
                                        is_cpu_op=False, attrs={"inlined_from": n.id})
            k = kinds[i]
            if k in (NodeType.SEND, NodeType.RECV):
                peer = group[peers[i]]
                send = k == NodeType.SEND
                out.append(WorkloadNode(name=f"{label}/{'send' if send else 'recv'}{i}", type=NodeType(k),
                                        comm_src=rank if send else peer, comm_dst=peer if send else rank,
                                        comm_size=int(sizes[i]), comm_tag=tag_base + int(tags[i]), **base))
            else:  # COMP (and any other kind: a cost-free step becomes a 1 ns COMP, as ASTRA-sim's default)
                out.append(WorkloadNode(name=f"{label}/comp{i}", type=NodeType.COMP,
                                        duration_micros=max(int(durs[i]), 0), **base))
    return out


def _through(deps: list[int], exits: dict[int, list[int]]) -> list[int]:
    """``deps`` with every replaced COMM_COLL id swapped for its exit nodes (transitively)."""
    if not any(d in exits for d in deps):
        return deps
    out: list[int] = []
    todo, seen = list(deps), set()
    while todo:
        d = todo.pop(0)
        if d in exits:
            if d not in seen:
                seen.add(d)
                todo[:0] = exits[d]
        elif d not in out:
            out.append(d)
    return out


def inline_transform(workload: Workload, params: InlineParams, ctx: Any = None) -> Workload:
    """Transform factory of ``hub.inline`` (see :func:`inline_workload`)."""
    if not isinstance(workload, Workload):
        from ..errors import UsageError

        raise UsageError(f"hub.inline takes a workload, not a {type(workload).__name__}",
                         hint="read one with hub.chakra.read_workload")
    return inline_workload(workload, params.algorithm_for or None, params)
