"""YAML loading: positions, safe loading, duplicate keys, conflict markers, syntax errors."""

from __future__ import annotations

import pytest

from hub.errors import PipelineValidationError
from hub.pipeline._file.loader import Position, format_path, load_text


def _single_issue(text: str):
    with pytest.raises(PipelineValidationError) as info:
        load_text(text, "f.yaml")
    (issue,) = info.value.issues
    return issue


def test_positions_of_keys_and_values() -> None:
    loaded = load_text("version: 1\nsources:\n  r:\n    producer: hub.ring\n    transforms:\n      - use: hub.verify\n")
    assert loaded.keys[("sources", "r", "producer")] == Position(4, 5)
    assert loaded.values[("sources", "r", "producer")] == Position(4, 15)
    assert loaded.values[("sources", "r", "transforms", 0, "use")] == Position(6, 14)
    # Unknown paths fall back to the nearest located ancestor.
    assert loaded.locate(("sources", "r", "params", "ranks")) == Position(4, 5)


def test_format_path() -> None:
    assert format_path(("sources", "r", "transforms", 0, "use")) == "sources.r.transforms[0].use"


def test_python_tags_are_refused_and_nothing_runs(tmp_path) -> None:
    marker = tmp_path / "pwned"
    issue = _single_issue(f"version: !!python/object/apply:os.system ['touch {marker}']\n")
    assert not marker.exists()
    assert (issue.line, issue.column) == (1, 10)
    assert "python/object/apply:os.system" in issue.message
    assert issue.hint == "pipeline files are plain data; tags such as !!python/... are not allowed"


def test_duplicate_keys_are_reported() -> None:
    issue = _single_issue("version: 1\nsources: {}\nversion: 1\n")
    assert (issue.path, issue.line, issue.column) == ("version", 3, 1)
    assert issue.message == "duplicate key 'version' (first defined at line 1)"


def test_merge_conflict_markers() -> None:
    with pytest.raises(PipelineValidationError) as info:
        load_text("version: 1\n<<<<<<< HEAD\na: 1\n=======\na: 2\n>>>>>>> branch\n", "f.yaml")
    assert [(i.line, i.message) for i in info.value.issues] == [
        (2, "merge-conflict marker"),
        (4, "merge-conflict marker"),
        (6, "merge-conflict marker"),
    ]


def test_syntax_error_position_and_empty_file() -> None:
    issue = _single_issue("version: 1\nsources:\n  r: [1, 2\n")
    assert issue.line == 4 and issue.message.startswith("YAML error:")
    issue = _single_issue("   \n")
    assert issue.message == "the file is empty"
