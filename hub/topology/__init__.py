"""Network topologies: ASTRA-sim dimensions, explicit link graphs, presets, network.yml I/O.

See ``docs/topology.md``. Entry point: :func:`load_topology` (a compact string such as
``ring:8``, ``ring:4,switch:8``, ``torus:4x4`` or a ``network.yml`` path).

Names resolve on first use (PEP 562): ``ring:256`` imports neither the link-graph presets nor the
network.yml reader.
"""

from __future__ import annotations

import typing as _typing

from .._lazy import lazy_exports as _lazy_exports

#: public name -> the private module defining it
_LAZY: dict[str, str] = {
    "DEFAULT_BANDWIDTH": "._base",
    "DEFAULT_LATENCY": "._base",
    "Topology": "._base",
    "bytes_per_ns": "._base",
    "KINDS": "._dims",
    "Dimension": "._dims",
    "DimensionalTopology": "._dims",
    "blocks_link_graph": "._dims",
    "DimensionOrderRouter": "._graph",
    "FatTreeRouter": "._graph",
    "Link": "._graph",
    "LinkGraph": "._graph",
    "Router": "._graph",
    "ShortestPathRouter": "._graph",
    "load_topology": "._parse",
    "parse_topology": "._parse",
    "dgx1": "._presets",
    "fattree": "._presets",
    "hypercube": "._presets",
    "mesh": "._presets",
    "rail": "._presets",
    "torus": "._presets",
    "parse_network_yml": "._yaml",
    "read_network_yml": "._yaml",
}

if _typing.TYPE_CHECKING:  # for type checkers; at run time __getattr__ imports on first use
    from ._base import DEFAULT_BANDWIDTH, DEFAULT_LATENCY, Topology, bytes_per_ns
    from ._dims import KINDS, Dimension, DimensionalTopology, blocks_link_graph
    from ._graph import DimensionOrderRouter, FatTreeRouter, Link, LinkGraph, Router, ShortestPathRouter
    from ._parse import load_topology, parse_topology
    from ._presets import dgx1, fattree, hypercube, mesh, rail, torus
    from ._yaml import parse_network_yml, read_network_yml

__all__ = [
    "DEFAULT_BANDWIDTH",
    "DEFAULT_LATENCY",
    "KINDS",
    "Dimension",
    "DimensionOrderRouter",
    "DimensionalTopology",
    "FatTreeRouter",
    "Link",
    "LinkGraph",
    "Router",
    "ShortestPathRouter",
    "Topology",
    "blocks_link_graph",
    "bytes_per_ns",
    "dgx1",
    "fattree",
    "hypercube",
    "load_topology",
    "mesh",
    "parse_network_yml",
    "parse_topology",
    "rail",
    "read_network_yml",
    "torus",
]


__getattr__, __dir__ = _lazy_exports(__name__, _LAZY, globals())
