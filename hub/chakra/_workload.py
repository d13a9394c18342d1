"""In-memory model of a workload trace: per-rank COMP and COMM_COLL nodes (ASTRA-sim style)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ._model import COMM_TYPE_OF, Collective, NodeType

__all__ = ["Workload", "WorkloadNode", "collective_of_comm_type"]


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

    @property
    def rank_count(self) -> int:
        return len(self.ranks)

    def node_count(self) -> int:
        return sum(len(r) for r in self.ranks)

    @classmethod
    def single_collective(
        cls, collective: Collective, ranks: int, size: int, *, name: str | None = None
    ) -> "Workload":
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
