"""The client commands of the plugin registry (`search`, `uninstall`) as real subprocesses.

The service's commands (`collhub registry build|serve|check`) are tested with their
distribution, in `registry/tests/test_cli.py`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def _collhub(*args: str, env: dict[str, str] | None = None, timeout: int = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hub.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def test_unreachable_registry_is_exit_5_with_one_line(tmp_path: Path) -> None:
    proc = _collhub("search", "x", "--registry", "http://127.0.0.1:9/", env={"COLLHUB_CACHE_DIR": str(tmp_path)})
    assert proc.returncode == 5
    assert proc.stderr.startswith("error: cannot reach")
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("name", ["collhub"])
def test_uninstall_refuses_core(name: str) -> None:
    proc = _collhub("uninstall", name, "-y")
    assert proc.returncode == 2 and "refusing" in proc.stderr
