"""Entry point of the ``collhub-mscclpp`` plugin (``[project.entry-points.collhub] mscclpp``).

Components: producer ``mscclpp.plan``, consumer ``mscclpp.export``. Factories and params are lazy
``"module:attr"`` strings, so listing components imports nothing.
"""

from __future__ import annotations

from hub.plugins import ConsumerSpec, ProducerSpec, hookimpl

__all__ = ["COLLHUB_PLUGIN_API", "collhub_consumers", "collhub_producers"]

COLLHUB_PLUGIN_API = "1.0"

_IN = frozenset({"allreduce", "allgather", "reducescatter", "alltoall", "custom"})
_OUT = _IN | {"broadcast", "reduce", "gather", "scatter"}


@hookimpl
def collhub_producers() -> list[ProducerSpec]:
    """``mscclpp.plan``: import an MSCCL++ execution plan."""
    return [
        ProducerSpec(
            name="plan",
            summary="Import an MSCCL++ execution plan (JSON): one-sided puts, signals, packets, NVLS",
            factory="collhub_mscclpp._components:produce_plan",
            params="collhub_mscclpp._params:PlanParams",
            collectives=_IN,
            capabilities=frozenset({"import", "mscclpp", "one-sided"}),
        ),
    ]


@hookimpl
def collhub_consumers() -> list[ConsumerSpec]:
    """``mscclpp.export``: write an execution plan for the MSCCL++ executor."""
    return [
        ConsumerSpec(
            name="export",
            summary="Write an MSCCL++ execution plan the MSCCL++ executor loads",
            factory="collhub_mscclpp._components:consume_export",
            params="collhub_mscclpp._params_export:ExportParams",
            collectives=_OUT,
            capabilities=frozenset({"export", "mscclpp", "one-sided"}),
        ),
    ]
