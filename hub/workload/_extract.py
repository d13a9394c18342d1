"""An inlined collective taken back out of a workload, as an algorithm ``hub.verify`` checks.

``hub.inline`` and ``hub.overlap`` mark each node they write with ``inlined_instance`` (the
collective instance) and ``inlined_pos`` (its position in the rank's algorithm graph). Given the
algorithm that was inlined (for ``hub.overlap`` with k pieces: ``instances_algorithm(alg, k)``),
the extraction rebuilds every rank's graph from what the *workload* says: peers (NPU ids mapped
back through the group), tags (relative to the instance's first tag), sizes, durations and the
dependencies between the instance's own nodes. Only the chunk layout (buffers, offsets, counts,
ops) comes from the algorithm. So a workload whose wiring lost, added or misdirected anything
fails verification.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..chakra import Algorithm, NodeType, RankGraph, Workload, WorkloadNode
from ..chakra._model import COLUMN_NAMES
from ..errors import VerificationError

__all__ = ["extract_inlined"]


def _members(wl: Workload, instance: int) -> dict[int, list[WorkloadNode]]:
    out: dict[int, list[WorkloadNode]] = {}
    for r, nodes in enumerate(wl.ranks):
        mine = [n for n in nodes if n.attrs.get("inlined_instance") == instance]
        if mine:
            out[r] = sorted(mine, key=lambda n: int(n.attrs["inlined_pos"]))
    return out


def extract_inlined(wl: Workload, instance: int, alg: Algorithm, group: Sequence[int] | None = None) -> Algorithm:
    """The ``instance``-th inlined collective of ``wl`` as an algorithm with ``alg``'s chunk layout.

    ``group``: the NPUs of algorithm ranks 0, 1, ... (default: the ranks holding the instance, in
    ascending order). Raises :class:`VerificationError` when the instance's nodes do not match
    ``alg`` node for node.
    """
    members = _members(wl, instance)
    if not members:
        raise VerificationError(f"the workload has no nodes of inlined collective instance {instance}")
    grp = list(group) if group is not None else sorted(members)
    if len(grp) != alg.ranks or set(members) - set(grp):
        raise VerificationError(
            f"inlined instance {instance} spans ranks {sorted(members)}, the algorithm has "
            f"{alg.ranks} ranks (group {grp})"
        )
    tags = [int(n.comm_tag or 0) for ns in members.values() for n in ns if n.type in (NodeType.SEND, NodeType.RECV)]
    tag0 = min(tags, default=0)
    pos_of = {npu: q for q, npu in enumerate(grp)}
    graphs = []
    for q, npu in enumerate(grp):
        ref = alg.graphs[q]
        nodes = members.get(npu, [])
        if [int(n.attrs["inlined_pos"]) for n in nodes] != list(range(len(ref))):
            raise VerificationError(
                f"rank {npu}: inlined instance {instance} has positions "
                f"{[n.attrs['inlined_pos'] for n in nodes][:8]}..., the algorithm {len(ref)} nodes"
            )
        graphs.append(_graph(npu, nodes, ref, pos_of, tag0))
    return Algorithm(alg.meta, tuple(graphs))


def _graph(npu: int, nodes: list[WorkloadNode], ref: RankGraph, pos_of: dict[int, int], tag0: int) -> RankGraph:
    """``ref``'s chunk layout with everything else read from the workload's ``nodes``."""
    cols = {c: getattr(ref, c).copy() for c in COLUMN_NAMES}
    local = {n.id: i for i, n in enumerate(nodes)}
    ptr: list[int] = [0]
    pos: list[int] = []
    for i, n in enumerate(nodes):
        cols["kind"][i] = int(n.type)
        if n.type in (NodeType.SEND, NodeType.RECV):
            other = n.comm_dst if n.type == NodeType.SEND else n.comm_src
            if other not in pos_of:
                raise VerificationError(f"rank {npu} node {n.id}: peer NPU {other} is not in the collective's group")
            cols["peer"][i] = pos_of[other]
            cols["tag"][i] = int(n.comm_tag or 0) - tag0
            cols["size"][i] = int(n.comm_size if n.comm_size is not None else -1)
        else:
            cols["duration"][i] = n.duration_micros
        pos.extend(local[d] for d in n.deps if d in local)
        ptr.append(len(pos))
    return RankGraph.from_columns(
        len(nodes), dep_ptr=np.asarray(ptr, dtype=np.int64), dep_pos=np.asarray(pos, dtype=np.int32), **cols
    )
