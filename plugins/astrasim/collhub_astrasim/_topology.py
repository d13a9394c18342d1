"""Turn a hub topology (string or ``network.yml`` path) into ASTRA-sim network dimensions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hub.errors import UsageError

from ._config import Dim

__all__ = ["dims_from_topology", "load_dims"]

_KIND_NAMES = {
    "ring": "Ring",
    "fullyconnected": "FullyConnected",
    "fc": "FullyConnected",
    "switch": "Switch",
}

_NOT_DIMENSIONAL_HINT = (
    "ASTRA-sim's analytical backends take only Ring/FullyConnected/Switch dimensions; approximate "
    "the topology with dimensions (a 2-D mesh a x b as ring:axb on the congestion-unaware backend, "
    "a hypercube 2^d as d Ring dims of 2 NPUs) and say so in the results"
)


def _kind_name(kind: Any, index: int) -> str:
    raw = str(getattr(kind, "value", kind))
    name = _KIND_NAMES.get(raw.replace("_", "").replace("-", "").lower())
    if name is None:
        raise UsageError(
            f"network dimension {index}: ASTRA-sim has no {raw!r} building block",
            hint=_NOT_DIMENSIONAL_HINT,
        )
    return name


def dims_from_topology(topology: Any, *, label: str = "topology") -> list[Dim]:
    """The ASTRA-sim dimensions of a loaded :class:`hub.topology.Topology`.

    Bandwidths pass through unchanged: the hub's topology bandwidth already means GiB/s, exactly
    as ASTRA-sim's network file does.
    """
    dims = getattr(topology, "dims", None)
    if not dims:
        raise UsageError(f"{label} is not a dimensional topology", hint=_NOT_DIMENSIONAL_HINT)
    return [
        Dim(kind=_kind_name(d.kind, i), npus=int(d.npus), bandwidth=float(d.bandwidth), latency=float(d.latency))
        for i, d in enumerate(dims)
    ]


def load_dims(spec: str | Path) -> list[Dim]:
    """Load ``spec`` with :func:`hub.topology.load_topology` and return its dimensions."""
    from hub.topology import load_topology

    return dims_from_topology(load_topology(spec), label=f"network {str(spec)!r}")
