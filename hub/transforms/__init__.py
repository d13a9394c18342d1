"""Semantics-preserving algorithm transforms (and the ``hub.stats`` consumer).

Every algorithm transform returns a new :class:`~hub.chakra.Algorithm` that still verifies
whenever its input did (``docs/verify.md``); ``inline`` turns a workload's collectives into
SEND/RECV/COMP nodes of the workload (``docs/workloads.md``).
"""

from __future__ import annotations

from ._chunk import ChunkParams, chunk_algorithm, chunk_transform
from ._inline import InlineParams, inline_transform, inline_workload
from ._instances import InstancesParams, instances_algorithm, instances_transform, split_to_unit_chunks
from ._recognize import RECOGNIZED, recognize_collectives
from ._remap import RemapParams, remap_algorithm, remap_transform, resolve_mapping
from ._stats import StatsParams, algorithm_stats, stats_consumer
from ._verify import VerifyParams, verify_transform

__all__ = [
    "ChunkParams",
    "InlineParams",
    "InstancesParams",
    "RECOGNIZED",
    "RemapParams",
    "StatsParams",
    "VerifyParams",
    "algorithm_stats",
    "chunk_algorithm",
    "chunk_transform",
    "inline_transform",
    "inline_workload",
    "instances_algorithm",
    "instances_transform",
    "remap_algorithm",
    "recognize_collectives",
    "remap_transform",
    "resolve_mapping",
    "split_to_unit_chunks",
    "stats_consumer",
    "verify_transform",
]
