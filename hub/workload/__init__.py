"""The workload layer: what a workload trace's collectives are and how they become algorithms.

A workload (per-rank PyTorch/Chakra trace, :class:`hub.chakra.Workload`) names collectives by
process group; this package owns what sits between that trace and an algorithm: its process
groups, its collective instances (checked across the members), the choice of an algorithm for each,
and the workload -> workload rewrites that put those algorithms in the trace (``inline``,
``overlap``, ``extract_inlined``, ``recognize_collectives``; docs/workloads.md). ``hub.sim`` and the
astrasim plugin build on it; it imports ``hub.chakra``, ``hub.algorithms``, ``hub.transforms`` and
``hub.verify`` only, never ``hub.sim`` or ``hub.plugins``.
"""

from __future__ import annotations

import typing as _typing

from .._lazy import lazy_exports as _lazy_exports

#: public name -> the private module defining it (imported on first use, PEP 562: ``hub.sim``'s
#: workload path uses ``_collectives`` without the pydantic models of the transforms)
_LAZY: dict[str, str] = {
    "Pick": "._choice",
    "Produce": "._choice",
    "algorithm_chooser": "._choice",
    "CollectiveInstance": "._collectives",
    "collective_instances": "._collectives",
    "plan_collectives": "._collectives",
    "EVERYONE": "._groups",
    "declared_groups": "._groups",
    "means_everyone": "._groups",
    "observed_members": "._groups",
    "extract_inlined": "._extract",
    "InlineParams": "._inline",
    "inline_transform": "._inline",
    "inline_workload": "._inline",
    "OverlapParams": "._overlap",
    "overlap_transform": "._overlap",
    "overlap_workload": "._overlap",
    "producer_of": "._overlap",
    "RECOGNIZED": "._recognize",
    "recognize_collectives": "._recognize",
}

if _typing.TYPE_CHECKING:  # for type checkers; at run time __getattr__ imports on first use
    from ._choice import Pick, Produce, algorithm_chooser
    from ._collectives import CollectiveInstance, collective_instances, plan_collectives
    from ._extract import extract_inlined
    from ._groups import EVERYONE, declared_groups, means_everyone, observed_members
    from ._inline import InlineParams, inline_transform, inline_workload
    from ._overlap import OverlapParams, overlap_transform, overlap_workload, producer_of
    from ._recognize import RECOGNIZED, recognize_collectives

__all__ = [
    "CollectiveInstance",
    "EVERYONE",
    "InlineParams",
    "OverlapParams",
    "Pick",
    "Produce",
    "RECOGNIZED",
    "algorithm_chooser",
    "collective_instances",
    "declared_groups",
    "extract_inlined",
    "inline_transform",
    "inline_workload",
    "means_everyone",
    "observed_members",
    "overlap_transform",
    "overlap_workload",
    "plan_collectives",
    "producer_of",
    "recognize_collectives",
]


__getattr__, __dir__ = _lazy_exports(__name__, _LAZY, globals())
