"""The ``--set`` fast path (hub.cli._scalars) against PyYAML's safe loader, its reference: a value
it answers must be exactly what the loader reads (same type, same value); the rest it declines."""

from __future__ import annotations

import yaml
from hypothesis import given, settings, strategies as st

from hub.cli._scalars import NOT_PLAIN, plain_value
from hub.cli.components import parse_sets

ANSWERED = [
    "8", "0", "-3", "+12", "allreduce", "ring:8", "ring:4x2", "a.b-c_d", "hub.ring", "e", "Y2", "nan", "inf",
    "1MiB", "64K", "2GB", "1e", "10x",  # sizes: digits then letters are strings to YAML
]  # fmt: skip
ANSWERED += ["/tmp/ring128.xml", "./runs/a-b_c", "../data/x.et", "/", "/a//b/", "./.hidden"]  # file paths
DECLINED = [
    "yes", "No", "TRUE", "off", "On", "null", "Null", "~", "y", "n",  # YAML 1.1 booleans and nulls
    "0x10", "010", "1_000", "1:30", "1e3", "1.5", ".inf", "-.inf", ".nan",  # other numbers
    "[1, 2]", "{a: 1}", "'q'", '"q"', "a b", " 8", "8 ", "a:", "a: b", "a #c", "#c", "&x", "*x", "!t", "=",
    "2024-01-01", "", "x" * 300, "0x1f", "1.5MiB", "1_0K", "01K", "1e5", "1K:2",
    "/a b", "/a:b", "/a #c", "~/x", ".", "..", ".x/y", "/" + "x" * 300,  # not plain paths
]  # fmt: skip


def _yaml(raw: str) -> object:
    return yaml.safe_load(raw)


def test_answered_values_are_the_loaders() -> None:
    for raw in ANSWERED:
        value = plain_value(raw)
        assert value is not NOT_PLAIN, raw
        assert type(value) is type(_yaml(raw)) and value == _yaml(raw), raw


def test_doubtful_values_go_to_the_loader() -> None:
    for raw in DECLINED:
        assert plain_value(raw) is NOT_PLAIN, raw


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="aAeEnNoOyYtTfFsSxXbBKMiG019-+_.:~ #[]'\"/", max_size=8))
def test_any_short_token_is_the_loaders_or_declined(raw: str) -> None:
    value = plain_value(raw)
    if value is NOT_PLAIN:
        return
    assert type(value) is type(_yaml(raw)) and value == _yaml(raw), raw


def test_parse_sets_mixes_both_paths() -> None:
    assert parse_sets(["ranks=8", "ok=yes", "net=ring:8", "dims=[4, 2]", "n=0x10", "s=abc"]) == {
        "ranks": 8,
        "ok": True,
        "net": "ring:8",
        "dims": [4, 2],
        "n": 16,
        "s": "abc",
    }
