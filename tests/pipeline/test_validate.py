"""Validation: every issue at once, each with file:line:col (1-based), YAML path and hint.

Line and column numbers in the assertions were counted by hand in the texts below.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hub.errors import Issue, PipelineValidationError
from hub.pipeline import ManagerSpec, load_pipeline, validate_pipeline, validate_text

STRUCTURE = """\
version: 1
sources:
  ring:
    producer: t.line
    parms: {ranks: 4}
  dbt:
    params: {ranks: 4}
consumers:
  sim:
    use: t.cost
    params: {size: 1}
on_error: maybe
"""

MEANING = """\
version: 1
requires: ["collhub>=0.1", "collhub-nonexistent-xyz>=1.0"]
vars: {bw: 2.0}
matrix:
  size: [1000, 2000]
  ranks: [4, 1]
sources:
  a:
    producer: t.lin
    params: {ranks: "${ranks}"}
  b:
    producer: t.line
    params: {ranks: "${rank}", chunks: 0}
    transforms:
      - {use: t.cost}
  c:
    producer: mscclang.ir
  d:
    producer: t.line
    params: {ranks: "${ranks}", collective: alltoall}
consumers:
  sim:
    use: t.cost
    params: {size: "${size}", bw: "${bw}", extra: 1}
"""


def _issues(text: str, spec: ManagerSpec, file: str = "p.yaml") -> list[Issue]:
    with pytest.raises(PipelineValidationError) as info:
        validate_text(text, file, manager_spec=spec)
    return info.value.issues


def _by_path(issues: list[Issue]) -> dict[str, Issue]:
    out: dict[str, Issue] = {}
    for i in issues:
        assert i.path not in out, f"two issues at {i.path}: {out[i.path]} / {i}"
        out[i.path] = i
    return out


def test_structure_errors_all_reported_with_positions(tspec: ManagerSpec) -> None:
    issues = _issues(STRUCTURE, tspec)
    found = _by_path(issues)
    assert set(found) == {"sources.ring.parms", "sources.dbt.producer", "on_error"}
    parms = found["sources.ring.parms"]
    assert (parms.file, parms.line, parms.column) == ("p.yaml", 5, 5)
    assert parms.message == "unknown key 'parms'"
    assert parms.hint == "did you mean 'params'?"
    missing = found["sources.dbt.producer"]
    assert (missing.line, missing.column) == (6, 3)  # the key of the mapping lacking it
    assert "required key 'producer' is missing" == missing.message
    on_error = found["on_error"]
    assert (on_error.line, on_error.column) == (12, 11)
    assert "'fail' or 'continue'" in on_error.message and "'maybe'" in on_error.message
    # Issues come sorted by position, and str() gives the file:line:col form.
    assert [i.line for i in issues] == [5, 6, 12]
    assert str(parms) == "p.yaml:5:5: sources.ring.parms: unknown key 'parms' (hint: did you mean 'params'?)"


def test_meaning_errors_all_reported_with_positions(tspec: ManagerSpec) -> None:
    found = _by_path(_issues(MEANING, tspec))
    assert set(found) == {
        "requires[1]",
        "sources.a.producer",
        "sources.b.params.ranks",
        "sources.b.params.chunks",
        "sources.b.transforms[0].use",
        "sources.c.producer",
        "sources.d.params.ranks",
        "sources.d.params.collective",
        "consumers.sim.params.extra",
    }
    req = found["requires[1]"]
    assert (req.line, req.column) == (2, 28)
    assert req.message == "collhub-nonexistent-xyz is not installed (required: collhub-nonexistent-xyz>=1.0)"
    assert req.hint == "run: collhub install 'collhub-nonexistent-xyz>=1.0'"

    typo = found["sources.a.producer"]
    assert (typo.line, typo.column) == (9, 15)
    assert typo.message == "unknown producer 't.lin'"
    assert typo.hint == "did you mean t.line?"

    var = found["sources.b.params.ranks"]
    assert (var.line, var.column) == (13, 21)
    assert var.message == "unknown variable ${rank}"
    assert var.hint == "did you mean ${ranks}?"

    # The other field of the same params is still checked although ranks cannot be resolved.
    chunks = found["sources.b.params.chunks"]
    assert (chunks.line, chunks.column) == (13, 40)  # the value 0
    assert "greater than or equal to 1" in chunks.message and "(got 0)" in chunks.message

    kind = found["sources.b.transforms[0].use"]
    assert (kind.line, kind.column) == (15, 15)
    assert kind.message == "t.cost is a consumer, not a transform"
    assert kind.hint == "did you mean the transform t.tag?"

    plugin = found["sources.c.producer"]
    assert (plugin.line, plugin.column) == (17, 15)
    assert plugin.message == "producer 'mscclang.ir' is provided by plugin collhub-mscclang, which is not installed"
    assert plugin.hint == "collhub install collhub-mscclang"

    # ranks: [4, 1] -> 1 violates ge=2 at 2 of the 4 points (size x ranks).
    ranks = found["sources.d.params.ranks"]
    assert (ranks.line, ranks.column) == (20, 21)
    assert "greater than or equal to 2" in ranks.message
    assert "(at 2 of 4 points, e.g. size=1000, ranks=1)" in ranks.message

    coll = found["sources.d.params.collective"]
    assert (coll.line, coll.column) == (20, 45)  # the value alltoall
    assert coll.message == "t.line does not implement alltoall (at 2 of 4 points, e.g. size=1000, ranks=4)"

    extra = found["consumers.sim.params.extra"]
    assert (extra.line, extra.column) == (24, 44)
    assert extra.message == "unknown key 'extra'"


def test_bare_component_name_suggests_qualified_id(tspec: ManagerSpec) -> None:
    text = "version: 1\nsources:\n  s: {producer: line, params: {ranks: 4}}\n"
    (issue,) = _issues(text, tspec)
    assert issue.path == "sources.s.producer"
    assert (issue.line, issue.column) == (3, 17)
    assert issue.hint == "did you mean t.line?"


def test_unknown_variable_in_embedded_string_and_output(tspec: ManagerSpec) -> None:
    text = (
        "version: 1\n"
        "matrix: {n: [4]}\n"
        "sources:\n"
        '  s: {producer: t.line, params: {ranks: "${n}"}}\n'
        "consumers:\n"
        "  c: {use: t.cost, params: {size: 8}, description: x}\n"
        'output: "runs/${n}-${nope}"\n'
    )
    issues = _issues(text, tspec)
    assert {(i.path, i.line, i.column) for i in issues} == {("output", 7, 9)}
    messages = sorted(i.message for i in issues)
    assert messages == ["${n} is a matrix variable; output may use only vars", "unknown variable ${nope}"]


def test_requires_version_too_old_suggests_upgrade(tspec: ManagerSpec) -> None:
    text = 'version: 1\nrequires: ["pydantic>=999"]\nsources:\n  s: {producer: t.line, params: {ranks: 4}}\n'
    (issue,) = _issues(text, tspec)
    assert issue.path == "requires[0]"
    assert issue.message.startswith("pydantic ")
    assert issue.message.endswith("is installed, but the pipeline requires pydantic>=999")
    assert issue.hint == "run: collhub install --upgrade 'pydantic>=999'"


def test_requires_satisfied_and_valid_file_passes(tspec: ManagerSpec, tmp_path: Path) -> None:
    f = tmp_path / "ok.yaml"
    f.write_text(
        'version: 1\nrequires: ["collhub>=0.1", "pydantic>=2"]\nmatrix: {n: [2, 4, 8]}\n'
        'sources:\n  s: {producer: t.line, params: {ranks: "${n}"}}\n'
        "consumers:\n  c: {use: t.cost, params: {size: 64}}\n"
    )
    vp = validate_pipeline(f, manager_spec=tspec)
    assert [p.as_dict() for p in vp.points] == [{"n": 2}, {"n": 4}, {"n": 8}]
    assert vp.name == "ok"


def test_workload_and_names(tspec: ManagerSpec) -> None:
    text = "version: 1\nvars: {n: 4}\nmatrix: {n: [4], 'bad name': [1]}\nsources:\n  'x/y': {producer: t.line}\n"
    found = _by_path(_issues(text, tspec))
    assert set(found) == {"matrix.bad name", "sources.x/y"}
    assert found["matrix.bad name"].hint.startswith("use letters, digits and '_'")
    assert (found["sources.x/y"].line, found["sources.x/y"].column) == (5, 3)


def test_consumer_sources_filter_checked(tspec: ManagerSpec) -> None:
    text = (
        "version: 1\n"
        "sources:\n"
        "  ring: {producer: t.line, params: {ranks: 4}}\n"
        "consumers:\n"
        "  c: {use: t.cost, params: {size: 8}, sources: [rign]}\n"
    )
    (issue,) = _issues(text, tspec)
    assert issue.path == "consumers.c.sources[0]"
    assert issue.hint == "did you mean ring?"
    assert (issue.line, issue.column) == (5, 49)  # the item inside [...]


def test_load_pipeline_structure_only(tmp_path: Path) -> None:
    f = tmp_path / "p.yaml"
    f.write_text("version: 2\nsources:\n  s: {producer: nowhere.x}\n")
    with pytest.raises(PipelineValidationError) as info:
        load_pipeline(f)
    (issue,) = info.value.issues
    assert (issue.path, issue.line, issue.column) == ("version", 1, 10)
    assert issue.message == "unsupported version 2"
    f.write_text("version: 1\nsources:\n  s: {producer: nowhere.x}\n")
    assert load_pipeline(f).sources["s"].producer == "nowhere.x"  # ids are checked in pass 2 only


def test_dotted_reference_to_missing_key(tspec: ManagerSpec) -> None:
    text = (
        "version: 1\n"
        "matrix:\n"
        "  shape: [{ranks: 4}, {ranks: 8, chunks: 2}]\n"
        "sources:\n"
        "  s: {producer: t.line, params: {ranks: '${shape.ranks}', chunks: '${shape.chunks}'}}\n"
    )
    (issue,) = _issues(text, tspec)
    assert (issue.path, issue.line, issue.column) == ("sources.s.params.chunks", 5, 67)  # the opening quote
    assert issue.message == "${shape.chunks}: shape has no such key at every point"
