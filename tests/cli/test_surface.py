"""One command surface (docs/cli.md, "One surface"): every command, plugin commands included,
walked from the live command tree and run as a real process.

* ``-f`` is ``--format`` wherever it exists, and ``-o`` is ``--out``;
* a usage error (an unknown option) is ``error: <command>: ...`` plus ``hint:`` on stderr,
  exit 2, with no Click ``Usage: ... Error:`` block;
* every command that prints takes ``--format json`` and then prints one parseable JSON object on
  stdout (run for real on inputs the module makes with collhub itself).
"""

from __future__ import annotations

import enum
import json
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


# --------------------------------------------------------------------------- --format json
#: commands that print and yet take no --format json, and why
NO_FORMAT = {
    "collhub pipeline schema": "its output is already a JSON document (the pipeline JSON Schema)",
    "collhub astra-sim": "a drop-in for ASTRA-sim's binaries: their flags and stdout lines, nothing more",
}

#: commands not run below, and where their --format json is run instead
NOT_RUN = {
    "collhub plugins doctor": "imports every plugin again; tests/cli/test_cli.py",
    "collhub search": "needs a registry; tests/cli/test_registry_cli.py",
    "collhub install": "needs a registry and installs; tests/cli/test_registry_cli.py",
    "collhub uninstall": "removes a distribution; tests/cli/test_uninstall.py",
    "collhub plugins validate": "needs a plugin project; tests/cli/test_plugins_validate.py",
}

_PIPELINE = """\
version: 1
name: surface
matrix:
  size: [4KiB, 64KiB]
sources:
  ring: {producer: hub.ring, params: {collective: allreduce, ranks: 4}}
consumers:
  sim: {use: hub.simulate, params: {network: "ring:4", size: "${size}"}}
"""

#: argv (after ``collhub``) of one real run per command; {w} is the module's work directory,
#: {ring} an algorithm written by the first run, {workload} ASTRA-sim's example workload.
#: Listed in order: later runs read what earlier ones wrote.
RUNS = {
    "collhub produce": "produce hub.ring --set collective=allreduce --set ranks=4 --out {ring}",
    "collhub transform": "transform hub.chunk {ring} {w}/chunked --set pieces=2",
    "collhub consume": "consume hub.simulate {ring} -b 4KiB -e 8KiB --set network=ring:4",
    "collhub run": "run {w}/p.yaml --out {w}/run --jobs 1",
    "collhub pipeline validate": "pipeline validate {w}/p.yaml",
    "collhub pipeline graph": "pipeline graph {w}/p.yaml",
    "collhub pipeline plot": "pipeline plot {w}/run --out {w}/plot.png",
    "collhub report": "report {w}/run",
    "collhub trace show": "trace show {ring}",
    "collhub trace verify": "trace verify {ring}",
    "collhub trace convert": "trace convert {ring} {w}/ring.json",
    "collhub trace inline": "trace inline {workload} {w}/inlined",
    "collhub plugins list": "plugins list",
    "collhub plugins info": "plugins info hub.ring",
    "collhub plugins new": "plugins new surfaceplugin --dir {w}/new",
}


def _format_values(cmd: Command) -> list[str] | None:
    """The values ``--format`` takes (None: no --format; [] when they are not an enumeration)."""
    for param in cmd.params:
        if "--format" in getattr(param, "opts", []):
            ann = param.type_descriptor.annotation  # type: ignore[attr-defined]
            return [m.value for m in ann] if isinstance(ann, type) and issubclass(ann, enum.Enum) else []
    return None


