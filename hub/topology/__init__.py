"""Network topologies: ASTRA-sim dimensions, explicit link graphs, presets, network.yml I/O.

See ``docs/topology.md``. Entry point: :func:`load_topology` (a compact string such as
``ring:8``, ``ring:4,switch:8``, ``torus:4x4`` or a ``network.yml`` path).
"""

from __future__ import annotations

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
