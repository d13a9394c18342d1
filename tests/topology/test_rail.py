"""The rail preset: full mesh inside a node, one full mesh per local GPU index across nodes."""

from __future__ import annotations

import pytest

from hub.errors import TopologyFormatError
from hub.topology import load_topology, rail


def test_rail_links_and_routes() -> None:
    g = load_topology("rail:2x8@bw=100,lat=200")
    assert g.npus == 16 and g.switches == 0
    pairs = {(ln.src, ln.dst) for ln in g.links}
    # 8*7 in each of 2 nodes, plus GPU i <-> GPU 8+i
    assert len(pairs) == 2 * 56 + 2 * 8
    assert (3, 11) in pairs and (3, 12) not in pairs and (0, 7) in pairs
    assert all(ln.bandwidth == 100 and ln.latency == 200 for ln in g.links)
    # different node and index: across the node first (dimension 0), then along the rail
    assert [g.links[li].dst for li in g.route(3, 12)] == [4, 12]
    assert g.to_string() == "rail:2x8@bw=100,lat=200"
    assert len(rail(8, 8).links) == 64 * (7 + 7)


@pytest.mark.parametrize("spec", ["rail:8", "rail:0x4", "rail:1x1"])
def test_rail_errors(spec: str) -> None:
    with pytest.raises(TopologyFormatError):
        load_topology(spec)
