"""System strings, presets and the YAML form; errors name the input and carry a hint."""

from __future__ import annotations

from pathlib import Path

import pytest

from collhub_nccl._system import network_of, parse_system
from collhub_nccl._tuning import choose
from hub.errors import UsageError
from hub.topology import load_topology


def test_string_forms() -> None:
    s = parse_system("hopper:8x4@nic=200G")
    assert (s.gen, s.gpus_per_node, s.nodes, s.ranks, s.nic_gbps) == ("hopper", 8, 4, 32, 200.0)
    assert parse_system("ampere:1x16@nic=100").nic_gbps == 100.0
    assert parse_system("volta:8x2").nic_gbps == 400.0


def test_presets() -> None:
    from dataclasses import replace

    assert replace(parse_system("dgx-h100x4"), label="") == parse_system("hopper:8x4@nic=400G")
    assert parse_system("dgx-h100:4").ranks == 32
    a = parse_system("dgx-a100")
    assert (a.gen, a.gpus_per_node, a.nodes, a.nic_gbps) == ("ampere", 8, 1, 200.0)


def test_yaml_file_and_graph_override(tmp_path: Path) -> None:
    f = tmp_path / "cluster.yaml"
    f.write_text("gen: hopper\ngpus_per_node: 8\nnodes: 4\nnic: 400G\n")
    assert parse_system(str(f)) == parse_system("hopper:8x4@nic=400G")
    # a search result from a real log replaces the model: 4 channels of 12 GB/s over PXN
    f.write_text(
        "preset: dgx-h100\nnodes: 2\ncpu: amd\n"
        "graphs:\n  ring: {channels: 4, bw_intra: 12, bw_inter: 12, type_inter: PXN}\n"
    )
    s = parse_system(str(f))
    assert (s.ring.channels, s.ring.bw_inter, s.ring.type_inter, s.cpu_vendor) == (4, 12.0, "PXN", 2)
    assert s.channels == 8
    assert choose(s, "AllReduce", 1 << 20).channels <= 8
    inline = parse_system("{gen: ampere, gpus_per_node: 1, nodes: 8, nic: 200G}")
    assert inline.ranks == 8


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("pascal:8x2", "cannot read"),
        ("hopper:1x1", "below 2 ranks"),
        ("{gen: hopper, gpus_per_node: 8, nodes: x}", "integers"),
        ("{gen: hopper, gpus_per_node: 8, nodes: 2, colour: red}", "unknown keys"),
        ("{gen: hopper, gpus_per_node: 8, nodes: 2, graphs: {ring: {channels: 99}}}", "0..64"),
        ("{gen: hopper, gpus_per_node: 8, nodes: 2, graphs: {ring: {type_inter: WIFI}}}", "type_inter"),
        ("{gen: hopper, gpus_per_node: 8, nodes: 2, cpu: arm}", "cpu"),
        ("{gen: hopper: [", "invalid YAML"),
        ("missing.yaml", "no such file"),
    ],
)
def test_bad_systems(text: str, words: str) -> None:
    with pytest.raises(UsageError, match=words) as exc:
        parse_system(text)
    assert exc.value.hint


def test_network_strings_load() -> None:
    for text in ("dgx-h100x4", "dgx-a100", "ampere:1x16@nic=100G", "volta:8x2@nic=100G"):
        s = parse_system(text)
        assert load_topology(network_of(s)).npus == s.ranks
