"""In-memory model of a workload trace: per-rank COMP and COMM_COLL nodes (ASTRA-sim style)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

from ._model import COMM_TYPE_OF, Collective, NodeType

__all__ = ["DanglingDependencyWarning", "Workload", "WorkloadNode", "collective_of_comm_type", "warn_dangling"]


class DanglingDependencyWarning(UserWarning):
    """A workload names dependencies on nodes its file does not hold (dropped when read)."""


def warn_dangling(source: str, dangling: list[tuple[int, int, int]]) -> None:
    """One warning for all dangling dependencies of a read: how many, and the first one."""
    ranks = len({r for r, _n, _d in dangling})
    r, n, d = dangling[0]
    warnings.warn(
        DanglingDependencyWarning(
            f"{source}: {len(dangling)} dependenc{'y' if len(dangling) == 1 else 'ies'} on absent nodes in "
            f"{ranks} rank file(s), treated as satisfied (first: rank {r}, node {n} -> {d})"
        ),
        stacklevel=3,
    )


def collective_of_comm_type(comm_type: int) -> Collective:
    for coll, value in COMM_TYPE_OF.items():
        if value == comm_type:
            return coll
    return Collective.CUSTOM


@dataclass
class WorkloadNode:
    """One workload node. ``type`` is a Chakra NodeType (COMP, COMM_COLL, COMM_SEND, COMM_RECV...).

    ``attrs`` keeps every attribute as read (name -> Python value); the named fields are the
    ones collhub interprets.
    """

    id: int
    name: str
    type: NodeType
    deps: list[int] = field(default_factory=list)  # ids (data_deps + ctrl_deps)
    duration_micros: int = 0
    comm_type: int | None = None  # CollectiveCommType for COMM_COLL
    comm_size: int | None = None
    comm_src: int | None = None
    comm_dst: int | None = None
    comm_tag: int | None = None
    is_cpu_op: bool = False
    pg_name: str = ""
    attrs: dict[str, Any] = field(default_factory=dict)
    #: the ids of ``deps`` that the file listed as ``ctrl_deps`` (the rest were ``data_deps``)
    ctrl_deps: list[int] = field(default_factory=list)
    #: the ``inputs`` / ``outputs`` tensor descriptions (IOInfo: values, shapes, types), as read
    inputs: dict[str, str] | None = None
    outputs: dict[str, str] | None = None
    start_time_micros: int = 0

    @property
    def collective(self) -> Collective | None:
        if self.type != NodeType.COLL or self.comm_type is None:
            return None
        return collective_of_comm_type(self.comm_type)


@dataclass
class Workload:
    """A workload: one list of nodes per rank (index = rank)."""

    ranks: list[list[WorkloadNode]]
    version: str = "0.0.4"
    name: str = ""
    #: GlobalMetadata attributes of rank 0's file, as read (name -> value)
    metadata: dict[str, Any] = field(default_factory=dict)
    #: dependencies on nodes absent from their file, dropped when read: (rank, node id, missing id)
    dangling: list[tuple[int, int, int]] = field(default_factory=list)

    @property
    def rank_count(self) -> int:
        return len(self.ranks)

    def node_count(self) -> int:
        return sum(len(r) for r in self.ranks)

    @classmethod
    def single_collective(cls, collective: Collective, ranks: int, size: int, *, name: str | None = None) -> Workload:
        """The microbenchmark shape: one COMM_COLL node per rank."""
        coll = Collective.parse(collective)
        if coll not in COMM_TYPE_OF:
            raise ValueError(f"collective {coll} has no Chakra CollectiveCommType")
        label = name or f"{coll.value}_{ranks}npus_{size}B"
        return cls(
            ranks=[
                [WorkloadNode(id=0, name=label, type=NodeType.COLL, comm_type=COMM_TYPE_OF[coll], comm_size=int(size))]
                for _ in range(ranks)
            ],
            name=label,
        )
