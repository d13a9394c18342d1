"""`collhub install` over an editable (development) install of the same plugin refuses without
--force: a real site built from this checkout's collhub-mscclang, served on loopback, and the
editable install of it in this environment (never replaced: only refusals and dry runs run)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from importlib import metadata
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _collhub(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLLHUB_DEBUG", "COLLHUB_REGISTRY_URL")}
    env["COLLHUB_CACHE_DIR"] = str(cwd / "cache")
    return subprocess.run([sys.executable, "-m", "hub.cli", *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=180, stdin=subprocess.DEVNULL)


def _direct_url() -> dict[str, object]:
    text = metadata.distribution("collhub-mscclang").read_text("direct_url.json")
    return json.loads(text) if text else {}


def test_install_over_an_editable_install_refuses_without_force(tmp_path: Path) -> None:
    from collhub_registry import make_server

    before = _direct_url()
    dir_info = before.get("dir_info")
    if not isinstance(dir_info, dict) or dir_info.get("editable") is not True:
        pytest.skip("collhub-mscclang is not installed in editable mode here (make install-dev does that)")
    built = _collhub("registry", "build", str(REPO / "plugins" / "mscclang"), "--out", "site", cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    srv = make_server(tmp_path / "site", "127.0.0.1", 0)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        refused = _collhub("install", "collhub-mscclang", "--registry", srv.url, cwd=tmp_path)
        assert refused.returncode == 2, refused.stderr
        lines = refused.stderr.splitlines()
        assert lines[0] == ("error: refusing to replace the development install of collhub-mscclang (editable from "
                            f"{REPO / 'plugins' / 'mscclang'}) with a registry wheel"), refused.stderr
        assert lines[1].startswith("hint: pass --force")
        dry = _collhub("install", "collhub-mscclang", "--registry", srv.url, "--dry-run", cwd=tmp_path)
        assert dry.returncode == 0 and "would install (dry run)" in dry.stdout
        assert "warning: collhub-mscclang is installed here in editable mode" in dry.stderr
        forced = _collhub("install", "collhub-mscclang", "--registry", srv.url, "--dry-run", "--force", cwd=tmp_path)
        assert forced.returncode == 0, forced.stderr
    finally:
        srv.shutdown()
        srv.server_close()
    assert _direct_url() == before  # the development install is untouched
