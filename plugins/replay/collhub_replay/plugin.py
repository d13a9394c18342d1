"""pluggy registration of the ``replay`` plugin (entry point ``collhub: replay``).

Only descriptors live here; the factory and params are ``"module:attr"`` strings, so listing
components never imports torch.
"""

from __future__ import annotations

from hub.plugins import ConsumerSpec, hookimpl

COLLHUB_PLUGIN_API = "1.0"

_CHECKED = frozenset({"allreduce", "allgather", "reducescatter", "alltoall", "broadcast", "reduce"})


@hookimpl
def collhub_consumers() -> list[ConsumerSpec]:
    return [
        ConsumerSpec(
            name="run",
            summary="Replay the algorithm on NCCL (GPUs) or gloo (CPUs) via torch.distributed: check #wrong, "
            "time it beside the native collective (nccl-tests table)",
            factory="collhub_replay._consumer:consume_run",
            params="collhub_replay._params:ReplayParams",
            collectives=_CHECKED,
            min_ranks=2,
            inputs=frozenset({"algorithm"}),
            capabilities=frozenset({"measurement", "nccl", "gloo", "correctness-check"}),
        )
    ]
