"""What a workload trace holds: ops by type, collectives by kind and size, process groups,
compute time and the compute critical path per rank (``collhub trace show`` on a workload)."""

from __future__ import annotations

import ast
import json
from typing import Any

from .._units import format_size
from ._model import NodeType
from ._workload import Workload, WorkloadNode

__all__ = ["process_groups", "workload_summary", "format_workload_summary"]

#: node names of PyTorch collectives that a CPU (gloo) trace holds as COMP nodes
_COLL_PREFIXES = ("c10d::", "gloo:", "nccl:")


def process_groups(wl: Workload) -> list[dict[str, Any]]:
    """The PyTorch process groups that rank 0's METADATA node (``## process_group:init ##``)
    describes: dicts with ``pg_name``, ``ranks`` (empty = all), ``group_size``, ``backend``."""
    groups: list[dict[str, Any]] = []
    for node in wl.ranks[0] if wl.ranks else []:
        if node.type != NodeType.METADATA or not node.inputs:
            continue
        for entry in _pg_entries(node.inputs.get("values", "")):
            groups.append(
                {
                    "pg_name": str(entry.get("pg_name", "")),
                    "desc": str(entry.get("pg_desc", "")),
                    "ranks": [int(r) for r in entry.get("ranks", []) if isinstance(r, int)],
                    "group_size": entry.get("group_size"),
                    "backend": str(entry.get("backend_config", "")),
                }
            )
    return groups


#: longest process-group description parsed (a real one is well under 1 KiB per group)
_PG_TEXT_LIMIT = 1 << 20


def _pg_entries(values: str) -> list[dict[str, Any]]:
    # The converter stores a Python-literal list of JSON strings: "['[{\"pg_name\": \"0\", ...}]']".
    if len(values) > _PG_TEXT_LIMIT:
        return []
    try:
        outer = ast.literal_eval(values) if values else []
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return []
    found: list[dict[str, Any]] = []
    for item in outer if isinstance(outer, list) else []:
        try:
            parsed = json.loads(item) if isinstance(item, str) else item
        except json.JSONDecodeError:
            continue
        for entry in parsed if isinstance(parsed, list) else [parsed]:
            if isinstance(entry, dict) and "pg_name" in entry:
                found.append(entry)
    return found


def _critical_path(nodes: list[WorkloadNode]) -> tuple[int, list[int]]:
    """Longest chain of ``duration_micros`` (COMP nodes; other nodes weigh 0) through the rank's
    dependencies: (µs, node ids from first to last). Nodes come in any order; cycles are cut.

    Files list a node after its dependencies (Chakra's converters, collhub's writers): then one
    pass in file order gives the answer (:func:`_critical_path_in_order`); otherwise, or with an
    id used twice, the depth-first search below does (the reference; same results, same ties)."""
    fast = _critical_path_in_order(nodes)
    if fast is not None:
        return fast
    return _critical_path_dfs(nodes)


def _critical_path_in_order(nodes: list[WorkloadNode]) -> tuple[int, list[int]] | None:
    """The same as the search when every dependency on a node of the rank names an earlier node
    and ids are unique (None otherwise): the search's post order is then the file order, so the
    first maximum and every tie go the same way."""
    pos = {n.id: i for i, n in enumerate(nodes)}
    if len(pos) != len(nodes):
        return None
    best = [0] * len(nodes)
    prev: list[int | None] = [None] * len(nodes)
    comp = NodeType.COMP
    for i, n in enumerate(nodes):
        top, arg = 0, None
        for d in n.deps:
            j = pos.get(d)
            if j is None:
                continue
            if j >= i:
                return None
            if best[j] > top:
                top, arg = best[j], d
        w = n.duration_micros if n.type == comp else 0
        best[i] = top + max(int(w), 0)
        prev[i] = arg
    if not best:
        return 0, []
    end = max(range(len(best)), key=best.__getitem__)
    length = best[end]
    chain: list[int] = []
    cur: int | None = nodes[end].id
    while cur is not None and len(chain) <= len(nodes):
        chain.append(cur)
        cur = prev[pos[cur]]
    return length, chain[::-1]


def _critical_path_dfs(nodes: list[WorkloadNode]) -> tuple[int, list[int]]:
    """The critical path by an iterative depth-first search (any order, cycles cut)."""
    by_id = {n.id: n for n in nodes}
    best: dict[int, int] = {}
    prev: dict[int, int | None] = {}
    state: dict[int, int] = {}
    for root in nodes:
        if root.id in best:
            continue
        stack = [(root.id, 0)]
        while stack:  # iterative DFS in post order: deep graphs need no recursion
            nid, i = stack.pop()
            node = by_id[nid]
            if i == 0:
                if state.get(nid) == 2:
                    continue
                state[nid] = 1
            deps = [d for d in node.deps if d in by_id]
            if i < len(deps):
                stack.append((nid, i + 1))
                d = deps[i]
                if state.get(d) is None:
                    stack.append((d, 0))
                continue
            w = node.duration_micros if node.type == NodeType.COMP else 0
            top, arg = 0, None
            for d in deps:
                if d in best and best[d] > top:
                    top, arg = best[d], d
            best[nid], prev[nid], state[nid] = top + max(int(w), 0), arg, 2
    if not best:
        return 0, []
    end = max(best, key=lambda k: best[k])
    chain: list[int] = []
    cur: int | None = end
    while cur is not None and len(chain) <= len(nodes):
        chain.append(cur)
        cur = prev.get(cur)
    return best[end], chain[::-1]


