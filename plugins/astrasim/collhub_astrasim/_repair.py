"""A runnable copy of a workload for ASTRA-sim: what its workload layer refuses, removed and counted.

ASTRA-sim 518bd51 aborts on a dependency on an absent node ("Node 0 in ctrl_dep graph, but not
found in index") and on METADATA nodes ("Invalid node_type"), both routine in traces converted
from PyTorch. collhub's reader already drops dangling dependencies (``Workload.dangling``); this
leaves out METADATA nodes and reconnects their dependents to the METADATA node's own parents, so
no ordering the trace implies is lost.
"""

from __future__ import annotations

from dataclasses import replace

from hub.chakra import NodeType, Workload

__all__ = ["runnable_copy"]


def _through(parents: dict[int, list[int]], d: int, seen: frozenset[int] = frozenset()) -> list[int]:
    """The dependencies ``d`` stands for: a METADATA node's dependents inherit its own
    (non-METADATA) dependencies, through chains of METADATA nodes."""
    if d not in parents:
        return [d]
    out: list[int] = []
    for p in parents[d]:
        if p not in seen:
            out.extend(_through(parents, p, seen | {d}))
    return out


def runnable_copy(wl: Workload) -> tuple[Workload, dict[str, int]]:
    """``(copy, changes)``: ``changes`` counts each kind of repair (zero counts left out)."""
    changes = {"dangling dependencies dropped": len(wl.dangling)}
    meta_nodes = rewired = 0
    ranks = []
    for nodes in wl.ranks:
        parents = {n.id: list(n.deps) for n in nodes if n.type == NodeType.METADATA}
        meta_nodes += len(parents)

        kept = []
        for n in nodes:
            if n.type == NodeType.METADATA:
                continue
            if any(d in parents for d in n.deps):
                rewired += sum(1 for d in n.deps if d in parents)
                deps: list[int] = []
                for d in n.deps:
                    deps.extend(x for x in _through(parents, d) if x not in deps)
                n = replace(n, deps=deps, ctrl_deps=[d for d in n.ctrl_deps if d not in parents and d in deps])
            kept.append(n)
        ranks.append(kept)
    changes["METADATA nodes left out"] = meta_nodes
    changes["dependencies on METADATA nodes rewired"] = rewired
    return Workload(ranks=ranks, version=wl.version, name=wl.name, metadata=dict(wl.metadata), dangling=[]), {
        k: v for k, v in changes.items() if v
    }
