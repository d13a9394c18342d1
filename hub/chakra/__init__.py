"""The representation: collective algorithms and workloads in Chakra ET (collhub profile)."""

from ._json import algorithm_from_json, algorithm_to_json
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
from ._reader import read_algorithm, read_global_metadata, read_trace, read_workload
from ._summary import summarize
from ._validate import check_algorithm
from ._wire import TypedValue
from ._workload import DanglingDependencyWarning, Workload, WorkloadNode, collective_of_comm_type
from ._writer import write_algorithm, write_workload

__all__ = [
    "COMM_TYPE_OF",
    "DanglingDependencyWarning",
    "Algorithm",
    "AlgorithmMeta",
    "Buffer",
    "Collective",
    "NodeType",
    "NodeView",
    "Op",
    "RankGraph",
    "RankGraphBuilder",
    "TypedValue",
    "Workload",
    "WorkloadNode",
    "algorithm_from_json",
    "algorithm_to_json",
    "build_algorithm",
    "check_algorithm",
    "chunk_bytes",
    "collective_of_comm_type",
    "read_algorithm",
    "read_global_metadata",
    "read_trace",
    "read_workload",
    "reference_chunks",
    "summarize",
    "write_algorithm",
    "write_workload",
]
