"""Every command's --help shows an example of itself; completion options only on the top level.

The commands are enumerated from the real root group (core commands and the registry service's
plugin group); each --help is then read from a real ``collhub`` subprocess.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import typer

REPO = Path(__file__).resolve().parents[2]
_PLUGINS = "collhub-registry"  # the one first-party plugin that adds a command group


def _leaves(cmd: Any, ctx: Any, path: list[str]) -> list[list[str]]:
    if not hasattr(cmd, "list_commands"):
        return [path]
    out: list[list[str]] = []
    for name in cmd.list_commands(ctx):
        out += _leaves(cmd.get_command(ctx, name), ctx, [*path, name])
    return out


def _groups(paths: list[list[str]]) -> list[tuple[str, ...]]:
    return sorted({tuple(p[:-1]) for p in paths if len(p) > 1})


@pytest.fixture()
def commands(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    from typer import core as typer_core

    from hub.cli import app
    from hub.cli._app import store_command_cache

    monkeypatch.setenv("COLLHUB_LOAD_PLUGINS", _PLUGINS)
    store_command_cache(None)  # index the plugin's command group, as `collhub plugins list` does
    root = typer.main.get_command(app)
    paths = _leaves(root, typer_core._click.core.Context(root), [])
    assert ["registry", "build"] in paths and ["trace", "verify"] in paths and ["run"] in paths
    return paths


def _help(path: list[str] | tuple[str, ...], cache: Path) -> str:
    env = dict(os.environ, COLLHUB_LOAD_PLUGINS=_PLUGINS, COLLHUB_CACHE_DIR=str(cache), COLUMNS="100")
    env.pop("COLLHUB_DEBUG", None)
    p = subprocess.run(
        [sys.executable, "-m", "hub.cli", *path, "--help"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        cwd=REPO,
    )
    assert p.returncode == 0, (path, p.stderr)
    return p.stdout


def test_every_help_has_an_example_and_only_the_top_level_has_completion(
    commands: list[list[str]], tmp_path: Path
) -> None:
    groups = _groups(commands)
    pages: list[list[str] | tuple[str, ...]] = [[], *commands, *groups]
    with ThreadPoolExecutor(2) as pool:  # one real subprocess per page; the suite shares 2 cores
        helps = dict(zip(map(tuple, pages), pool.map(lambda c: _help(c, tmp_path / "cache"), pages), strict=True))
    missing = []
    for path in commands:
        # the example line runs the command itself: "Example: collhub trace verify out/ring ..."
        if not re.search(rf"^\s*Example: collhub {re.escape(' '.join(path))}( |$)", helps[tuple(path)], re.MULTILINE):
            missing.append(" ".join(path))
    assert not missing, f"--help without an example: {missing}"
    top = helps[()]
    assert top.count("--install-completion") == 1 and top.count("--show-completion") == 1
    shown = [" ".join(c) for c, text in helps.items() if c and "completion" in text]
    assert not shown, f"completion options below the top level: {shown}"
