"""Observer hooks in isolation, the first error in file order with --jobs, typed rows, the run table."""

from __future__ import annotations

import io
import warnings
from pathlib import Path

import pytest

from hub.cli._runtable import print_run_table
from hub.errors import PluginError, StepFailedError
from hub.pipeline import ManagerSpec, run_pipeline_text
from hub.pipeline._record.row import Row
from hub.pipeline._run.hooks import PluginHookWarning

from .conftest import PLUGIN_FILE

BAD = Path(__file__).with_name("plugin_badhooks.py")
TEXT = (
    "version: 1\nmatrix: {size: [100, 200, 300]}\n"
    "sources:\n  s: {producer: t.line, params: {ranks: 4}}\n"
    "consumers:\n  c: {use: t.cost, params: {size: '${size}'}}\n"
)


@pytest.fixture()
def bad_spec() -> ManagerSpec:
    """The test plugin ``t`` plus the raising observer plugin ``bad``, in every worker too."""
    return ManagerSpec(autoload=False, plugins=(f"t={PLUGIN_FILE}", f"bad={BAD}"))


@pytest.mark.parametrize("jobs", [1, 2])
def test_raising_hooks_warn_once_each_and_never_fail_the_run(tmp_path: Path, bad_spec: ManagerSpec, jobs: int) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = run_pipeline_text(TEXT, tmp_path / "out", jobs=jobs, manager_spec=bad_spec)
    assert run.ok and len(run.rows) == 3
    assert (run.run_dir / "results.json").is_file()  # committed, after_pipeline_run raised after that
    texts = sorted(str(w.message) for w in caught if issubclass(w.category, PluginHookWarning))
    # after_step raised in 1 produce + 3 consume steps (in workers with jobs=2): reported once.
    assert texts == [
        "plugin bad: hook collhub_after_pipeline_run failed: RuntimeError: after-run boom; the run went on without it",
        "plugin bad: hook collhub_after_step failed: ValueError: after-step boom; the run went on without it",
        "plugin bad: hook collhub_before_pipeline_run failed: RuntimeError: before-run boom; "
        "the run went on without it",
    ]


def test_strict_plugins_make_a_raising_hook_fatal_and_blame_the_plugin(
    tmp_path: Path, bad_spec: ManagerSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLLHUB_STRICT_PLUGINS", "1")
    with pytest.raises(
        PluginError,
        match=r"^plugin bad: hook collhub_before_pipeline_run failed: "
        r"RuntimeError: before-run boom$",
    ):
        run_pipeline_text(TEXT, tmp_path / "out", jobs=1, manager_spec=bad_spec)
    assert list(tmp_path.iterdir()) == []  # a new run that failed leaves nothing


def test_strict_step_hook_is_the_plugins_error_not_the_components(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    step_only = tmp_path / "steponly.py"
    step_only.write_text(
        BAD.read_text().split("@hookimpl\ndef collhub_before_pipeline_run")[0]
        + "@hookimpl\ndef collhub_after_step(step, output):\n"
        "    raise ValueError('after-step boom')\n"
    )
    spec = ManagerSpec(autoload=False, plugins=(f"t={PLUGIN_FILE}", f"bad={step_only}"))
    monkeypatch.setenv("COLLHUB_STRICT_PLUGINS", "1")
    with pytest.raises(PluginError) as info:
        run_pipeline_text(TEXT, tmp_path / "out", jobs=2, manager_spec=spec)
    assert info.value.message == "plugin bad: hook collhub_after_step failed: ValueError: after-step boom"
    assert "t.line" not in info.value.message


def test_first_error_in_file_order_whatever_finishes_first(tmp_path: Path, tspec: ManagerSpec) -> None:
    # Point 0 fails after 1.5 s; points 1-3 fail at once. With two workers the fast failures
    # arrive first, yet the error shown is point 0's.
    text = (
        "version: 1\nmatrix:\n  case: [{size: 100, delay: 1.5}, {size: 200, delay: 0}, {size: 300, delay: 0},"
        " {size: 400, delay: 0}]\n"
        "sources:\n  s: {producer: t.line, params: {ranks: 4}}\n"
        "consumers:\n  c: {use: t.cost, params: {size: '${case.size}', fail_at: '${case.size}',"
        " delay: '${case.delay}'}}\n"
    )
    with pytest.raises(StepFailedError) as info:
        run_pipeline_text(text, tmp_path / "out", jobs=2, manager_spec=tspec)
    assert "t.cost cannot simulate 100 bytes" in info.value.message, info.value.message
    assert list(tmp_path.iterdir()) == []


def test_rows_are_typed_and_details_go_to_files(tmp_path: Path, tspec: ManagerSpec) -> None:
    text = TEXT.replace("size: '${size}'", "size: '${size}', details: true, energy: 2.5")
    run = run_pipeline_text(text, tmp_path / "out", jobs=1, manager_spec=tspec)
    for r in run.rows:
        row = Row.from_dict(r)
        assert row.as_dict() == r
        assert "details" not in r and r["details_file"].endswith("/c/details.json")
        assert (run.run_dir / r["details_file"]).read_text() == '{"per_rank_ns": [%r, %r, %r, %r]}' % (
            (3 * r["point"]["size"] / 1.0,) * 4
        )
    assert run.rows[0]["metrics"]["energy_J"] == 2.5
    md = (run.run_dir / "results.md").read_text().splitlines()
    assert md[2] == "| source | size | time_us | algbw GB/s | busbw GB/s | energy_J | status |"


def test_run_table_keeps_status_in_80_columns_and_shows_own_metrics(tmp_path: Path, tspec: ManagerSpec) -> None:
    text = TEXT.replace("size: '${size}'", "size: '${size}', energy: 2.5").replace(
        "matrix: {size: [100, 200, 300]}", "matrix: {size: [100, 200, 300], network: [a-rather-long-network-name]}"
    )
    run = run_pipeline_text(text, tmp_path / "out", jobs=1, manager_spec=tspec)
    wide = io.StringIO()
    print_run_table(run.iter_rows, ["size", "network"], "t", file=wide, width=200)
    assert "energy_J" in wide.getvalue().splitlines()[2]
    narrow = io.StringIO()
    print_run_table(run.iter_rows, ["size", "network"], "t", file=narrow, width=80)
    lines = narrow.getvalue().splitlines()
    assert all(len(line) <= 80 for line in lines), lines
    assert lines[2].rstrip("┃").rstrip().endswith("status")
    assert [line.split("│")[-2].strip() for line in lines[4:7]] == ["ok", "ok", "ok"]
    assert lines[-1].startswith("(") and "energy_J" in lines[-1]
