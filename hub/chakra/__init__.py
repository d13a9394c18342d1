"""The representation: collective algorithms and workloads in Chakra ET (collhub profile)."""

from ._model import (
    COMM_TYPE_OF,
    Algorithm,
    AlgorithmMeta,
    Buffer,
    Collective,
    NodeType,
    NodeView,
    Op,
    RankGraph,
    RankGraphBuilder,
    build_algorithm,
    chunk_bytes,
    reference_chunks,
)
from ._workload import Workload, WorkloadNode, collective_of_comm_type

__all__ = [
    "COMM_TYPE_OF",
    "Algorithm",
    "AlgorithmMeta",
    "Buffer",
    "Collective",
    "NodeType",
    "NodeView",
    "Op",
    "RankGraph",
    "RankGraphBuilder",
    "Workload",
    "WorkloadNode",
    "build_algorithm",
    "chunk_bytes",
    "collective_of_comm_type",
    "reference_chunks",
]
