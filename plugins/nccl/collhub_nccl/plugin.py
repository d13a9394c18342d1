"""Entry point of the ``collhub-nccl`` plugin (``[project.entry-points.collhub] nccl``).

Components: producers ``nccl.ring``, ``nccl.tree``, ``nccl.pat``, ``nccl.nvls``, ``nccl.nvlstree``
and ``nccl.auto`` (NCCL's own
schedules, per channel and protocol chunk); command group ``collhub nccl`` (``explain``).
Factories and params are lazy ``"module:attr"`` strings, so listing components imports nothing.
"""

from __future__ import annotations

from typing import Any

from hub.plugins import ProducerSpec, hookimpl

__all__ = ["COLLHUB_PLUGIN_API", "collhub_commands", "collhub_producers"]

COLLHUB_PLUGIN_API = "1.0"

_SUMMARIES = {
    "ring": "NCCL 2.30.7's ring schedule: per channel and protocol chunk, NCCL's channel/chunk split",
    "tree": "NCCL 2.30.7's tree all-reduce: double binary tree across nodes, chain inside, two trees on the channels",
    "pat": "NCCL 2.30.7's PAT all-gather / reduce-scatter (1 GPU per node), op for op as NCCL's generator",
    "nvls": "NCCL 2.30.7's NVLS all-reduce on one NVSwitch node: per head, switch load-reduce and multicast",
    "nvlstree": "NCCL 2.30.7's NVLSTree all-reduce: NVLS inside nodes, a double binary tree of heads across",
    "auto": "The algorithm, protocol and channels NCCL 2.30.7 picks for the system and size, as a schedule",
}
_COLLS = {
    "ring": frozenset({"allreduce", "allgather", "reducescatter", "broadcast", "reduce"}),
    "tree": frozenset({"allreduce"}),
    "pat": frozenset({"allgather", "reducescatter"}),
    "nvls": frozenset({"allreduce"}),
    "nvlstree": frozenset({"allreduce"}),
    "auto": frozenset({"allreduce", "allgather", "reducescatter", "broadcast", "reduce"}),
}


@hookimpl
def collhub_producers() -> list[ProducerSpec]:
    return [
        ProducerSpec(
            name=name,
            summary=_SUMMARIES[name],
            factory=f"collhub_nccl._components:produce_{name}",
            params="collhub_nccl._params:NcclParams",
            collectives=_COLLS[name],
            min_ranks=2,
            capabilities=frozenset({"nccl", "baseline", "channels", "protocols"}),
        )
        for name in ("ring", "tree", "pat", "nvls", "nvlstree", "auto")
    ]


@hookimpl
def collhub_commands() -> list[tuple[str, Any]]:
    from ._cli import app

    return [("nccl", app)]
