"""Semantics-preserving algorithm transforms (and the ``hub.stats`` consumer).

Every algorithm transform returns a new :class:`~hub.chakra.Algorithm` that still verifies
whenever its input did (``docs/verify.md``); ``inline`` turns a workload's collectives into
SEND/RECV/COMP nodes of the workload and ``overlap`` also overlaps each with the computation that
produces its input (``docs/workloads.md``).
"""

from __future__ import annotations

import typing as _typing

from .._lazy import lazy_exports as _lazy_exports

#: public name -> the private module defining it (imported on first use, PEP 562: the workload
#: layer of hub.simulate and ``collhub-astra-sim`` use ``_collectives`` without the pydantic models)
_LAZY: dict[str, str] = {
    "ChunkParams": "._chunk",
    "chunk_algorithm": "._chunk",
    "chunk_transform": "._chunk",
    "extract_inlined": "._extract",
    "InlineParams": "._inline",
    "inline_transform": "._inline",
    "inline_workload": "._inline",
    "InstancesParams": "._instances",
    "instances_algorithm": "._instances",
    "instances_transform": "._instances",
    "split_to_unit_chunks": "._instances",
    "OverlapParams": "._overlap",
    "overlap_transform": "._overlap",
    "overlap_workload": "._overlap",
    "producer_of": "._overlap",
    "RECOGNIZED": "._recognize",
    "recognize_collectives": "._recognize",
    "RemapParams": "._remap",
    "remap_algorithm": "._remap",
    "remap_transform": "._remap",
    "resolve_mapping": "._remap",
    "StatsParams": "._stats",
    "algorithm_stats": "._stats",
    "stats_consumer": "._stats",
    "VerifyParams": "._verify",
    "verify_transform": "._verify",
}

if _typing.TYPE_CHECKING:  # for type checkers; at run time __getattr__ imports on first use
    from ._chunk import ChunkParams, chunk_algorithm, chunk_transform
    from ._extract import extract_inlined
    from ._inline import InlineParams, inline_transform, inline_workload
    from ._instances import InstancesParams, instances_algorithm, instances_transform, split_to_unit_chunks
    from ._overlap import OverlapParams, overlap_transform, overlap_workload, producer_of
    from ._recognize import RECOGNIZED, recognize_collectives
    from ._remap import RemapParams, remap_algorithm, remap_transform, resolve_mapping
    from ._stats import StatsParams, algorithm_stats, stats_consumer
    from ._verify import VerifyParams, verify_transform

__all__ = [
    "ChunkParams",
    "InlineParams",
    "InstancesParams",
    "OverlapParams",
    "RECOGNIZED",
    "RemapParams",
    "StatsParams",
    "VerifyParams",
    "algorithm_stats",
    "chunk_algorithm",
    "chunk_transform",
    "extract_inlined",
    "inline_transform",
    "inline_workload",
    "instances_algorithm",
    "instances_transform",
    "overlap_transform",
    "overlap_workload",
    "producer_of",
    "remap_algorithm",
    "recognize_collectives",
    "remap_transform",
    "resolve_mapping",
    "split_to_unit_chunks",
    "stats_consumer",
    "verify_transform",
]


__getattr__, __dir__ = _lazy_exports(__name__, _LAZY, globals())
