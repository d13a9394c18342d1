"""Entry point of the ``collhub-mscclang`` plugin (``[project.entry-points.collhub] mscclang``).

Components: producers ``mscclang.ir`` and ``mscclang.program``, consumer ``mscclang.export``.
Factories and params are lazy ``"module:attr"`` strings, so listing components imports nothing.
"""

from __future__ import annotations

from hub.plugins import ConsumerSpec, ProducerSpec, hookimpl

__all__ = ["COLLHUB_PLUGIN_API", "collhub_consumers", "collhub_producers"]

COLLHUB_PLUGIN_API = "1.0"

_COLLS = frozenset({"allreduce", "allgather", "reducescatter", "alltoall", "broadcast", "reduce", "custom"})


@hookimpl
def collhub_producers() -> list[ProducerSpec]:
    """``mscclang.ir`` (MSCCL-IR XML import) and ``mscclang.program`` (MSCCLang-style programs)."""
    return [
        ProducerSpec(
            name="ir",
            summary="Import an MSCCL-IR XML file (MSCCLang, SCCL, TACCL, TE-CCL, RCCL)",
            factory="collhub_mscclang._components:produce_ir",
            params="collhub_mscclang._params:IRParams",
            collectives=_COLLS,
            capabilities=frozenset({"import", "msccl-ir"}),
        ),
        ProducerSpec(
            name="program",
            summary="Compile an MSCCLang-style Python program to an algorithm",
            factory="collhub_mscclang._components:produce_program",
            params="collhub_mscclang._params_program:ProgramParams",
            collectives=_COLLS,
            capabilities=frozenset({"dsl"}),
        ),
    ]


@hookimpl
def collhub_consumers() -> list[ConsumerSpec]:
    """``mscclang.export``: write MSCCL-IR XML for msccl-executor-nccl, RCCL or the old runtime."""
    return [
        ConsumerSpec(
            name="export",
            summary="Write MSCCL-IR XML for msccl-executor-nccl, RCCL or microsoft/msccl",
            factory="collhub_mscclang._components:consume_export",
            params="collhub_mscclang._params_export:ExportParams",
            collectives=_COLLS | {"gather", "scatter"},
            capabilities=frozenset({"export", "msccl-ir"}),
        ),
    ]
