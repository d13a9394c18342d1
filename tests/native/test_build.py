"""The compiled extensions are built and importable (``setup.py`` builds them on install)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from hub._native import EXTENSIONS

REPO = Path(__file__).resolve().parents[2]


def test_setup_builds_every_listed_extension() -> None:
    built = set(re.findall(r'Extension\(\s*"([\w.]+)"', (REPO / "setup.py").read_text()))
    assert built == set(EXTENSIONS)


@pytest.mark.parametrize("name", EXTENSIONS)
def test_extension_imports(name: str) -> None:
    module = importlib.import_module(name)
    assert Path(module.__file__ or "").suffix in (".so", ".pyd")
