"""Entry point of the ``collhub-forest`` plugin (``[project.entry-points.collhub] forest``).

Component: producer ``forest.synthesize``. Factory and params are lazy ``"module:attr"`` strings,
so listing components imports nothing heavy.
"""

from __future__ import annotations

from hub.plugins import ProducerSpec, hookimpl

__all__ = ["COLLHUB_PLUGIN_API", "collhub_producers"]

COLLHUB_PLUGIN_API = "1.0"


@hookimpl
def collhub_producers() -> list[ProducerSpec]:
    """``forest.synthesize``: spanning-tree packing, chunked and pipelined along every tree."""
    return [
        ProducerSpec(
            name="synthesize",
            summary="Synthesize all-gather / reduce-scatter / all-reduce by spanning-tree packing, pipelined "
            "(certified against the cut bound)",
            factory="collhub_forest._synth:synthesize",
            params="collhub_forest._params:SynthesizeParams",
            collectives=frozenset({"allgather", "reducescatter", "allreduce"}),
            min_ranks=2,
            capabilities=frozenset({"synthesis", "topology-aware", "link-graphs", "heterogeneous"}),
        ),
    ]
