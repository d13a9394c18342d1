"""Topology strings, network.yml I/O, link graphs and presets."""

from __future__ import annotations

import pytest

from hub.errors import TopologyFormatError, UsageError
from hub.topology import Dimension, DimensionalTopology, LinkGraph, load_topology, parse_network_yml


def test_reads_astrasim_example(astrasim_example):
    t = load_topology(astrasim_example / "network.yml")
    assert t.dims == (Dimension("Ring", 8, 50.0, 500.0),) and t.npus == 8


@pytest.mark.parametrize(
    "spec, npus",
    [
        ("ring:8", 8),
        ("switch:16", 16),
        ("fc:8", 8),
        ("fullyconnected:8", 8),
        ("ring:4,switch:8", 32),
        ("mesh:4x4", 16),
        ("torus:4x4x4", 64),
        ("hypercube:3", 8),
        ("dgx1", 8),
        ("fattree:4x8", 32),
    ],
)
def test_strings_round_trip(spec, npus):
    t = load_topology(spec)
    assert t.npus == npus
    assert load_topology(t.to_string()).to_string() == t.to_string()


def test_overrides_and_globals():
    t = load_topology("ring:4@bw=200,lat=50,switch:8;lat=1000")
    assert t.dims == (Dimension("Ring", 4, 200, 50), Dimension("Switch", 8, 50, 1000))
    assert load_topology("ring:8").dims[0] == Dimension("Ring", 8, 50, 500)


def test_network_yml_round_trip(tmp_path):
    t = load_topology("ring:2@bw=200,lat=50,fc:8@bw=100,lat=500,switch:4@bw=50,lat=2000")
    p = t.write_network_yml(tmp_path / "net" / "network.yml")
    assert load_topology(p) == t
    assert "topology: [ Ring, FullyConnected, Switch ]" in p.read_text()
    assert t.coords(47) == (1, 7, 2)


@pytest.mark.parametrize(
    "text, match",
    [
        ("topology: Ring\nnpus_count: [8]\nbandwidth: [50]\nlatency: [500]", "'topology' must be a YAML list"),
        ("topology: [Ring]\nnpus_count: [8]\nbandwidth: 50\nlatency: [500]", "'bandwidth' must be a YAML list"),
        ("topology: [Ring]\nnpus_count: [8]\nbandwidth: [50]", "missing key 'latency'"),
        ("topology: [Ring, Switch]\nnpus_count: [8]\nbandwidth: [50]\nlatency: [500]", "differ in length"),
        ("topology: [ring]\nnpus_count: [8]\nbandwidth: [50]\nlatency: [500]", "not a building block"),
        ("topology: [Ring]\nnpus_count: [1]\nbandwidth: [50]\nlatency: [500]", "must be an integer > 1"),
        ("topology: [Ring\n", "not valid YAML"),
        ("!!python/object/apply:os.system ['true']", "not valid YAML"),
    ],
)
def test_network_yml_errors(text, match):
    with pytest.raises(TopologyFormatError, match=match):
        parse_network_yml(text)


@pytest.mark.parametrize(
    "spec, match",
    [
        ("rng:8", "unknown kind 'rng'"),
        ("ring:8@bww=3", "unknown option"),
        ("ring:1", "at least 2"),
        ("mesh:4x4,ring:2", "cannot be combined"),
        ("ring:8;spines=2", "fattree only"),
        ("ring:x", "shape"),
        ("", "empty"),
    ],
)
def test_string_errors(spec, match):
    with pytest.raises(TopologyFormatError, match=match):
        load_topology(spec)


def test_missing_file():
    with pytest.raises(TopologyFormatError, match="not found"):
        load_topology("/nonexistent/network.yml")


def test_link_graph_network_yml_refused():
    with pytest.raises(UsageError):
        load_topology("torus:4x4").network_yml()


def _hops(g: LinkGraph, a: int, b: int) -> list[tuple[int, int]]:
    return [(g.links[i].src, g.links[i].dst) for i in g.route(a, b)]


def test_dimensional_to_link_graph_matches_astrasim_devices():
    g = load_topology("switch:8").to_link_graph()
    assert g.switches == 1 and _hops(g, 3, 5) == [(3, 8), (8, 5)]  # the switch is device N
    r = load_topology("ring:8").to_link_graph()
    assert len(r.links) == 16 and _hops(r, 0, 4) == [(0, 1), (1, 2), (2, 3), (3, 4)]
    assert len(load_topology("fc:8").to_link_graph().links) == 56


def test_presets_structure():
    assert len(load_topology("mesh:4x4").links) == 2 * 2 * 4 * 3
    assert len(load_topology("torus:4x4x4").links) == 64 * 6
    h = load_topology("hypercube:3")
    assert len(h.links) == 24 and _hops(h, 0, 7) == [(0, 1), (1, 3), (3, 7)]  # e-cube
    d = load_topology("dgx1@bw=25")
    assert all(len(d.out_links[i]) == 4 for i in range(8)) and d.diameter() == 2
    assert d.in_bandwidth(0) == 25 * 6  # six NVLinks per GPU
    f = load_topology("fattree:2x4")
    assert _hops(f, 0, 7) == [(0, 8), (8, 13), (13, 9), (9, 7)]  # spine = 7 mod 4
    assert load_topology("fattree:4x8;spines=2").switches == 6


def test_torus_routes_dimension_order_ties_clockwise():
    t = load_topology("torus:4x4")
    assert _hops(t, 0, 10) == [(0, 1), (1, 2), (2, 6), (6, 10)]
    assert _hops(t, 3, 1) == [(3, 0), (0, 1)]


def test_describe():
    assert "32 NPUs" in load_topology("ring:4,switch:8").describe()
    assert "routing" in load_topology("dgx1").describe()
    assert isinstance(load_topology("ring:8"), DimensionalTopology)


def test_hint_suggests_kind():
    with pytest.raises(TopologyFormatError) as ei:
        load_topology("rng:8")
    assert "did you mean 'ring'" in (ei.value.hint or "")
