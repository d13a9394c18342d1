"""Collectives that a CPU (gloo) trace holds as COMP nodes, turned back into COMM_COLL nodes.

MLCommons' converter makes COMM_COLL nodes only from NCCL GPU kernels; on gloo every collective
is an ordinary CPU COMP node whose name and ``inputs`` still say what it is. Recognised names
(the backend's own op, not the ``c10d::`` wrapper that calls it):

=====================  ==================  =====================================================
name                   collective          ``comm_size``
=====================  ==================  =====================================================
``gloo:all_reduce``    ALL_REDUCE          bytes of the first input tensor (numel x item size)
``gloo:all_gather``    ALL_GATHER          same (the per-rank contribution: ASTRA-sim's convention)
``gloo:reduce_scatter`` REDUCE_SCATTER     same
``gloo:all_to_all``    ALL_TO_ALL          same
``gloo:broadcast``     BROADCAST           same
``nccl:<same names>``  as above            only in traces without any COMM_COLL node (a GPU trace
                                           holds these CPU-side markers next to the real kernels)
=====================  ==================  =====================================================

gloo implements ``reduce_scatter_tensor`` as an all-reduce of the whole input, and the trace says
so (``gloo:all_reduce``); it is recognised as what ran. The new node keeps id, name, dependencies,
duration and attributes, gets ``comm_type``/``comm_size``, ``is_cpu_op`` false (ASTRA-sim requires
it of a COMM_COLL: the collective now holds the NPU's communication resource instead of the CPU)
and the attribute ``recognized_from`` = ``"COMP"``.
"""

from __future__ import annotations

import ast
from dataclasses import replace

from ..chakra import COMM_TYPE_OF, Collective, NodeType, Workload, WorkloadNode

__all__ = ["RECOGNIZED", "recognize_collectives"]

RECOGNIZED: dict[str, Collective] = {
    "all_reduce": Collective.ALLREDUCE,
    "all_gather": Collective.ALLGATHER,
    "reduce_scatter": Collective.REDUCESCATTER,
    "all_to_all": Collective.ALLTOALL,
    "broadcast": Collective.BROADCAST,
}
_VALUES_LIMIT = 1 << 16


def _tensor_bytes(node: WorkloadNode) -> int | None:
    """numel x item size of the first input tensor: the converter's IOInfo value
    ``[[tensor id, storage id, offset, numel, item size, device], ...]``."""
    text = (node.inputs or {}).get("values", "")
    if not text or len(text) > _VALUES_LIMIT:
        return None
    try:
        values = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    first = values[0] if isinstance(values, list) and values else None
    while isinstance(first, list) and first and isinstance(first[0], list):  # GenericList[Tensor]
        first = first[0]
    if isinstance(first, list) and len(first) >= 5 and all(isinstance(x, int) for x in first[3:5]):
        return int(first[3]) * int(first[4])
    return None


def recognize_collectives(wl: Workload) -> tuple[Workload, int]:
    """``(copy, number of nodes turned into COMM_COLL nodes)``."""
    nccl_too = not any(n.type == NodeType.COLL for r in wl.ranks for n in r)
    count = 0
    ranks = []
    for nodes in wl.ranks:
        out = []
        for n in nodes:
            backend, _, op = n.name.partition(":")
            coll = (
                RECOGNIZED.get(op)
                if n.type == NodeType.COMP and (backend == "gloo" or (backend == "nccl" and nccl_too))
                else None
            )
            size = _tensor_bytes(n) if coll is not None else None
            if coll is None or size is None:
                out.append(n)
                continue
            out.append(
                replace(
                    n,
                    type=NodeType.COLL,
                    comm_type=COMM_TYPE_OF[coll],
                    comm_size=size,
                    is_cpu_op=False,
                    attrs={**n.attrs, "is_cpu_op": False, "recognized_from": "COMP"},
                )
            )
            count += 1
        ranks.append(out)
    return Workload(
        ranks=ranks, version=wl.version, name=wl.name, metadata=dict(wl.metadata), dangling=list(wl.dangling)
    ), count
