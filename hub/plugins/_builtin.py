"""The core's own components, registered through the public hooks exactly like a third party.

Entry point: ``[project.entry-points.collhub] hub = "hub.plugins._builtin"``, so every id here is
``hub.<name>``. Factories and params models are ``"module:attr"`` strings: listing components
imports none of ``hub.algorithms``, ``hub.transforms`` or ``hub.sim``.
"""

from __future__ import annotations

from ._spec import ConsumerSpec, ProducerSpec, TransformSpec
from .hookspecs import hookimpl

__all__ = ["COLLHUB_PLUGIN_API", "collhub_consumers", "collhub_producers", "collhub_transforms"]

COLLHUB_PLUGIN_API = "1.0"

_BASIC = frozenset({"allreduce", "allgather", "reducescatter", "alltoall", "broadcast", "reduce"})


def _producer(name: str, factory: str, params: str, summary: str, collectives: frozenset[str]) -> ProducerSpec:
    return ProducerSpec(
        name=name,
        summary=summary,
        factory=f"hub.algorithms:{factory}",
        params=f"hub.algorithms:{params}",
        collectives=collectives,
        capabilities=frozenset({"builtin"}),
    )


@hookimpl
def collhub_producers() -> list[ProducerSpec]:
    """The built-in algorithm library (``hub.algorithms``)."""
    return [
        _producer(
            "ring",
            "produce_ring",
            "RingParams",
            "Ring algorithms: n-1 neighbour steps per phase, bandwidth-optimal",
            _BASIC,
        ),
        _producer(
            "direct",
            "produce_direct",
            "DirectParams",
            "Direct (fully connected) algorithms: every rank talks to every peer at once",
            _BASIC | {"gather", "scatter"},
        ),
        _producer(
            "halving_doubling",
            "produce_halving_doubling",
            "HalvingDoublingParams",
            "Recursive halving/doubling (Rabenseifner): log2(n) steps",
            frozenset({"allreduce", "allgather", "reducescatter"}),
        ),
        _producer(
            "double_binary_tree",
            "produce_double_binary_tree",
            "DoubleBinaryTreeParams",
            "NCCL-style double binary tree: two complementary trees, each on half the data",
            frozenset({"allreduce", "broadcast", "reduce"}),
        ),
        _producer(
            "hierarchical",
            "produce_hierarchical",
            "HierarchicalParams",
            "Two-level: intra-node rings, inter-node rings on the shards (local_size ranks per node)",
            frozenset({"allreduce", "allgather", "reducescatter", "alltoall"}),
        ),
    ]


@hookimpl
def collhub_transforms() -> list[TransformSpec]:
    """Algorithm -> Algorithm rewrites (``hub.transforms``)."""

    def t(name: str, factory: str, params: str, summary: str) -> TransformSpec:
        workload = summary.startswith("Workload ->")  # workload -> workload rewrites live in hub.workload
        package = "hub.workload" if workload else "hub.transforms"
        return TransformSpec(
            name=name,
            summary=summary,
            factory=f"{package}:{factory}",
            params=f"{package}:{params}",
            capabilities=frozenset({"builtin"}),
            inputs=frozenset({"workload" if workload else "algorithm"}),
        )

    return [
        t(
            "verify",
            "verify_transform",
            "VerifyParams",
            "Check structure, progress and semantics; pass the algorithm through unchanged",
        ),
        t("chunk", "chunk_transform", "ChunkParams", "Split every message into smaller chunks"),
        t("remap", "remap_transform", "RemapParams", "Renumber ranks (e.g. to match a physical placement)"),
        t(
            "instances",
            "instances_transform",
            "InstancesParams",
            "Run several copies of the algorithm side by side on disjoint data",
        ),
        t(
            "inline",
            "inline_transform",
            "InlineParams",
            "Workload -> workload: replace COMM_COLL nodes with their algorithm's SEND/RECV/COMP nodes",
        ),
        t(
            "overlap",
            "overlap_transform",
            "OverlapParams",
            "Workload -> workload: inline collectives, each chunk waiting only for its piece of the producer",
        ),
    ]


@hookimpl
def collhub_consumers() -> list[ConsumerSpec]:
    """Consumers of algorithms and workloads (``hub.transforms`` statistics, ``hub.sim``)."""
    return [
        ConsumerSpec(
            name="stats",
            summary="Count nodes, messages and bytes per rank and in total",
            factory="hub.transforms:stats_consumer",
            params="hub.transforms:StatsParams",
            inputs=frozenset({"algorithm"}),
            capabilities=frozenset({"builtin"}),
        ),
        ConsumerSpec(
            name="simulate",
            summary="Built-in simulator with ASTRA-sim's execution semantics",
            factory="hub.sim:simulate_consumer",
            params="hub.sim:SimulateParams",
            inputs=frozenset({"algorithm", "workload"}),
            capabilities=frozenset({"builtin", "congestion-aware"}),
        ),
    ]
