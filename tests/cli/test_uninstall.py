"""`collhub uninstall` (issue 30): refuses names that are not installed (exit 3, nothing removed,
a did-you-mean), and an editable install without --force when it cannot ask (stdin not a
terminal). Real processes; the editable plugin is this checkout's own collhub-mscclang, which
the refusal leaves installed (checked)."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest


def _collhub(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hub.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )


def test_unknown_names_are_refused_before_anything_is_removed(tmp_path: Path) -> None:
    p = _collhub("uninstall", "collhub-doesnotexist", cwd=tmp_path)
    assert p.returncode == 3
    assert p.stderr.splitlines()[0] == "error: not installed here: collhub-doesnotexist (nothing was removed)"
    assert "uninstalled" not in p.stdout
    typo = _collhub("uninstall", "collhub-mscclan", "--yes", cwd=tmp_path)
    assert typo.returncode == 3 and "did you mean collhub-mscclang?" in typo.stderr


def test_an_editable_install_needs_force(tmp_path: Path) -> None:
    from hub.registry._editable import editable_location

    if editable_location("collhub-mscclang") is None:
        pytest.skip("collhub-mscclang is not an editable install here")
    p = _collhub("uninstall", "collhub-mscclang", "--yes", cwd=tmp_path)
    assert p.returncode == 2
    assert "installed in editable mode" in p.stderr and "hint: pass --force" in p.stderr
    assert metadata.version("collhub-mscclang")  # still installed
