"""The shell blocks of the README and the docs run as written, as real subprocesses.

Each ```bash block runs as one `bash -euo pipefail` script in a fresh directory that sees the
repository's `examples/` and a copy of its `plugins/` (README commands are written from the repository root),
with the venv's `collhub` first on PATH. Blocks that set up the environment itself (make, pip)
or start servers are in SKIP with the reason; single lines too slow for this suite are in
SKIP_LINES with the test that covers them. The demo table the README shows must be what
`make demo`'s job prints.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests._docblocks import Block, blocks
from tests.conftest import REPO, SHARED_DATA
from tests.sim.difftest import BIN as ASTRASIM_BIN, BINARIES, oracle_unavailable

SKIP = {
    "README.md#bash0": "the set-up itself (make demo / make test)",
    "README.md#bash3": "starts a registry server; covered by tests/registry",
    "docs/plugins.md#bash0": "pip-installs a new package into the environment; covered by tests/cli (plugins new)",
    "plugins/taccl/README.md#bash0": "pip installs",
}
SKIP_LINES = {
    "collhub consume replay.run": "8 gloo processes, ~50 s on a shared CPU; covered by plugins/replay/tests",
    "pip install ": "set-up: the test environment already has every first-party plugin installed",
}
BLOCKS = blocks("bash")
BLOCK_TIMEOUT_S = 300


def _script(block: Block, tmp: Path) -> str:
    code = block.code
    if "../shared/" in code:
        if not SHARED_DATA.is_dir():
            pytest.skip("shared data not available")
        code = code.replace("../shared/", f"{SHARED_DATA.parent}/")
    if "/path/to/AstraSim_" in code:
        code = code.replace("/path/to/", f"{_astrasim_bin_dir(tmp)}/")
    # Join continuation lines so a skipped command is skipped whole.
    lines = code.replace("\\\n", " ").splitlines()
    kept = [f": skipped: {line!r}" if any(s in line for s in SKIP_LINES) else line for line in lines]
    return "\n".join(kept) + "\n"


def _astrasim_bin_dir(tmp: Path) -> Path:
    """The real binaries when the environment names them (``$COLLHUB_ASTRASIM_DIR`` /
    ``$COLLHUB_ASTRASIM_BIN``, never a fixed path), else the drop-in under their names:
    ``collhub-astra-sim`` takes its backend from the name it is called by."""
    if oracle_unavailable() is None:
        return ASTRASIM_BIN
    bindir = tmp / "astra-sim-bin"
    bindir.mkdir(exist_ok=True)
    for name in BINARIES.values():
        (bindir / name).symlink_to(Path(sys.executable).parent / "collhub-astra-sim")
    return bindir


def _run(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    (cwd / "examples").symlink_to(REPO / "examples")
    # A copy, not a link: building a wheel of a plugin writes build/ into its project directory.
    shutil.copytree(
        REPO / "plugins", cwd / "plugins", ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__")
    )
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", "COLUMNS": "200"}
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-x", "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=BLOCK_TIMEOUT_S,
    )


def test_docs_have_shell_examples() -> None:
    assert any(b.id == "README.md#bash1" and "collhub produce mscclang.ir" in b.code for b in BLOCKS)


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_shell_block_runs(block: Block, tmp_path: Path) -> None:
    reason = SKIP.get(block.id)
    if reason:
        pytest.skip(reason)
    proc = _run(_script(block, tmp_path), tmp_path)
    assert proc.returncode == 0, f"{block.doc}:{block.line} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}"


def _cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"[│┃]", line)[1:-1]]


def test_readme_demo_table_is_what_the_demo_prints(tmp_path: Path) -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    shown = [_cells(line) for line in text.splitlines() if line.startswith("│ ")]
    assert len(shown) >= 3, "the README no longer shows the demo's table"
    proc = _run("collhub run examples/compare-allreduce.yaml --out runs/demo --force\n", tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    printed = [_cells(line) for line in proc.stdout.splitlines() if line.startswith("│")]
    for row in shown:
        assert row in printed, f"README shows {row}, `make demo` prints no such row"