def test_every_command_that_prints_takes_format_json() -> None:
    for path, cmd in LEAVES:
        values = _format_values(cmd)
        if path in NO_FORMAT:
            assert values is None, f"{path} has --format now: drop it from NO_FORMAT"
            continue
        assert values is not None, f"{path}: no --format (docs/cli.md, One surface, rule 1)"
        assert values == [] or "json" in values, f"{path}: --format takes {values}, not json"
        # the run below is what shows a non-enumerated --format (consume's) takes json
        assert (path in RUNS) != (path in NOT_RUN), f"{path}: list it in RUNS (or NOT_RUN, saying where it is run)"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    w = tmp_path_factory.mktemp("surface")
    (w / "p.yaml").write_text(_PIPELINE)
    return w


@pytest.mark.parametrize("path", list(RUNS), ids=list(RUNS))
def test_format_json_prints_one_json_object(path: str, workdir: Path, astrasim_example: Path) -> None:
    workload = astrasim_example / "workload" / "all_reduce"
    if path == "collhub trace inline" and not Path(f"{workload}.0.et").is_file():
        pytest.skip(f"{workload}.0.et not found")
    argv = RUNS[path].format(w=workdir, ring=workdir / "ring4", workload=workload).split()
    env = {k: v for k, v in os.environ.items() if k != "COLLHUB_DEBUG"}
    p = subprocess.run(
        [sys.executable, "-m", "hub.cli", *argv, "--format", "json"],
        capture_output=True,
        text=True,
        cwd=workdir,
        env=env,
        timeout=300,
    )
    assert p.returncode == 0, (path, p.stderr)
    doc = json.loads(p.stdout)
    assert isinstance(doc, dict) and doc, (path, p.stdout[:300])


# --------------------------------------------------------------------------- a missing input
#: argv (after ``collhub``) naming an input that does not exist, per command that reads one
MISSING_INPUT = {
    "collhub transform": "transform hub.chunk nope out",
    "collhub consume": "consume hub.simulate nope -b 4KiB -e 4KiB --set network=ring:4",
    "collhub run": "run nope.yaml --out r",
    "collhub pipeline validate": "pipeline validate nope.yaml",
    "collhub pipeline graph": "pipeline graph nope.yaml",
    "collhub pipeline plot": "pipeline plot nope",
    "collhub report": "report nope",
    "collhub trace show": "trace show nope",
    "collhub trace verify": "trace verify nope",
    "collhub trace convert": "trace convert nope.json out",
    "collhub trace inline": "trace inline nope out",
    "collhub plugins validate": "plugins validate ./nope",
}

#: commands that read no input file or directory named on the command line
NO_INPUT = {
    "collhub produce",  # inputs come as --set params, checked by each producer's params model
    "collhub pipeline schema",
    "collhub astra-sim",  # ASTRA-sim's own flags and exit codes (tests/astrasim)
    "collhub plugins list",
    "collhub plugins info",
    "collhub plugins doctor",
    "collhub plugins new",
    "collhub search",
    "collhub install",
    "collhub uninstall",
}


def test_every_command_reading_an_input_is_walked() -> None:
    for path, _ in LEAVES:
        if not path.startswith(("collhub registry", "collhub nccl")):  # plugin groups: their own tests
            assert (path in MISSING_INPUT) != (path in NO_INPUT), f"{path}: list it in MISSING_INPUT or NO_INPUT"


@pytest.mark.parametrize("path", list(MISSING_INPUT), ids=list(MISSING_INPUT))
def test_a_missing_input_exits_3(path: str, tmp_path: Path) -> None:
    """docs/cli.md: a bad input file exits 3, and a missing one is bad the same way everywhere."""
    env = {k: v for k, v in os.environ.items() if k != "COLLHUB_DEBUG"}
    cwd = tmp_path / "cwd"  # tmp_path also holds the command cache
    cwd.mkdir()
    p = subprocess.run(
        [sys.executable, "-m", "hub.cli", *MISSING_INPUT[path].split()],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )
    assert p.returncode == 3, (path, p.stderr)
    assert p.stderr.startswith("error: ") and "nope" in p.stderr.splitlines()[0] and "Traceback" not in p.stderr
    assert not any(cwd.iterdir()), f"{path} left {sorted(cwd.iterdir())}"
