"""What `collhub plugins new` makes can be published as it is: it validates, a registry indexes
its wheel, and a wheel that the builder skips makes `registry build` fail, naming it (real CLI)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path


def _collhub(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "COLLHUB_DEBUG"}
    return subprocess.run(
        [sys.executable, "-m", "hub.cli", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=180
    )


def test_scaffold_validates_and_is_indexed(tmp_path: Path) -> None:
    assert _collhub("plugins", "new", "demo_pub", "--dir", ".", cwd=tmp_path).returncode == 0
    project = tmp_path / "collhub-demo-pub"
    checked = _collhub("plugins", "validate", str(project), "--imports", "-f", "json", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    doc = json.loads(checked.stdout)
    assert doc["ok"] is True and not doc["problems"], doc

    built = _collhub("registry", "build", str(project), "--out", "site", "-f", "json", cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    assert json.loads(built.stdout) == {"site": "site", "plugins": {"collhub-demo-pub": ["0.1.0"]}, "errors": []}
    # the indexed wheel carries the manifest and both entry points, as the registry requires
    index = json.loads((tmp_path / "site" / "v1" / "index.json").read_text())
    (entry,) = index["plugins"]
    assert entry["name"] == "collhub-demo-pub"
    assert [c["id"] for c in entry["components"]] == ["demo_pub.flat_broadcast"]
    (wheel,) = (tmp_path / "site").rglob("*.whl")
    with zipfile.ZipFile(wheel) as zf:
        assert "collhub_demo_pub/collhub-plugin.toml" in zf.namelist()
        eps = next(zf.read(n).decode() for n in zf.namelist() if n.endswith(".dist-info/entry_points.txt"))
    assert "[collhub.manifest]\ndemo_pub = collhub_demo_pub" in eps
    assert _collhub("registry", "check", "site", cwd=tmp_path).returncode == 0


def test_a_skipped_plugin_fails_the_build_and_is_named(tmp_path: Path) -> None:
    for name in ("good_one", "bad_one"):
        assert _collhub("plugins", "new", name, "--dir", ".", cwd=tmp_path).returncode == 0
    (tmp_path / "collhub-bad-one" / "collhub_bad_one" / "collhub-plugin.toml").unlink()
    p = _collhub("registry", "build", "collhub-good-one", "collhub-bad-one", "--out", "site", cwd=tmp_path)
    assert p.returncode == 3, p.stderr
    lines = p.stderr.splitlines()
    assert lines[0] == (
        "error: skipped collhub-bad-one (collhub_bad_one-0.1.0-py3-none-any.whl, from "
        "collhub-bad-one): wheel has no collhub_bad_one/collhub-plugin.toml"
    ), p.stderr
    assert lines[1].startswith("hint: 1 wheel(s) skipped; `collhub plugins validate collhub-bad-one` explains")
    assert "collhub-good-one  0.1.0" in p.stdout  # the others are still indexed
