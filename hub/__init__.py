"""collhub: producers and consumers of collective algorithms meet on Chakra ET.

The public API. Heavy submodules (simulator, CLI, registry client) are imported lazily.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version as _dist_version

from . import errors
from .chakra import Algorithm, AlgorithmMeta, Buffer, Collective, NodeType, Op, RankGraph, RankGraphBuilder, Workload
from ._result import Result
from .errors import HubError
from .plugins import ConsumerSpec, ProducerSpec, RunContext, TransformSpec, hookimpl

try:
    __version__ = _dist_version("collhub")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.0.0+unknown"

__all__ = [
    "Algorithm",
    "AlgorithmMeta",
    "Buffer",
    "Collective",
    "ConsumerSpec",
    "HubError",
    "NodeType",
    "Op",
    "ProducerSpec",
    "RankGraph",
    "RankGraphBuilder",
    "Result",
    "RunContext",
    "TransformSpec",
    "Workload",
    "__version__",
    "errors",
    "hookimpl",
]
