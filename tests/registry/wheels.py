"""Fixtures: real plugin wheels built with pip from generated projects, a built site, a live server.

A pytest plugin module, loaded once by the repository's ``conftest.py`` (``pytest_plugins``),
so every test that asks for ``wheels`` (client, service, ``collhub plugins`` tests) shares
one session-scoped build instead of re-importing the fixture into each module.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # imported in the fixtures: loading this plugin must not need collhub-registry
    from collhub_registry import RegistryServer

SAMPLE = Path(__file__).parent / "sample_plugin"


def write_plugin_project(
    root: Path,
    *,
    dist: str,
    plugin: str,
    version: str,
    requires_hub: str = ">=0.1",
    components: str = '[[components]]\nkind = "producer"\nname = "pairs"\nsummary = "Pairwise"\ncollectives = '
    '["alltoall"]\n',
    manifest_extra: str = "",
    with_manifest: bool = True,
) -> Path:
    """A minimal plugin project laid out like ``tests/registry/sample_plugin``."""
    pkg = dist.replace("-", "_")
    project = root / f"{dist}-{version}"
    (project / pkg).mkdir(parents=True)
    manifest_ep = f'\n[project.entry-points."collhub.manifest"]\n{plugin} = "{pkg}"\n' if with_manifest else ""
    (project / "pyproject.toml").write_text(
        f"""[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "{dist}"
version = "{version}"
description = "Test plugin {dist}"
requires-python = ">=3.11"

[project.entry-points.collhub]
{plugin} = "{pkg}.plugin"
{manifest_ep}
[tool.setuptools]
packages = ["{pkg}"]

[tool.setuptools.package-data]
{pkg} = ["collhub-plugin.toml"]
"""
    )
    (project / pkg / "__init__.py").write_text('"""test plugin"""\nMARKER = "installed"\n')
    (project / pkg / "plugin.py").write_text("# registration hooks would live here\n")
    (project / pkg / "collhub-plugin.toml").write_text(
        f'name = "{dist}"\nplugin = "{plugin}"\napi_version = "1.0"\nrequires_hub = "{requires_hub}"\n'
        f'keywords = ["{plugin}"]\n{manifest_extra}\n{components}'
    )
    return project


def build_wheel(project: Path, out: Path) -> Path:
    """Build a real wheel with pip (no network: setuptools comes from the test environment)."""
    before = set(out.glob("*.whl"))
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out), str(project)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    shutil.rmtree(project / "build", ignore_errors=True)
    for egg in project.glob("*.egg-info"):
        shutil.rmtree(egg, ignore_errors=True)
    (new,) = set(out.glob("*.whl")) - before
    return new


@pytest.fixture(scope="session")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    src = tmp_path_factory.mktemp("plugin-src")
    out = tmp_path_factory.mktemp("wheels")
    sample_copy = src / "sample"
    shutil.copytree(SAMPLE, sample_copy)
    result = {"sample": build_wheel(sample_copy, out)}
    replay = (
        '[[components]]\nkind = "consumer"\nname = "replay"\nsummary = "Replay on NCCL"\n'
        'collectives = ["allreduce", "allgather"]\n'
    )
    result["other"] = build_wheel(
        write_plugin_project(src, dist="collhub-other", plugin="other", version="0.3.0", components=replay), out
    )
    result["other_future"] = build_wheel(
        write_plugin_project(
            src, dist="collhub-other", plugin="other", version="0.4.0", requires_hub=">=99", components=replay
        ),
        out,
    )
    result["no_manifest"] = build_wheel(
        write_plugin_project(src, dist="collhub-bare", plugin="bare", version="1.0.0", with_manifest=False), out
    )
    return result


@pytest.fixture
def site(tmp_path: Path, wheels: dict[str, Path]) -> Path:
    from collhub_registry import build_site

    report = build_site(wheels.values(), tmp_path / "site")
    assert set(report.plugins) == {"collhub-sample", "collhub-other"}
    return tmp_path / "site"


@pytest.fixture
def server(site: Path) -> Iterator[RegistryServer]:
    from collhub_registry import make_server

    srv = make_server(site, "127.0.0.1", 0)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()
