"""Sweep expansion and ${var} interpolation."""

from __future__ import annotations

import pytest

from hub.pipeline import expand, interpolate
from hub.pipeline._file.matrix import UnknownVariable


def test_expand_is_the_cartesian_product_in_key_order() -> None:
    points = expand({"size": ["1MiB", "16MiB"], "network": ["ring:8", "switch:8", "torus:2x4"], "ranks": [8]})
    assert len(points) == 2 * 3 * 1
    assert points[0].as_dict() == {"size": "1MiB", "network": "ring:8", "ranks": 8}
    assert points[1].as_dict() == {"size": "1MiB", "network": "switch:8", "ranks": 8}  # last key but one varies
    assert points[5].as_dict() == {"size": "16MiB", "network": "torus:2x4", "ranks": 8}
    assert [p.index for p in points] == list(range(6))
    assert points[5].label == "size=16MiB, network=torus:2x4, ranks=8"
    assert points[5].slug == "005-size-16MiB_network-torus-2x4_ranks-8"
    assert [p.as_dict() for p in expand({})] == [{}]


def test_whole_string_keeps_type_embedded_formats_text() -> None:
    env = {"ranks": 8, "bw": 50.5, "on": True, "dims": [2, 4]}
    assert interpolate("${ranks}", env) == 8
    assert interpolate("${dims}", env) == [2, 4]
    assert interpolate("ring:${ranks}", env) == "ring:8"
    assert interpolate("${on}-${bw}", env) == "true-50.5"
    assert interpolate("$${ranks} stays", env) == "${ranks} stays"
    assert interpolate({"a": ["x", {"b": "${bw}"}]}, env) == {"a": ["x", {"b": 50.5}]}


def test_unknown_variable_names_its_path() -> None:
    with pytest.raises(UnknownVariable) as info:
        interpolate({"params": {"net": ["ok", "t:${nope}"]}}, {"ok": 1})
    assert info.value.name == "nope"
    assert info.value.path == ("params", "net", 1)
    assert interpolate("a${nope}", {}, strict=False) == "a${nope}"


def test_mapping_values_and_dotted_references() -> None:
    (p0, p1) = expand({"shape": [{"ranks": 8, "groups": 2}, {"ranks": 16, "groups": 4}]})
    env = p1.as_dict()
    assert interpolate({"ranks": "${shape.ranks}", "net": "ring:4,switch:${shape.groups}"}, env) == {
        "ranks": 16,
        "net": "ring:4,switch:4",
    }
    assert p0.label == "shape={ranks: 8, groups: 2}"
    with pytest.raises(UnknownVariable):
        interpolate("${shape.nope}", env)
