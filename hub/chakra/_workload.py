"""In-memory model of a workload trace: per-rank COMP and COMM_COLL nodes (ASTRA-sim style)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Protocol

from ._model import COMM_TYPE_OF, Collective, NodeType

__all__ = ["DanglingDependencyWarning", "Workload", "WorkloadNode", "collective_of_comm_type", "warn_dangling"]


class PendingRanks(Protocol):
    """The nodes of a lazy :class:`Workload`: how many per rank now, the objects on demand."""

    counts: list[int]

    def nodes(self) -> list[list[WorkloadNode]]: ...


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


class Workload:
    """A workload: one list of nodes per rank (index = rank).

    A workload read from files is lazy (:func:`hub.chakra.read_workload`): the read checks every
    node and keeps the files' bytes, and the :class:`WorkloadNode` objects are made when
    ``ranks`` is first used. ``rank_count`` and ``node_count()`` never make them.
    """

    version: str
    name: str
    #: GlobalMetadata attributes of rank 0's file, as read (name -> value)
    metadata: dict[str, Any]
    #: dependencies on nodes absent from their file, dropped when read: (rank, node id, missing id)
    dangling: list[tuple[int, int, int]]

    def __init__(
        self,
        ranks: list[list[WorkloadNode]],
        version: str = "0.0.4",
        name: str = "",
        metadata: dict[str, Any] | None = None,
        dangling: list[tuple[int, int, int]] | None = None,
    ) -> None:
        self._ranks: list[list[WorkloadNode]] | None = ranks
        self._pending: PendingRanks | None = None
        self.version = version
        self.name = name
        self.metadata = {} if metadata is None else metadata
        self.dangling = [] if dangling is None else dangling

    @classmethod
    def lazy(
        cls,
        pending: PendingRanks,
        version: str = "0.0.4",
        name: str = "",
        metadata: dict[str, Any] | None = None,
        dangling: list[tuple[int, int, int]] | None = None,
    ) -> Workload:
        """A workload whose nodes ``pending`` makes when they are first used."""
        wl = cls([], version, name, metadata, dangling)
        wl._ranks, wl._pending = None, pending
        return wl

    @property
    def ranks(self) -> list[list[WorkloadNode]]:
        if self._ranks is None:
            assert self._pending is not None
            self._ranks, self._pending = self._pending.nodes(), None
        return self._ranks

    @ranks.setter
    def ranks(self, value: list[list[WorkloadNode]]) -> None:
        self._ranks, self._pending = value, None

    @property
    def rank_count(self) -> int:
        return len(self._pending.counts) if self._pending is not None else len(self.ranks)

    def node_count(self) -> int:
        if self._pending is not None:
            return sum(self._pending.counts)
        return sum(len(r) for r in self.ranks)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Workload):
            return NotImplemented
        return (self.ranks, self.version, self.name, self.metadata, self.dangling) == (
            other.ranks,
            other.version,
            other.name,
            other.metadata,
            other.dangling,
        )

    __hash__ = None  # type: ignore[assignment]  # mutable, as the dataclass it replaces

    def __repr__(self) -> str:
        return (
            f"Workload(ranks={self.ranks!r}, version={self.version!r}, name={self.name!r}, "
            f"metadata={self.metadata!r}, dangling={self.dangling!r})"
        )

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
