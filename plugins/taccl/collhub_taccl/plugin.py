"""Entry point of the ``collhub-taccl`` plugin (``[project.entry-points.collhub] taccl``).

Component: producer ``taccl.synthesize``. Factory and params are lazy ``"module:attr"`` strings,
so listing components imports neither the solver nor numpy.
"""

from __future__ import annotations

from hub.plugins import ProducerSpec, hookimpl

__all__ = ["COLLHUB_PLUGIN_API", "collhub_producers"]

COLLHUB_PLUGIN_API = "1.0"


@hookimpl
def collhub_producers() -> list[ProducerSpec]:
    """``taccl.synthesize``: TACCL-style sketch-guided synthesis (routing MILP on HiGHS)."""
    return [
        ProducerSpec(
            name="synthesize",
            summary="Synthesize a topology-aware algorithm, TACCL-style (routing MILP on HiGHS, ordering, exact "
            "timing)",
            factory="collhub_taccl._synth:produce_synthesize",
            params="collhub_taccl._params:SynthesizeParams",
            collectives=frozenset({"allgather", "alltoall", "reducescatter", "allreduce"}),
            min_ranks=2,
            capabilities=frozenset({"synthesis", "milp", "topology-aware", "taccl-sketch"}),
        )
    ]
