"""Entry point of the ``collhub-tacos`` plugin (``[project.entry-points.collhub] tacos``).

Component: producer ``tacos.synthesize``. Factory and params are lazy ``"module:attr"`` strings,
so listing components imports nothing heavy.
"""

from __future__ import annotations

from hub.plugins import ProducerSpec, hookimpl

__all__ = ["COLLHUB_PLUGIN_API", "collhub_producers"]

COLLHUB_PLUGIN_API = "1.0"


@hookimpl
def collhub_producers() -> list[ProducerSpec]:
    """``tacos.synthesize``: greedy link-chunk matching on the time-expanded network."""
    return [
        ProducerSpec(
            name="synthesize",
            summary="Synthesize all-gather / reduce-scatter / all-reduce for any topology (TACOS greedy link-chunk "
            "matching)",
            factory="collhub_tacos._synth:synthesize",
            params="collhub_tacos._params:SynthesizeParams",
            collectives=frozenset({"allgather", "reducescatter", "allreduce"}),
            min_ranks=2,
            capabilities=frozenset({"synthesis", "topology-aware", "link-graphs", "heterogeneous"}),
        ),
    ]
