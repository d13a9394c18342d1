"""The drawable view of an algorithm: nodes, dependency edges and message edges."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from ..chakra import Algorithm, NodeType
from ..errors import UsageError

__all__ = ["DagNode", "DagView", "dag_view"]

# One picture of more nodes is not readable and costs minutes to lay out.
MAX_NODES = 20_000


@dataclass(frozen=True)
class DagNode:
    key: str  # unique over all ranks: "r<rank>n<id>"
    rank: int
    id: int
    kind: str  # COMP / SEND / RECV / ...
    label: str
    peer: int | None
    size: int | None
    tag: int | None
    depth: int  # longest dependency chain from a root, within the rank


@dataclass
class DagView:
    nodes: list[DagNode] = field(default_factory=list)
    deps: list[tuple[str, str]] = field(default_factory=list)  # (dependency, dependent)
    messages: list[tuple[str, str]] = field(default_factory=list)  # (send, recv)
    name: str = ""


def _depths(graph: object) -> list[int]:
    order = graph.topological_rank()  # type: ignore[attr-defined]
    n = len(graph)  # type: ignore[arg-type]
    positions = sorted(range(n), key=lambda p: int(order[p])) if order is not None else list(range(n))
    depth = [0] * n
    for p in positions:
        for d in graph.deps_of(p):  # type: ignore[attr-defined]
            depth[p] = max(depth[p], depth[int(d)] + 1)
    return depth


def dag_view(alg: Algorithm, rank: int | None = None) -> DagView:
    """Nodes and edges of one rank (``rank``) or of all ranks with send -> receive edges, matched
    first-in first-out per (sender, receiver, tag) in each rank's node order."""
    if rank is not None and not 0 <= rank < alg.ranks:
        raise UsageError(
            f"rank {rank} is out of range: the algorithm has {alg.ranks} rank(s)",
            hint=f"give --rank between 0 and {alg.ranks - 1}",
        )
    ranks = [rank] if rank is not None else list(range(alg.ranks))
    total = sum(len(alg.graphs[r]) for r in ranks)
    if total > MAX_NODES:
        raise UsageError(
            f"{total} nodes are too many to draw (at most {MAX_NODES})", hint="draw one rank with --rank R"
        )
    view = DagView(name=alg.meta.name or "")
    sends: dict[tuple[int, int, int], list[str]] = defaultdict(list)
    recvs: dict[tuple[int, int, int], list[str]] = defaultdict(list)
    for r in ranks:
        g = alg.graphs[r]
        depth = _depths(g)
        keys = [f"r{r}n{int(i)}" for i in g.ids]
        for p in range(len(g)):
            kind = NodeType(int(g.kind[p]))
            comm = kind in (NodeType.SEND, NodeType.RECV)
            peer, tag = int(g.peer[p]), int(g.tag[p])
            name = g.names[p] if g.names else None
            arrow = f" → {peer}" if kind == NodeType.SEND else f" ← {peer}" if kind == NodeType.RECV else ""
            label = f"{kind.name} {int(g.ids[p])}{arrow}" + (f"\n{name}" if name else "")
            size = int(g.size[p])
            view.nodes.append(
                DagNode(
                    keys[p],
                    r,
                    int(g.ids[p]),
                    kind.name,
                    label,
                    peer if comm else None,
                    size if size >= 0 else None,
                    tag if comm else None,
                    depth[p],
                )
            )
            view.deps.extend((keys[int(d)], keys[p]) for d in g.deps_of(p))
            if kind == NodeType.SEND:
                sends[(r, peer, tag)].append(keys[p])
            elif kind == NodeType.RECV:
                recvs[(peer, r, tag)].append(keys[p])
    if rank is None:
        for key, out in sends.items():
            view.messages.extend(zip(out, recvs.get(key, []), strict=False))
    return view
