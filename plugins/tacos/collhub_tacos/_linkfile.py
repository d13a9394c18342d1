"""Link-graph files: any collhub link graph written out as JSON, for topologies no preset names.

Format (units as everywhere in collhub: bandwidth GB/s = 2^30 B/s, latency ns)::

    {"npus": 4, "switches": 0,
     "links": [[0, 1, 50, 500], [1, 0, 50, 500], ...]}     # [src, dst, bandwidth, latency]

Devices ``0..npus-1`` are NPUs, ``npus..npus+switches-1`` switches. ``"bidirectional": true``
adds every link's reverse as well.
"""

from __future__ import annotations

import json
from pathlib import Path

from hub.errors import TopologyFormatError
from hub.topology import Link, LinkGraph, Topology, load_topology

__all__ = ["load_any_topology", "read_link_file"]


def read_link_file(path: str | Path) -> LinkGraph:
    """Read a link-graph JSON file (see the module docstring)."""
    p = Path(path)
    if not p.is_file():
        raise TopologyFormatError(f"link-graph file {p} not found")
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TopologyFormatError(f"{p}: not JSON ({exc})", path=str(p)) from None
    if not isinstance(data, dict) or not isinstance(data.get("npus"), int) or not isinstance(data.get("links"), list):
        raise TopologyFormatError(
            f"{p}: expected an object with integer 'npus' and a 'links' list",
            hint='e.g. {"npus": 2, "links": [[0, 1, 50, 500], [1, 0, 50, 500]]}',
        )
    links: list[Link] = []
    for i, item in enumerate(data["links"]):
        if (
            not isinstance(item, list)
            or len(item) != 4
            or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in item)
            or int(item[0]) != item[0]
            or int(item[1]) != item[1]
        ):
            raise TopologyFormatError(f"{p}: links[{i}] = {item!r} is not [src, dst, bandwidth, latency]", path=str(p))
        links.append(Link(int(item[0]), int(item[1]), float(item[2]), float(item[3])))
        if data.get("bidirectional"):
            links.append(Link(int(item[1]), int(item[0]), float(item[2]), float(item[3])))
    try:
        return LinkGraph(data["npus"], links, switches=int(data.get("switches", 0)), name=p.name)
    except TopologyFormatError as exc:
        raise TopologyFormatError(f"{p}: {exc.message}", hint=exc.hint, path=str(p)) from None


def load_any_topology(spec: str | Path | Topology) -> Topology:
    """A topology string, an ASTRA-sim network.yml, or a link-graph ``.json`` file."""
    if isinstance(spec, (str, Path)) and str(spec).strip().lower().endswith(".json"):
        return read_link_file(str(spec).strip())
    return load_topology(spec)
