"""CLI tests: a fresh process-wide plugin manager and command cache per test."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import DISTS, FIXTURES  # noqa: F401 - re-exported for the CLI tests


@pytest.fixture(autouse=True)
def _isolated_cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Each CLI test gets a fresh process-wide manager and its own command cache directory."""
    from hub.cli import _errors
    from hub.plugins import _manager

    monkeypatch.setattr(_manager, "_GLOBAL", None)
    monkeypatch.setattr(_errors.STATE, "debug", False)
    monkeypatch.setenv("COLLHUB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("COLLHUB_STRICT_PLUGINS", raising=False)
    monkeypatch.delenv("COLLHUB_DEBUG", raising=False)
    monkeypatch.setenv("COLLHUB_LOAD_PLUGINS", "")
