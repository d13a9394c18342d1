"""The abstract :class:`Topology` and the unit conversion shared by every topology kind."""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ._graph import LinkGraph

__all__ = ["DEFAULT_BANDWIDTH", "DEFAULT_LATENCY", "Topology", "bytes_per_ns", "atomic_write_text"]

#: Default per-link bandwidth in "GB/s" (ASTRA-sim's unit: 2^30 B/s), as in ASTRA-sim's example.
DEFAULT_BANDWIDTH = 50.0
#: Default per-hop latency in ns, as in ASTRA-sim's example.
DEFAULT_LATENCY = 500.0


def bytes_per_ns(bandwidth_gbps: float) -> float:
    """ASTRA-sim's conversion of a network-file bandwidth to bytes per ns: ``bw * 2^30 / 10^9``.

    The operation order is the one ASTRA-sim uses, so float results are bit-identical.
    """
    return bandwidth_gbps * (1 << 30) / 1_000_000_000


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` atomically with the usual mode (see :mod:`hub.atomic`)."""
    from ..atomic import write_file

    return write_file(path, text)


class Topology(ABC):
    """A network of ``npus`` NPUs (ids ``0..npus-1``).

    Two kinds exist: :class:`~hub.topology.DimensionalTopology` (ASTRA-sim's Ring /
    FullyConnected / Switch building blocks, possibly stacked in dimensions) and
    :class:`~hub.topology.LinkGraph` (explicit directed links, optional switch devices).
    """

    @property
    @abstractmethod
    def npus(self) -> int:
        """Number of NPUs."""

    @abstractmethod
    def to_string(self) -> str:
        """The compact string form, accepted back by :func:`~hub.topology.load_topology`."""

    @abstractmethod
    def describe(self) -> str:
        """A short human-readable description (one or a few lines)."""

    @abstractmethod
    def to_link_graph(self) -> LinkGraph:
        """The equivalent explicit link graph."""

    def network_yml(self) -> str:
        """ASTRA-sim ``network.yml`` text; only dimensional topologies have one."""
        from ..errors import UsageError

        raise UsageError(
            f"topology {self.to_string()!r} is a link graph and has no ASTRA-sim network.yml form",
            hint="ASTRA-sim's analytical backends take Ring/FullyConnected/Switch dimensions only, "
            "e.g. 'ring:8' or 'ring:4,switch:8'",
        )

    def write_network_yml(self, path: str | Path) -> Path:
        """Write :meth:`network_yml` to ``path`` atomically; returns the path."""
        return atomic_write_text(path, self.network_yml())

    def __str__(self) -> str:
        return self.to_string()