def workload_summary(wl: Workload) -> dict[str, Any]:
    """A JSON-ready summary; times are the trace's ``duration_micros`` (µs), not a simulation."""
    ops: dict[NodeType, int] = {}  # by member: an enum's .name is a property, slow a million times
    colls: dict[tuple[str, int, str], int] = {}
    comp_colls: dict[str, int] = {}
    per_rank = []
    for rank, nodes in enumerate(wl.ranks):
        gpu = cpu = 0
        for n in nodes:
            ops[n.type] = ops.get(n.type, 0) + 1
            if n.type == NodeType.COLL:
                kind = n.collective.value if n.collective else f"comm_type {n.comm_type}"
                key = (kind, int(n.comm_size if n.comm_size is not None else -1), n.pg_name)
                colls[key] = colls.get(key, 0) + 1
            elif n.type == NodeType.COMP:
                if n.is_cpu_op:
                    cpu += n.duration_micros
                else:
                    gpu += n.duration_micros
                if n.name.startswith(_COLL_PREFIXES):
                    comp_colls[n.name] = comp_colls.get(n.name, 0) + 1
        length, chain = _critical_path(nodes)
        per_rank.append(
            {
                "rank": rank,
                "nodes": len(nodes),
                "compute_us_gpu": gpu,
                "compute_us_cpu": cpu,
                "critical_path_us": length,
                "critical_path_nodes": len(chain),
                "critical_path_ends": [chain[0], chain[-1]] if chain else [],
            }
        )
    return {
        "name": wl.name,
        "version": wl.version,
        "ranks": wl.rank_count,
        "nodes": wl.node_count(),
        "metadata": {k: v for k, v in wl.metadata.items() if isinstance(v, (str, int, float, bool))},
        "ops_by_type": dict(sorted((t.name, c) for t, c in ops.items())),
        "collectives": [
            {"kind": k, "comm_size": s, "pg_name": pg, "nodes": c} for (k, s, pg), c in sorted(colls.items())
        ],
        "collectives_as_comp": dict(sorted(comp_colls.items())),
        "process_groups": process_groups(wl),
        "dangling_dependencies": len(wl.dangling),
        "per_rank": per_rank,
    }


def _collective_text(c: dict[str, Any]) -> str:
    """``ALL_REDUCE 1 MiB pg 0 x8``: one kind of collective of the summary."""
    size = format_size(c["comm_size"], "reading") if c["comm_size"] >= 0 else "no size"
    pg = " pg " + c["pg_name"] if c["pg_name"] else ""
    return f"{c['kind']} {size}{pg} x{c['nodes']}"


def format_workload_summary(s: dict[str, Any]) -> str:
    """The text form of :func:`workload_summary`."""

    pr = s["per_rank"]

    def span(key: str) -> str:
        vals = [r[key] for r in pr]
        return f"{min(vals)} .. {max(vals)}" if vals else "-"

    colls = ", ".join(_collective_text(c) for c in s["collectives"]) or "none"
    pgs = (
        ", ".join(
            f"{g['pg_name']} ({g['desc'] or '-'}, size {g['group_size']}, {g['backend'] or '-'})"
            for g in s["process_groups"]
        )
        or "none declared"
    )
    lines = [
        f"workload    {s['name'] or '(unnamed)'} (version {s['version'] or '-'}"
        + (f", schema {s['metadata']['schema']}" if "schema" in s["metadata"] else "")
        + ")",
        f"ranks       {s['ranks']}",
        f"nodes       {s['nodes']}: " + ", ".join(f"{k} {v}" for k, v in s["ops_by_type"].items()),
        f"collectives {colls}",
    ]
    if s["collectives_as_comp"]:
        lines.append("as COMP    " + ", ".join(f"{k} x{v}" for k, v in s["collectives_as_comp"].items()))
    lines += [
        f"proc groups {pgs}",
        f"compute     per rank GPU {span('compute_us_gpu')} us, CPU {span('compute_us_cpu')} us",
        f"crit. path  per rank {span('critical_path_us')} us of COMP durations "
        f"({span('critical_path_nodes')} nodes; communication not counted)",
    ]
    if s["dangling_dependencies"]:
        lines.append(
            f"repaired    {s['dangling_dependencies']} dependencies on absent nodes dropped (treated as satisfied)"
        )
    return "\n".join(lines)
