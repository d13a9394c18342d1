"""The representation: collective algorithms and workloads in Chakra ET (collhub profile).

Names resolve on first use (PEP 562): reading an algorithm imports the model, the reader and its
checks, not the writer, the JSON view, the summaries or the workload codec.
"""

from __future__ import annotations

import typing as _typing

from .._lazy import lazy_exports as _lazy_exports

#: public name -> the private module defining it
_LAZY: dict[str, str] = {
    "algorithm_from_json": "._json",
    "algorithm_to_json": "._json",
    "read_global_metadata": "._meta",
    "COMM_TYPE_OF": "._model",
    "ONESIDED": "._profile",
    "Algorithm": "._model",
    "AlgorithmMeta": "._model",
    "Buffer": "._model",
    "Collective": "._model",
    "NodeType": "._model",
    "NodeView": "._model",
    "Op": "._model",
    "RankGraph": "._model",
    "RankGraphBuilder": "._model",
    "build_algorithm": "._model",
    "chunk_bytes": "._model",
    "reference_chunks": "._model",
    "iter_ranks": "._reader",
    "read_algorithm": "._reader",
    "read_trace": "._reader",
    "RankStream": "._stream",
    "algorithm_summary": "._summary",
    "summarize": "._summary",
    "check_algorithm": "._validate",
    "TypedValue": "._wire",
    "DanglingDependencyWarning": "._workload",
    "Workload": "._workload",
    "WorkloadNode": "._workload",
    "collective_of_comm_type": "._workload",
    "read_workload": "._workload_io",
    "process_groups": "._workload_summary",
    "workload_summary": "._workload_summary",
    "format_workload_summary": "._workload_summary",
    "write_workload": "._workload_io",
    "write_algorithm": "._writer",
}

if _typing.TYPE_CHECKING:  # for type checkers; at run time __getattr__ imports on first use
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
    from ._profile import ONESIDED
    from ._reader import iter_ranks, read_algorithm, read_trace
    from ._stream import RankStream
    from ._summary import algorithm_summary, summarize
    from ._validate import check_algorithm
    from ._wire import TypedValue
    from ._workload import DanglingDependencyWarning, Workload, WorkloadNode, collective_of_comm_type
    from ._workload_io import read_workload, write_workload
    from ._workload_summary import format_workload_summary, process_groups, workload_summary
    from ._writer import write_algorithm

__all__ = [
    "COMM_TYPE_OF",
    "DanglingDependencyWarning",
    "ONESIDED",
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
    "process_groups",
    "workload_summary",
    "format_workload_summary",
    "read_workload",
    "reference_chunks",
    "algorithm_summary",
    "summarize",
    "write_algorithm",
    "write_workload",
]


__getattr__, __dir__ = _lazy_exports(__name__, _LAZY, globals())
