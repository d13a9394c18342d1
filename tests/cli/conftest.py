"""Fixture plugin distributions (package + .dist-info) put on sys.path for real entry-point loading."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "plugins"
DISTS = {
    "good": "collhub_fixture_good",
    "broken": "collhub_fixture_broken",
    "newmajor": "collhub_fixture_newmajor",
    "dup_a": "collhub_fixture_dup_a",
    "dup_b": "collhub_fixture_dup_b",
}


@pytest.fixture
def use_plugins(monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    """``use_plugins("good", "broken")``: make those distributions (and only those) loadable."""

    def use(*names: str) -> None:
        for name in names:
            monkeypatch.syspath_prepend(str(FIXTURES / name))
        # Ignore whatever else is installed in this environment: allow-list the fixtures only.
        monkeypatch.setenv("COLLHUB_LOAD_PLUGINS", ",".join(DISTS[n] for n in names))

    yield use
    for mod in [m for m in sys.modules if m.startswith("collhub_fixture_")]:
        del sys.modules[mod]


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
