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
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ..chakra import Algorithm, NodeType, Workload, WorkloadNode
from ..errors import VerificationError
from ._choice import Produce, algorithm_chooser
from ._collectives import plan_collectives

__all__ = ["Feed", "InlineParams", "Placement", "build_inlined", "inline_transform", "inline_workload", "plan_inline"]

#: ASTRA-sim takes tags mod 5e8 (NATIVE tag range); instance tags stay below it
_TAG_LIMIT = 500_000_000


class InlineParams(BaseModel):
    """Parameters of ``hub.inline``."""

    model_config = ConfigDict(extra="forbid")

    algorithm_for: dict[str, str] = Field(
        default_factory=dict,
        description="collective -> algorithm name in "
        "hub.algorithms (ring, direct, ...) or an ET prefix; default ring, as "
        "hub.simulate",
    )
    kinds: list[str] | None = Field(default=None, description="inline only these collectives (default: all)")
    min_size: int | None = Field(default=None, ge=0, description="inline only collectives of at least this many bytes")
    max_size: int | None = Field(default=None, ge=0, description="inline only collectives of at most this many bytes")
    groups: list[str] | None = Field(
        default=None, description="inline only collectives of these process groups (pg_name; '' = all ranks)"
    )
    recognize: bool = Field(
        default=False,
        description="first turn collectives that a CPU (gloo) trace holds as "
        "COMP nodes (gloo:all_reduce, ...) into COMM_COLL nodes (hub/workload/_recognize.py)",
    )


@dataclass
class Placement:
    """One collective instance to inline: its index among the workload's instances, the first tag
    of its range, its bound algorithm, its group (algorithm rank k = ``group[k]``) and its nodes."""

    index: int
    tag_base: int
    alg: Algorithm
    group: tuple[int, ...]
    nodes: dict[int, WorkloadNode]


@dataclass(frozen=True)
class Feed:
    """Overlap of one COMM_COLL on one rank: its producer COMP is cut into ``pieces``; the
    algorithm is ``copies`` side-by-side copies (hub.instances) and copy c waits for one piece."""

    producer: int
    pieces: int
    copies: int


def plan_inline(
    wl: Workload,
    algorithm_for: Mapping[Any, Algorithm | str] | None,
    params: InlineParams | None,
    copies: int = 1,
    *,
    produce_algorithm: Produce | None = None,
) -> list[Placement]:
    """The collective instances to inline and their bound algorithms (tag ranges assigned);
    ``copies`` > 1 (overlap): each algorithm as that many side-by-side copies (hub.instances),
    copy c moving the c-th k-th of the data. ``produce_algorithm``: runs the producer ids
    ``algorithm_for`` names (:func:`hub.workload.algorithm_chooser`).

    Raises :class:`hub.errors.VerificationError` (exit 3) listing every problem (rank, node).
    """
    choice = algorithm_for if algorithm_for is not None else (params.algorithm_for if params else None)
    pick = algorithm_chooser(choice, produce=produce_algorithm)
    planned = plan_collectives(wl, pick, params, copies=copies, action="inline")
    out: list[Placement] = []
    tag_base = 0
    for index, (inst, alg) in enumerate(planned):
        if alg is None:  # BROADCAST without an algorithm: stays a COMM_COLL (ASTRA-sim replays it)
            continue
        tags = [int(g.tag.max()) for g in alg.graphs if len(g)]
        width = (max(tags) if tags else 0) + 1
        if tag_base + width >= _TAG_LIMIT:
            raise VerificationError("too many inlined collectives for ASTRA-sim's tag range (5e8)")
        out.append(Placement(index, tag_base, alg, inst.group, dict(inst.nodes)))
        tag_base += width
    return out


def inline_workload(
    wl: Workload,
    algorithm_for: Mapping[Any, Algorithm | str] | None = None,
    params: InlineParams | None = None,
    *,
    produce_algorithm: Produce | None = None,
) -> Workload:
    """A new workload whose selected COMM_COLL nodes are their algorithm's SEND/RECV/COMP nodes.

    Raises :class:`hub.errors.VerificationError` (exit 3) listing every problem (rank, node).
    """
    if params is not None and params.recognize:
        from ._recognize import recognize_collectives

        wl, _count = recognize_collectives(wl)
    return build_inlined(wl, plan_inline(wl, algorithm_for, params, produce_algorithm=produce_algorithm))


def build_inlined(
    wl: Workload, placements: list[Placement], feeds: Mapping[tuple[int, int], Feed] | None = None
) -> Workload:
    """``wl`` with every placed COMM_COLL replaced by its algorithm's nodes; ``feeds`` (overlap):
    (rank, COMM_COLL id) -> the producer COMP to split and which piece each algorithm copy waits for."""
    replace_at: dict[tuple[int, int], Placement] = {}
    for pl in placements:
        for r, n in pl.nodes.items():
            replace_at[(r, n.id)] = pl
    feeds = feeds or {}
    return Workload(
        ranks=[_rank(r, nodes, replace_at, feeds) for r, nodes in enumerate(wl.ranks)],
        version=wl.version,
        name=wl.name,
        metadata=dict(wl.metadata),
    )


