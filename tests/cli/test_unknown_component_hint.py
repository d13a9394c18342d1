"""An unknown component points at `collhub search` when a registry is configured (real subprocesses)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _produce(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    e = {k: v for k, v in os.environ.items() if k not in ("COLLHUB_REGISTRY_URL", "COLLHUB_DEBUG")}
    e["COLLHUB_CONFIG"] = str(tmp_path / "no-config.toml")  # no user config leaks in
    e.update(env)
    return subprocess.run(
        [sys.executable, "-m", "hub.cli", "produce", "acme.fancy", "--out", "x"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=e,
        timeout=60,
    )


def test_unknown_component_suggests_search_with_a_registry(tmp_path: Path) -> None:
    p = _produce(tmp_path, COLLHUB_REGISTRY_URL="http://127.0.0.1:9/collhub/")
    assert p.returncode == 4 and p.stderr.splitlines() == [
        "error: unknown component 'acme.fancy'",
        "hint: not installed; `collhub search acme.fancy` looks for a plugin that provides it "
        "(registry http://127.0.0.1:9/collhub/)",
    ], p.stderr


def test_registry_from_the_config_file_counts_too(tmp_path: Path) -> None:
    cfg = tmp_path / "config.toml"
    cfg.write_text('[registry]\nurl = "http://127.0.0.1:9/r/"\n')
    p = _produce(tmp_path, COLLHUB_CONFIG=str(cfg))
    assert "`collhub search acme.fancy`" in p.stderr and "http://127.0.0.1:9/r/" in p.stderr


def test_without_a_registry_it_points_at_the_installed_list(tmp_path: Path) -> None:
    p = _produce(tmp_path)
    assert p.returncode == 4 and "collhub search" not in p.stderr
    assert "hint: run `collhub plugins list` to see installed components" in p.stderr
    broken = tmp_path / "broken.toml"
    broken.write_text("[registry\n")
    q = _produce(tmp_path, COLLHUB_CONFIG=str(broken))  # a broken config never hides the real error
    assert q.returncode == 4 and q.stderr.startswith("error: unknown component 'acme.fancy'")
