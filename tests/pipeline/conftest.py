"""Fixtures: an isolated plugin manager holding only the test plugin ``t`` (no entry points)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hub.pipeline import ManagerSpec

PLUGIN_FILE = Path(__file__).with_name("plugin_components.py")


@pytest.fixture(scope="session")
def tspec() -> ManagerSpec:
    """Manager spec: no autoload, plugin ``t`` from plugin_components.py (works in worker processes)."""
    return ManagerSpec(autoload=False, plugins=(f"t={PLUGIN_FILE}",))
