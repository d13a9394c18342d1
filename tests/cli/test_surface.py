"""One command surface (docs/cli.md, "One surface"): every command, plugin commands included,
walked from the live command tree and run as a real process.

* ``-f`` is ``--format`` wherever it exists, and ``-o`` is ``--out``;
* a usage error (an unknown option) is ``error: <command>: ...`` plus ``hint:`` on stderr,
  exit 2, with no Click ``Usage: ... Error:`` block.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer._click.core import Command, Context  # typer's own click, whose classes the tree uses

from hub.cli import app


def _leaves() -> list[tuple[str, Command]]:
    from hub.plugins import get_manager

    get_manager()  # plugin commands (collhub registry ...) are mounted once plugins are loaded
    root = typer.main.get_command(app)
    ctx = Context(root)
    out: list[tuple[str, Command]] = []

    def walk(cmd: Command, path: str, ctx: Context) -> None:
        if hasattr(cmd, "list_commands"):  # a group
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                if sub is not None and not sub.hidden:
                    walk(sub, f"{path} {name}", Context(sub, parent=ctx, info_name=name))
        else:
            out.append((path, cmd))

    walk(root, "collhub", ctx)
    return out


LEAVES = _leaves()


def test_the_walk_sees_every_command() -> None:
    names = {p for p, _ in LEAVES}
    for want in ("collhub produce", "collhub consume", "collhub report", "collhub trace show", "collhub uninstall"):
        assert want in names
    assert len(names) >= 20


@pytest.mark.parametrize(("path", "cmd"), LEAVES, ids=[p for p, _ in LEAVES])
def test_short_options_mean_one_thing(path: str, cmd: Command) -> None:
    for param in cmd.params:
        opts = set(getattr(param, "opts", [])) | set(getattr(param, "secondary_opts", []))
        if "-f" in opts:
            assert "--format" in opts, f"{path}: -f is {sorted(opts)}, not --format"
        if "-o" in opts:
            assert "--out" in opts, f"{path}: -o is {sorted(opts)}, not --out"


@pytest.mark.parametrize(("path", "cmd"), LEAVES, ids=[p for p, _ in LEAVES])
def test_usage_errors_are_collhub_errors(path: str, cmd: Command, tmp_path: Path) -> None:
    args = path.split()[1:] + ["--no-such-option"]
    env = {k: v for k, v in os.environ.items() if k != "COLLHUB_DEBUG"}
    p = subprocess.run(
        [sys.executable, "-m", "hub.cli", *args], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120
    )
    assert p.returncode == 2, (path, p.stderr)
    lines = p.stderr.splitlines()
    if path == "collhub astra-sim":
        # The drop-in takes ASTRA-sim's own flag grammar (unknown flags are ignored, as the
        # binaries do) and words every error on one line, hint included, as its docs say.
        assert len(lines) == 1 and lines[0].startswith("error: ") and "(hint: " in lines[0], p.stderr
        return
    assert lines[0].startswith(f"error: {path}: no such option: --no-such-option"), p.stderr
    assert any(ln.startswith("hint: ") for ln in lines) and "Usage:" not in p.stderr, p.stderr
