"""`collhub registry build|serve|check`, `search`, `install --dry-run` as real subprocesses."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.registry.conftest import wheels  # noqa: F401 - session fixture reused here


def _collhub(*args: str, env: dict[str, str] | None = None, timeout: int = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hub.cli", *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def test_build_serve_search_install_dry_run(tmp_path: Path, wheels: dict[str, Path]) -> None:  # noqa: F811
    site = tmp_path / "site"
    built = _collhub("registry", "build", str(wheels["sample"]), str(wheels["other"]), "--out", str(site), "--format", "json")
    assert built.returncode == 0, built.stderr
    assert json.loads(built.stdout)["plugins"] == {"collhub-other": ["0.3.0"], "collhub-sample": ["1.2.0"]}
    assert _collhub("registry", "check", str(site)).returncode == 0

    server = subprocess.Popen([sys.executable, "-m", "hub.cli", "registry", "serve", str(site), "--port", "0"],
                              stderr=subprocess.PIPE, text=True)
    try:
        line = server.stderr.readline() if server.stderr else ""
        url = re.search(r"(http://\S+)", line).group(1)  # type: ignore[union-attr]
        env = {"COLLHUB_REGISTRY_URL": url, "COLLHUB_CACHE_DIR": str(tmp_path / "cache")}
        found = _collhub("search", "nccl", "--format", "json", env=env)
        assert found.returncode == 0, found.stderr
        assert [p["name"] for p in json.loads(found.stdout)["results"]] == ["collhub-other"]
        by_kind = _collhub("search", "--kind", "producer", "--collective", "alltoall", env=env)
        assert "collhub-sample" in by_kind.stdout and "collhub-other" not in by_kind.stdout
        dry = _collhub("install", "collhub-sample>=1", "--dry-run", "--format", "json", env=env)
        assert json.loads(dry.stdout)["plugins"][0]["version"] == "1.2.0"
        bad = _collhub("search", "--kind", "frobnicator", env=env)
        assert bad.returncode == 2 and "unknown kind" in bad.stderr
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_unreachable_registry_is_exit_5_with_one_line(tmp_path: Path) -> None:
    proc = _collhub("search", "x", "--registry", "http://127.0.0.1:9/", env={"COLLHUB_CACHE_DIR": str(tmp_path)})
    assert proc.returncode == 5
    assert proc.stderr.startswith("error: cannot reach")
    assert "Traceback" not in proc.stderr


def test_check_reports_tampered_file(tmp_path: Path, wheels: dict[str, Path]) -> None:  # noqa: F811
    site = tmp_path / "site"
    assert _collhub("registry", "build", str(wheels["sample"]), "--out", str(site)).returncode == 0
    wheel = next((site / "files").glob("*.whl"))
    wheel.write_bytes(wheel.read_bytes() + b"x")
    proc = _collhub("registry", "check", str(site))
    assert proc.returncode == 3 and "does not match" in proc.stdout


@pytest.mark.parametrize("name", ["collhub"])
def test_uninstall_refuses_core(name: str) -> None:
    proc = _collhub("uninstall", name, "-y")
    assert proc.returncode == 2 and "refusing" in proc.stderr
