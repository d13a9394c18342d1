"""collhub-registry builds as a wheel of its own that carries everything the service needs."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_wheel_holds_the_service_its_page_licence_and_command_hook(tmp_path: Path) -> None:
    src = tmp_path / "src"  # a copy: building in place would leave build/ and *.egg-info in the checkout
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns("build", "*.egg-info", "tests", "__pycache__"))
    # an explicit path and no index: pip must build THIS directory, never fetch a "registry" from PyPI
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-w",
            str(tmp_path),
            str(src),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    (wheel,) = tmp_path.glob("collhub_registry-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        dist_info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
        entry_points = zf.read(f"{dist_info}/entry_points.txt").decode()
        licence = zf.read(f"{dist_info}/licenses/LICENSE").decode()
    for module in ("__init__.py", "_builder.py", "_cli.py", "_request.py", "_server.py", "plugin.py", "index.html"):
        assert f"collhub_registry/{module}" in names
    assert not any(n.startswith("hub/") for n in names)  # the core is a dependency, not a copy
    assert "[collhub]\nregistry = collhub_registry.plugin" in entry_points
    assert "Apache License" in licence and "Version 2.0, January 2004" in licence
