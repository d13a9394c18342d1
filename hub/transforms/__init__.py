"""Semantics-preserving algorithm -> algorithm transforms (and the ``hub.stats`` consumer).

Every transform returns a new :class:`~hub.chakra.Algorithm` that still verifies whenever its
input did (``docs/verify.md``). Workload -> workload rewrites (``inline``, ``overlap``) live in
:mod:`hub.workload`.
"""

from __future__ import annotations

import typing as _typing

from .._lazy import lazy_exports as _lazy_exports

#: public name -> the private module defining it (imported on first use, PEP 562)
_LAZY: dict[str, str] = {
    "ChunkParams": "._chunk",
    "chunk_algorithm": "._chunk",
    "chunk_transform": "._chunk",
    "InstancesParams": "._instances",
    "instances_algorithm": "._instances",
    "instances_transform": "._instances",
    "split_to_unit_chunks": "._instances",
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
    from ._instances import InstancesParams, instances_algorithm, instances_transform, split_to_unit_chunks
    from ._remap import RemapParams, remap_algorithm, remap_transform, resolve_mapping
    from ._stats import StatsParams, algorithm_stats, stats_consumer
    from ._verify import VerifyParams, verify_transform

__all__ = [
    "ChunkParams",
    "InstancesParams",
    "RemapParams",
    "StatsParams",
    "VerifyParams",
    "algorithm_stats",
    "chunk_algorithm",
    "chunk_transform",
    "instances_algorithm",
    "instances_transform",
    "remap_algorithm",
    "remap_transform",
    "resolve_mapping",
    "split_to_unit_chunks",
    "stats_consumer",
    "verify_transform",
]


__getattr__, __dir__ = _lazy_exports(__name__, _LAZY, globals())
