"""`make registry` reuses an up-to-date development environment (real make, dry run: `make -n`)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _plan(venv: Path) -> list[str]:
    p = subprocess.run(
        ["make", "-n", "--no-print-directory", "registry", f"VENV={venv}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 0, p.stderr
    return p.stdout.splitlines()


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_registry_skips_the_reinstall_when_the_environment_is_current(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").touch()
    stamp = venv / ".install-dev.stamp"
    stamp.touch()
    future = time.time() + 3600  # newer than every pyproject.toml of the checkout
    os.utime(stamp, (future, future))
    current = _plan(venv)
    assert len(current) == 1 and current[0].startswith(f"{venv}/bin/collhub registry build plugins/mscclang")
    assert "--url http://127.0.0.1:8000/" in current[0]

    os.utime(stamp, (0, 0))  # older than the pyproject files: the environment must be brought up to date
    stale = _plan(venv)
    assert any("pip install" in line and "-e ./registry" in line for line in stale)
    assert stale[-1] == current[0]
