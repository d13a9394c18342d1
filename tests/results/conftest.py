"""One real study run shared by the report and export tests (hub.simulate on built-ins, 48 rows)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hub.pipeline import run_pipeline_text

from .test_report import STUDY


@pytest.fixture(scope="session")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = run_pipeline_text(STUDY, tmp_path_factory.mktemp("study") / "run", jobs=1)
    assert run.ok
    return run.run_dir
