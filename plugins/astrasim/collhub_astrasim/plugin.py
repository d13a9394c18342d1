"""pluggy registration of the ``astrasim`` plugin (entry point ``collhub: astrasim``).

Only descriptors live here; factories and params are ``"module:attr"`` strings so that listing
components imports nothing heavy.
"""

from __future__ import annotations

from hub.plugins import ConsumerSpec, ProducerSpec, hookimpl

_RUNNABLE = frozenset({"allreduce", "allgather", "reducescatter", "alltoall"})


@hookimpl
def collhub_producers() -> list[ProducerSpec]:
    return [
        ProducerSpec(
            name="custom",
            summary="Import an ASTRA-sim custom-collective Chakra ET set (timing only: no buffer semantics)",
            factory="collhub_astrasim._custom:produce_custom",
            params="collhub_astrasim._custom:CustomParams",
            capabilities=frozenset({"no-semantics"}),
        )
    ]


@hookimpl
def collhub_consumers() -> list[ConsumerSpec]:
    return [
        ConsumerSpec(
            name="bundle",
            summary="Write a self-contained ASTRA-sim input set (ETs, system.json, network.yml, run.sh)",
            factory="collhub_astrasim._bundle:consume_bundle",
            params="collhub_astrasim._bundle:BundleParams",
            collectives=_RUNNABLE,
            inputs=frozenset({"algorithm", "workload"}),
            capabilities=frozenset({"files"}),
        ),
        ConsumerSpec(
            name="run",
            summary="Run an ASTRA-sim analytical binary on the bundle and report time, algbw and busbw",
            factory="collhub_astrasim._run:consume_run",
            params="collhub_astrasim._run:RunParams",
            collectives=_RUNNABLE,
            inputs=frozenset({"algorithm", "workload"}),
            capabilities=frozenset({"simulation", "external-binary"}),
        ),
    ]
