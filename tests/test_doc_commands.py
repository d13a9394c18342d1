"""The shell blocks of the README and the docs run as written, as real subprocesses, and print
what the documents say they print.

Each ```bash block runs as one `bash -euo pipefail` script in a fresh directory that sees the
repository's `examples/` and a copy of its `plugins/` (README commands are written from the repository root),
with the venv's `collhub` first on PATH. Blocks that set up the environment itself (make, pip)
or start servers are in SKIP with the reason; single lines too slow for this suite are in
SKIP_LINES with the test that covers them. The demo table the README shows must be what
`make demo`'s job prints.

Rules for documents (tests/_docblocks.py reads them):

* a block of commands is tagged ``bash`` (run here); a synopsis or a sample is tagged ``text``;
  an untagged or ``sh`` block holding a ``collhub`` command is refused, so none escapes the run;
* an ```output block right after a bash block states what it prints: every line of it must be
  printed (the same words in the same order, spacing aside; a line ending in ``...`` only its
  beginning), so a number a document states is the number the command prints;
* a block that needs the ASTRA-sim binary (``/path/to/AstraSim_``, ``$COLLHUB_ASTRASIM_BIN``)
  runs the real binaries where ``$COLLHUB_ASTRASIM_DIR`` / ``$COLLHUB_ASTRASIM_BIN`` name them, and
  collhub's drop-in under their names elsewhere.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests._docblocks import _FENCE, DOCS, Block, blocks
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
    "cat out/replay-ring-": "the table of the replay.run line above, skipped with it",
    "collhub registry serve ": "starts a server that runs until Ctrl-C; covered by registry/tests",
}
BLOCKS = blocks("bash")
BLOCK_TIMEOUT_S = 300


def _script(block: Block, tmp: Path) -> str:
    code = block.code
    if "../shared/" in code:
        if not SHARED_DATA.is_dir():
            pytest.skip("shared data not available")
        code = code.replace("../shared/", f"{SHARED_DATA.parent}/")
    if any(k in code for k in ("/path/to/AstraSim_", "COLLHUB_ASTRASIM_BIN", "AstraSim_Analytical")):
        bindir = _astrasim_bin_dir(tmp)
        code = code.replace("/path/to/", f"{bindir}/")
        code = f"export COLLHUB_ASTRASIM_BIN={bindir}/{BINARIES['unaware']}\n" + code
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
    if block.output is not None:
        printed = proc.stdout + "\n" + "\n".join(ln for ln in proc.stderr.splitlines() if not ln.startswith("+"))
        missing = _not_printed(block.output, printed)
        assert not missing, (
            f"{block.doc}:{block.line}: the document says it prints {missing}, it printed:\n{printed[-3000:]}"
        )


def _words(line: str) -> str:
    return " ".join(line.split())


def _not_printed(stated: str, printed: str) -> list[str]:
    """The lines of ``stated`` that ``printed`` does not contain: the same words in the same
    order, spacing aside, not cut inside a word or a number (``80.1`` is not ``80.124``)."""
    lines = [_words(ln) for ln in printed.splitlines()]
    missing = []
    for want in (ln for ln in stated.splitlines() if ln.strip()):
        w = _words(want)
        tail = r"(?!\w|\.\d)"
        if w.endswith("..."):
            w = w[:-3].rstrip()  # the rest of the line is not stated
        pattern = re.compile(r"(?<!\S)" + re.escape(w) + tail)
        if not any(pattern.search(got) for got in lines):
            missing.append(want.strip())
    return missing


def test_stated_output_is_compared() -> None:
    # The checker itself must be able to fail: a changed number is caught, spacing is not.
    assert _not_printed("nodes 42188800", "nodes      42188800: COMP 1") == []
    assert _not_printed("nodes 42188801", "nodes      42188800: COMP 1") == ["nodes 42188801"]
    assert _not_printed("time 41 ...", "time 41 us on 8") == [] and _not_printed("time 4 ...", "time 41 us") == [
        "time 4 ..."
    ]
    assert any(b.output for b in BLOCKS), "no document states what a command prints any more"


@pytest.mark.parametrize("doc", [d.relative_to(REPO).as_posix() for d in DOCS])
def test_command_blocks_are_tagged_to_run(doc: str) -> None:
    text = (REPO / doc).read_text(encoding="utf-8")
    bad = [
        text.count("\n", 0, m.start()) + 1
        for m in _FENCE.finditer(text)
        if m.group(1) in ("", "sh", "shell", "console")
        and any(ln.strip().startswith("collhub ") for ln in m.group(2).splitlines())
    ]
    assert not bad, f"{doc}: blocks at lines {bad} hold collhub commands: tag them bash (run) or text (a synopsis)"


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
