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
    return subprocess.run(
        [sys.executable, "-m", "hub.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )


def _on_a_terminal(args: list[str], answer: str, cwd: Path) -> tuple[int, str]:
    """Run collhub with stdin and stdout on a pseudo-terminal (as in a shell), typing ``answer``."""
    import pty
    import select

    env = {k: v for k, v in os.environ.items() if k not in ("COLLHUB_DEBUG", "COLLHUB_REGISTRY_URL")}
    env["COLLHUB_CACHE_DIR"] = str(cwd / "cache")
    main, child = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "hub.cli", *args],
        stdin=child,
        stdout=child,
        stderr=subprocess.STDOUT,
        cwd=cwd,
        env=env,
        close_fds=True,
    )
    os.close(child)
    seen, sent = b"", False
    try:
        while True:
            ready, _, _ = select.select([main], [], [], 60)
            if not ready:
                break
            try:
                chunk = os.read(main, 4096)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
            if not sent and b"[y/N]" in seen:
                os.write(main, answer.encode())
                sent = True
        return proc.wait(timeout=60), seen.decode(errors="replace").replace("\r\n", "\n")
    finally:
        os.close(main)
        if proc.poll() is None:
            proc.kill()


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
        assert lines[0] == (
            "error: refusing to replace the development install of collhub-mscclang (editable from "
            f"{REPO / 'plugins' / 'mscclang'}) with a registry wheel"
        ), refused.stderr
        assert lines[1].startswith("hint: pass --force")
        dry = _collhub("install", "collhub-mscclang", "--registry", srv.url, "--dry-run", cwd=tmp_path)
        assert dry.returncode == 0 and "would install (dry run)" in dry.stdout
        assert "warning: collhub-mscclang is installed here in editable mode" in dry.stderr
        forced = _collhub("install", "collhub-mscclang", "--registry", srv.url, "--dry-run", "--force", cwd=tmp_path)
        assert forced.returncode == 0, forced.stderr
        asked = _on_a_terminal(["install", "collhub-mscclang", "--registry", srv.url], answer="n\n", cwd=tmp_path)
        assert asked[0] == 2, asked
        assert "is a development install; replace it with the registry's 0.1.0? [y/N]" in asked[1], asked
        assert "error: refusing to replace the development install of collhub-mscclang" in asked[1], asked
    finally:
        srv.shutdown()
        srv.server_close()
    assert _direct_url() == before  # the development install is untouched
