"""`collhub registry build|serve|check` (this distribution), then `search` and `install --dry-run`
against the served site, as real subprocesses."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path


def _collhub(*args: str, env: dict[str, str] | None = None, timeout: int = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hub.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def test_build_serve_search_install_dry_run(tmp_path: Path, wheels: dict[str, Path]) -> None:
    site = tmp_path / "site"
    built = _collhub(
        "registry", "build", str(wheels["sample"]), str(wheels["other"]), "--out", str(site), "--format", "json"
    )
    assert built.returncode == 0, built.stderr
    assert json.loads(built.stdout)["plugins"] == {"collhub-other": ["0.3.0"], "collhub-sample": ["1.2.0"]}
    assert _collhub("registry", "check", str(site)).returncode == 0

    server = subprocess.Popen(
        [sys.executable, "-m", "hub.cli", "registry", "serve", str(site), "--port", "0"],
        stderr=subprocess.PIPE,
        text=True,
    )
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


def test_check_reports_tampered_file(tmp_path: Path, wheels: dict[str, Path]) -> None:
    site = tmp_path / "site"
    assert _collhub("registry", "build", str(wheels["sample"]), "--out", str(site)).returncode == 0
    wheel = next((site / "files").glob("*.whl"))
    wheel.write_bytes(wheel.read_bytes() + b"x")
    proc = _collhub("registry", "check", str(site))
    assert proc.returncode == 3 and "does not match" in proc.stdout


def test_the_group_is_a_plugin_command_listed_in_help(tmp_path: Path) -> None:
    env = {"COLLHUB_CACHE_DIR": str(tmp_path)}
    shown = _collhub("--help", env=env)
    assert shown.returncode == 0, shown.stderr
    plugin_section = shown.stdout.split("Plugin commands:", 1)[1]
    assert re.search(r"^\s+registry\s+Build, serve and check", plugin_section, re.M)
    listed = _collhub("plugins", "list", "--format", "json", env=env)
    assert listed.returncode == 0, listed.stderr
    assert "collhub-registry" in listed.stdout


def test_without_the_distribution_registry_is_a_usage_error_with_a_hint(tmp_path: Path) -> None:
    # The plugin machinery's own "not loaded" path (a disabled distribution is never imported),
    # the same one an environment without collhub-registry takes.
    env = {"COLLHUB_CACHE_DIR": str(tmp_path), "COLLHUB_DISABLE_PLUGINS": "collhub-registry"}
    for args in (["registry"], ["registry", "build", "x", "--out", str(tmp_path / "site")]):
        proc = _collhub(*args, env=env)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.splitlines() == [
            "error: `collhub registry` comes from the collhub-registry distribution, which is not installed",
            "hint: pip install collhub-registry (from a checkout: pip install -e registry/)",
        ]
    assert not (tmp_path / "site").exists()
    assert "registry" not in _collhub("--help", env=env).stdout.split("Commands:", 1)[1].split()


def test_building_a_local_project_leaves_no_debris(tmp_path: Path) -> None:
    """A setuptools project built in place (its wheel then skipped: it has no manifest) keeps its
    directory as it was: no *.egg-info, no build/ (issue 26)."""
    proj = tmp_path / "proj"
    (proj / "myplug").mkdir(parents=True)
    (proj / "myplug" / "__init__.py").write_text("")
    (proj / "setup.py").write_text(
        "from setuptools import setup\n"
        'setup(name="collhub-myplug", version="0.1", packages=["myplug"],\n'
        '      entry_points={"collhub": ["myplug = myplug"]})\n'
    )
    before = sorted(p.relative_to(proj) for p in proj.rglob("*"))
    env = {**os.environ, "COLLHUB_CACHE_DIR": str(tmp_path / "c")}
    r = subprocess.run(
        [sys.executable, "-m", "hub.cli", "registry", "build", str(proj), "--out", str(tmp_path / "site")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert "skipped collhub-myplug" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    assert sorted(p.relative_to(proj) for p in proj.rglob("*")) == before
