"""Every distribution in the repository ships the licence its metadata declares (Apache-2.0)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DISTRIBUTIONS = sorted(
    p.parent
    for p in [REPO / "pyproject.toml", *REPO.glob("plugins/*/pyproject.toml"), REPO / "registry" / "pyproject.toml"]
)


@pytest.mark.parametrize("root", DISTRIBUTIONS, ids=lambda p: str(p.relative_to(REPO)) or ".")
def test_distribution_has_its_license_file(root: Path) -> None:
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["license"] == "Apache-2.0"
    text = (root / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in text and "Version 2.0" in text