def _split_comp(n: WorkloadNode, pieces: int, first_id: int, deps: list[int]) -> list[WorkloadNode]:
    """``n`` as a chain of ``pieces`` COMPs (µs spread evenly, the total kept); the last keeps ``n``'s id,
    so whatever waited for ``n`` waits for the whole chain."""
    d = n.duration_micros
    ids = [first_id + j for j in range(pieces - 1)] + [n.id]
    out = []
    for j, nid in enumerate(ids):
        dur = d // pieces + (1 if j < d % pieces else 0)
        out.append(
            replace(
                n,
                id=nid,
                name=f"{n.name}/piece{j}",
                duration_micros=dur,
                deps=list(deps) if j == 0 else [ids[j - 1]],
                ctrl_deps=[c for c in n.ctrl_deps if c in deps] if j == 0 else [],
                attrs={**n.attrs, "overlap_piece": j},
            )
        )
    return out


def _rank(
    rank: int,
    nodes: list[WorkloadNode],
    replace_at: dict[tuple[int, int], Placement],
    feeds: Mapping[tuple[int, int], Feed],
) -> list[WorkloadNode]:
    next_id = max((n.id for n in nodes), default=-1) + 1
    # pass 1: ids of every subgraph and its exit nodes (dependents may come before the
    # COMM_COLL in file order, and a COMM_COLL may depend on another), and of producer pieces
    first: dict[int, int] = {}
    exits: dict[int, list[int]] = {}  # replaced COMM_COLL id -> ids its dependents now wait for
    pieces: dict[int, list[int]] = {}  # split producer id -> its pieces' ids (the last is its own)
    split_count: dict[int, int] = {}
    for n in nodes:
        pl = replace_at.get((rank, n.id))
        if pl is None:
            continue
        g = pl.alg.graphs[pl.group.index(rank)]
        first[n.id] = next_id
        has_child = np.zeros(len(g), dtype=bool)
        has_child[g.dep_pos] = True
        exits[n.id] = [next_id + i for i in np.flatnonzero(~has_child).tolist()] if len(g) else list(n.deps)
        next_id += len(g)
        feed = feeds.get((rank, n.id))
        if feed is not None and feed.producer not in split_count:
            split_count[feed.producer] = feed.pieces
            pieces[feed.producer] = [next_id + j for j in range(feed.pieces - 1)] + [feed.producer]
            next_id += feed.pieces - 1
    out: list[WorkloadNode] = []
    for n in nodes:
        deps = _through(n.deps, exits)
        if n.id in split_count:
            out.extend(_split_comp(n, split_count[n.id], pieces[n.id][0], deps))
            continue
        pl = replace_at.get((rank, n.id))
        if pl is None:
            out.append(n if deps == n.deps else replace(n, deps=deps, ctrl_deps=[d for d in n.ctrl_deps if d in deps]))
            continue
        out.extend(_subgraph(rank, n, pl, first[n.id], deps, feeds.get((rank, n.id)), pieces))
    return out


def _subgraph(
    rank: int, n: WorkloadNode, pl: Placement, b0: int, deps: list[int], feed: Feed | None, pieces: dict[int, list[int]]
) -> list[WorkloadNode]:
    """The rank's nodes of ``pl``'s algorithm, ids from ``b0``; entry nodes take ``deps`` (with a
    feed: the producer's piece that their algorithm copy waits for, instead of the whole producer)."""
    g = pl.alg.graphs[pl.group.index(rank)]
    ptr, dpos = g.dep_ptr.tolist(), g.dep_pos.tolist()
    kinds, peers, tags, sizes, durs = (
        g.kind.tolist(),
        g.peer.tolist(),
        g.tag.tolist(),
        g.size.tolist(),
        g.duration.tolist(),
    )
    label = n.name or pl.alg.collective.value
    if feed is not None:
        others = [d for d in deps if d != feed.producer]
        chain = pieces[feed.producer]
        per_copy = len(g) // feed.copies
    out: list[WorkloadNode] = []
    for i in range(len(g)):
        inner = dpos[ptr[i] : ptr[i + 1]]
        if inner:
            my_deps = [b0 + d for d in inner]
        elif feed is not None:  # copy c of k waits for piece floor(c * m / k) of the producer's m pieces
            my_deps = others + [chain[(i // per_copy) * len(chain) // feed.copies]]
        else:
            my_deps = list(deps)
        base: dict[str, Any] = dict(
            id=b0 + i,
            deps=my_deps,
            is_cpu_op=False,
            attrs={"inlined_from": n.id, "inlined_instance": pl.index, "inlined_pos": i},
        )
        k = kinds[i]
        if k in (NodeType.SEND, NodeType.RECV):
            peer = pl.group[peers[i]]
            send = k == NodeType.SEND
            out.append(
                WorkloadNode(
                    name=f"{label}/{'send' if send else 'recv'}{i}",
                    type=NodeType(k),
                    comm_src=rank if send else peer,
                    comm_dst=peer if send else rank,
                    comm_size=int(sizes[i]),
                    comm_tag=pl.tag_base + int(tags[i]),
                    **base,
                )
            )
        else:  # COMP (and any other kind: a cost-free step becomes a 1 ns COMP, as ASTRA-sim's default)
            out.append(
                WorkloadNode(name=f"{label}/comp{i}", type=NodeType.COMP, duration_micros=max(int(durs[i]), 0), **base)
            )
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

        raise UsageError(
            f"hub.inline takes a workload, not a {type(workload).__name__}",
            hint="read one with hub.chakra.read_workload",
        )
    produce = getattr(ctx, "produce_algorithm", None)
    return inline_workload(workload, params.algorithm_for or None, params, produce_algorithm=produce)
