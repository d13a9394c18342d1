"""Write algorithms and workloads as the ET files ASTRA-sim reads (``chakra-et.md`` §5 and §7).

Algorithm ETs follow the form ASTRA-sim master's custom-collective walker reads, which is also
what the reference converter (astra-sim/collectiveapi, Apr 2025) writes, minus its misleading
``comm_type`` attribute on SEND/RECV nodes:

* SEND: ``comm_size`` (int64, bytes), ``comm_dst`` (int32, algorithm rank), ``comm_tag`` (int32);
* RECV: ``comm_size``, ``comm_src`` (int32), ``comm_tag``;
* COMP: ``duration_micros`` when the node has a duration; none when it is unset, which ASTRA-sim
  charges as 1 ns (and so does ``hub.simulate``);
* every dependency in ``data_deps``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from hub.chakra import COMM_TYPE_OF, Algorithm, NodeType, Workload, WorkloadNode
from hub.errors import ExportError

from ._fastet import encode_rank_nodes
from ._wire import Attr, encode_global_metadata, encode_node, write_et

__all__ = ["SCHEMA", "TAG_LIMIT", "algorithm_problems", "write_algorithm_ets", "write_workload_ets", "workload_name"]

#: The schema string the reference converter writes into GlobalMetadata.
SCHEMA = "1.0.2-chakra.0.0.4"
#: ASTRA-sim's system layer keeps tags modulo 500,000,000; larger tags would alias.
TAG_LIMIT = 500_000_000



def algorithm_problems(alg: Algorithm) -> str | None:
    """The first reason ``alg`` cannot be written for ASTRA-sim, or None."""
    n = alg.ranks
    for rank, g in enumerate(alg.graphs):
        kinds = g.kind
        bad = np.flatnonzero(~np.isin(kinds, (NodeType.SEND, NodeType.RECV, NodeType.COMP)))
        if bad.size:
            p = int(bad[0])
            return (
                f"rank {rank}, node {int(g.ids[p])}: node type {NodeType(int(kinds[p])).name} cannot appear in a "
                "custom-collective ET (ASTRA-sim issues only COMM_SEND, COMM_RECV and COMP nodes)"
            )
        comm = (kinds == NodeType.SEND) | (kinds == NodeType.RECV)
        unsized = np.flatnonzero(comm & (g.size < 0))
        if unsized.size:
            p = int(unsized[0])
            return f"rank {rank}, node {int(g.ids[p])}: message has no byte size (algorithm not bound to a collective size)"
        wrong = np.flatnonzero(comm & ((g.peer < 0) | (g.peer >= n) | (g.peer == rank)))
        if wrong.size:
            p = int(wrong[0])
            return f"rank {rank}, node {int(g.ids[p])}: peer {int(g.peer[p])} is not another rank of 0..{n - 1}"
        tags = np.flatnonzero(comm & ((g.tag < 0) | (g.tag >= TAG_LIMIT)))
        if tags.size:
            p = int(tags[0])
            return (
                f"rank {rank}, node {int(g.ids[p])}: tag {int(g.tag[p])} is outside 0..{TAG_LIMIT - 1} "
                "(ASTRA-sim keeps tags modulo 500000000)"
            )
        if len(np.unique(g.ids)) != len(g):
            return f"rank {rank}: node ids are not unique"
    return None


def write_algorithm_ets(alg: Algorithm, prefix: Path) -> list[Path]:
    """Write ``<prefix>.<rank>.et`` for every rank; ``alg`` must be bound (every message sized)."""
    problem = algorithm_problems(alg)
    if problem:
        raise ExportError(f"algorithm {alg.name or alg.collective.value!r}: {problem}")
    meta_attrs: list[Attr] = [("schema", "string_val", SCHEMA), ("collective", "string_val", alg.collective.value)]
    if alg.name:
        meta_attrs.append(("name", "string_val", alg.name))
    if alg.meta.size is not None:
        meta_attrs.append(("size", "int64_val", int(alg.meta.size)))
    meta_attrs.append(("writer", "string_val", "collhub-astrasim"))
    metadata = encode_global_metadata("", meta_attrs)
    paths = []
    for rank in range(alg.ranks):
        path = prefix.with_name(f"{prefix.name}.{rank}.et")
        write_et(path, metadata, (), body=encode_rank_nodes(alg.graphs[rank]))
        paths.append(path)
    return paths


def workload_name(astra_coll: str, ranks: int, size: int) -> str:
    """The node name ASTRA-sim's microbenchmarks use, e.g. ``all_reduce_8npus_1MB`` for 1 MiB."""
    for unit, shift in (("GB", 30), ("MB", 20), ("KB", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{astra_coll}_{ranks}npus_{size >> shift}{unit}"
    return f"{astra_coll}_{ranks}npus_{size}B"


# Wire types of the workload attributes ASTRA-sim reads (chakra-et.md §4.3); other attributes are
# written by their Python type.
_WORKLOAD_TYPES = {
    "is_cpu_op": "bool_val",
    "comm_type": "int64_val",
    "comm_size": "int64_val",
    "comm_src": "int32_val",
    "comm_dst": "int32_val",
    "comm_tag": "int32_val",
    "comm_priority": "int32_val",
    "num_ops": "int64_val",
    "tensor_size": "uint64_val",
    "tensor_loc": "int32_val",
    "pg_name": "string_val",
    "involved_dim": "bool_list",
}


def _field_for(name: str, value: Any) -> str | None:
    if name in _WORKLOAD_TYPES:
        return _WORKLOAD_TYPES[name]
    if isinstance(value, bool):
        return "bool_val"
    if isinstance(value, int):
        return "int64_val"
    if isinstance(value, float):
        return "double_val"
    if isinstance(value, str):
        return "string_val"
    if isinstance(value, (list, tuple)) and value:
        if all(isinstance(v, bool) for v in value):
            return "bool_list"
        if all(isinstance(v, int) for v in value):
            return "int64_list"
        if all(isinstance(v, str) for v in value):
            return "string_list"
    return None


def _workload_attrs(node: WorkloadNode) -> list[Attr]:
    values: dict[str, Any] = {"is_cpu_op": bool(node.is_cpu_op)}
    if node.type == NodeType.COLL:
        values["comm_type"] = node.comm_type
        values["comm_size"] = node.comm_size
        if node.pg_name:
            values["pg_name"] = node.pg_name
    elif node.type in (NodeType.SEND, NodeType.RECV):
        for key in ("comm_src", "comm_dst", "comm_size", "comm_tag"):
            values[key] = getattr(node, key)
    for key, value in node.attrs.items():
        values.setdefault(key, value)
    attrs: list[Attr] = []
    for key, value in values.items():
        if value is None:
            continue
        field = _field_for(key, value)
        if field is None:  # an attribute we cannot type safely; ASTRA-sim does not read it
            continue
        attrs.append((key, field, value))
    return attrs


def write_workload_ets(wl: Workload, prefix: Path, version: str = "0.0.4") -> list[Path]:
    """Write ``<prefix>.<rank>.et`` for every rank of ``wl`` with ASTRA-sim's attribute typing."""
    metadata = encode_global_metadata(version or "0.0.4")
    paths = []
    for rank, nodes in enumerate(wl.ranks):
        encoded = []
        for node in nodes:
            if node.type == NodeType.COLL and node.comm_type not in COMM_TYPE_OF.values():
                raise ExportError(f"workload rank {rank}, node {node.id}: comm_type {node.comm_type} is not a Chakra CollectiveCommType")
            encoded.append(
                encode_node(
                    int(node.id), node.name, int(node.type), data_deps=list(node.deps),
                    duration_micros=max(int(node.duration_micros or 0), 0), attrs=_workload_attrs(node),
                )
            )
        path = prefix.with_name(f"{prefix.name}.{rank}.et")
        write_et(path, metadata, encoded)
        paths.append(path)
    return paths
