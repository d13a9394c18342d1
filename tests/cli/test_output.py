"""The CLI's JSON writer: the same JSON as ``json.dumps``, innermost containers on one line."""

from __future__ import annotations

import json
from enum import Enum
from typing import Any

import pytest

from hub.cli._output import dumps_json


class Color(Enum):
    red = "red"


CASES: list[Any] = [
    {},
    {"a": []},
    {"a": {}, "b": [{}], "c": [[]]},
    {"ranks": [1, 2, 3], "nested": {"x": 1.5, "y": None, "z": True, "s": 'q"uote\n'}},
    {"links": [{"link": "0->1", "bytes": 10}, {"link": "1->0", "bytes": 11, "more": [1]}]},
    {3: "int key", 2.5: "float key", True: "bool key", None: "none key"},
    {"rows": [[1, 2], [3, [4, 5]]], "tuple": (1, "a")},
    {"set": {3, 1, 2}, "enum": Color.red, "mixed": [1, {"a": {"b": 2}}, "x"]},
    {"nan": float("nan"), "big": 2**70, "unicode": "µs ✓"},
]


@pytest.mark.parametrize("obj", CASES)
def test_parses_to_what_json_dumps_writes(obj: Any) -> None:
    from hub.cli._output import _default

    assert json.loads(dumps_json(obj)) == json.loads(json.dumps(obj, default=_default))


def test_lists_of_scalars_and_records_are_one_line_other_objects_a_line_per_key() -> None:
    text = dumps_json(
        {"metrics": {"time_ns": 5, "mode": "aware"}, "finish": [5, 5], "path": [{"rank": 0, "end_ns": 5}], "none": {}}
    )
    assert text.splitlines() == [
        "{",
        '  "metrics": {',
        '    "time_ns": 5,',
        '    "mode": "aware"',
        "  },",
        '  "finish": [5, 5],',
        '  "path": [',
        '    {"rank": 0, "end_ns": 5}',
        "  ],",
        '  "none": {}',
        "}",
    ]


@pytest.mark.parametrize("obj", CASES)
def test_without_the_c_accelerator_the_text_is_the_same(obj: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    fast = dumps_json(obj)
    monkeypatch.setattr(json.encoder, "c_make_encoder", None)
    assert dumps_json(obj) == fast
