"""The representation: collective algorithms and workloads in Chakra ET (collhub profile)."""

from ._json import algorithm_from_json, algorithm_to_json
from ._meta import read_global_metadata
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
from ._reader import iter_ranks, read_algorithm, read_trace
from ._stream import RankStream
from ._summary import summarize
from ._validate import check_algorithm
from ._wire import TypedValue
from ._workload import DanglingDependencyWarning, Workload, WorkloadNode, collective_of_comm_type
from ._workload_io import read_workload, write_workload
from ._writer import write_algorithm

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
    "RankStream",
    "TypedValue",
    "Workload",
    "WorkloadNode",
    "algorithm_from_json",
    "algorithm_to_json",
    "build_algorithm",
    "check_algorithm",
    "chunk_bytes",
    "collective_of_comm_type",
    "iter_ranks",
    "read_algorithm",
    "read_global_metadata",
    "read_trace",
    "read_workload",
    "reference_chunks",
    "summarize",
    "write_algorithm",
    "write_workload",
]
