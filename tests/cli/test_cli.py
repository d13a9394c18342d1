"""The collhub CLI through CliRunner and as real subprocesses (exit codes, stderr, JSON)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hub.cli import app

from .conftest import FIXTURES

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()


def cli(*args: str):
    return runner.invoke(app, list(args))


def sub(*args: str, plugins: tuple[str, ...] = (), env: dict[str, str] | None = None, cwd: Path | None = None):
    e = dict(os.environ)
    e.pop("COLLHUB_DEBUG", None)
    e["PYTHONPATH"] = os.pathsep.join([*(str(FIXTURES / p) for p in plugins), str(REPO)])
    e["COLLHUB_LOAD_PLUGINS"] = ",".join(f"collhub_fixture_{p}" for p in plugins)
    e.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "hub.cli", *args], capture_output=True, text=True, env=e, timeout=60, cwd=cwd
    )


def test_help_lists_groups_and_no_args_is_help():
    r = cli("--help")
    assert r.exit_code == 0
    for name in ("produce", "transform", "consume", "trace", "plugins"):
        assert f"  {name} " in r.output
    r = cli()
    assert "Usage: " in r.output and r.exit_code in (0, 2)
    assert cli("plugins", "-h").exit_code == 0


def test_plugins_list_json_with_broken_section(use_plugins):
    use_plugins("good", "broken")
    r = cli("plugins", "list", "--format", "json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert {p["name"] for p in data["plugins"]} == {"hub", "good"}
    ids = {c["id"] for c in data["components"]}
    assert {"hub.ring", "hub.simulate", "good.flat", "good.count"} <= ids
    [b] = data["broken"]
    assert b["distribution"] == "collhub_fixture_broken" and "exploded" in b["error"]


def test_plugins_list_table(use_plugins):
    use_plugins("good", "broken")
    r = cli("plugins", "list")
    assert r.exit_code == 0
    assert "good.flat" in r.stdout and "broken plugins (1):" in r.stdout


def test_plugins_info_component_schema(use_plugins):
    use_plugins("good")
    r = cli("plugins", "info", "good.flat", "-f", "json")
    assert r.exit_code == 0, r.output
    comp = json.loads(r.stdout)["component"]
    assert comp["collectives"] == ["broadcast"] and comp["max_ranks"] == 64
    assert set(comp["params_schema"]["properties"]) == {"collective", "ranks", "root"}
    assert comp["params_schema"]["required"] == ["ranks"]
    r = cli("plugins", "info", "good")
    assert r.exit_code == 0 and "collhub_fixture_good" in r.stdout


def test_unknown_component_is_one_line_error_exit_4(use_plugins):
    use_plugins("good")
    r = cli("plugins", "info", "good.flta")
    assert r.exit_code == 4
    assert r.stderr.splitlines() == ["error: unknown component 'good.flta'", "hint: did you mean good.flat?"]


def test_doctor_exit_codes(use_plugins):
    use_plugins("good", "broken")
    r = cli("plugins", "doctor", "-f", "json")
    assert r.exit_code == 4
    data = json.loads(r.stdout)
    assert not data["ok"] and any("collhub_fixture_broken" in p["where"] for p in data["problems"])


def test_produce_transform_consume_with_plugin(use_plugins, tmp_path):
    use_plugins("good")
    out = tmp_path / "o" / "flat"
    r = cli("produce", "good.flat", "--set", "ranks=4", "--set", "root=1", "--out", str(out), "-f", "json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["files"] == [f"{out}.{i}.et" for i in range(4)]
    assert all(Path(f).stat().st_size > 0 for f in data["files"])
    r = cli("transform", "good.rename", str(out), str(tmp_path / "renamed"), "--set", "name=renamed")
    assert r.exit_code == 0, r.output
    r = cli("consume", "good.count", str(tmp_path / "renamed"), "-f", "json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["metrics"] == {"sends": 3, "ranks": 4}


def test_bad_set_values_are_usage_errors(use_plugins, tmp_path):
    use_plugins("good")
    r = cli("produce", "good.flat", "--set", "ranks", "--out", str(tmp_path / "x"))
    assert r.exit_code == 2 and "error: --set #1 'ranks' is not key=value" in r.stderr
    r = cli("produce", "good.flat", "--set", "ranks=[1, 2", "--out", str(tmp_path / "x"))
    assert r.exit_code == 2 and "not valid YAML" in r.stderr
    r = cli("produce", "good.flat", "--set", "ranks=two", "--set", "size=3", "--out", str(tmp_path / "x"))
    assert r.exit_code == 2
    assert "ranks:" in r.stderr and "size: unknown parameter" in r.stderr
    assert not list(tmp_path.glob("x*"))  # nothing written


def test_parse_sets_yaml_values():
    from hub.cli.components import parse_sets

    assert parse_sets(["ranks=8", "ok=true", "dims=[4, 2]", "t.kind=ring", "t.n=2", "s=abc", "e="]) == {
        "ranks": 8,
        "ok": True,
        "dims": [4, 2],
        "t": {"kind": "ring", "n": 2},
        "s": "abc",
        "e": "",
    }


def test_plugin_command_group_mounted(use_plugins):
    use_plugins("good")
    r = cli("goodtool", "hello", "--name", "bob")
    assert r.exit_code == 0 and r.stdout == "hello bob from good\n"
    r = cli("goodtool", "fail")
    assert r.exit_code == 1
    assert r.stderr.splitlines() == ["error: good plugin failed on purpose", "hint: this is a test"]


def test_version_lists_plugins(use_plugins):
    use_plugins("good", "broken")
    r = cli("--version")
    assert r.exit_code == 0
    assert r.stdout.startswith("collhub ")
    assert "good: collhub_fixture_good 1.2.0 at " in r.stdout
    assert "[broken] broken = collhub_fixture_broken.plugin" in r.stdout


def test_internal_error_is_one_line_unless_debug(use_plugins, monkeypatch):
    use_plugins("good")
    from hub.plugins import _manager

    def boom(self, *a, **k):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(_manager.PluginManager, "components", boom)
    r = cli("plugins", "doctor")  # loads the plugins in this process (plugins list uses a child)
    assert r.exit_code == 1
    assert r.stderr.splitlines() == [
        "internal error: ZeroDivisionError: division by zero",
        "hint: this is a bug; rerun with --debug for the traceback and report it",
    ]
    r = cli("--debug", "plugins", "doctor")
    assert isinstance(r.exception, ZeroDivisionError)


def test_plugins_new_scaffold_is_loadable(tmp_path, collhub_pm, collhub_tmp_plugin, monkeypatch):
    r = cli("plugins", "new", "my_algos", "--dir", str(tmp_path))
    assert r.exit_code == 0, r.output
    root = tmp_path / "collhub-my-algos"
    text = (root / "pyproject.toml").read_text()
    assert '[project.entry-points.collhub]\nmy_algos = "collhub_my_algos.plugin"' in text
    import tomllib

    assert tomllib.loads(text)["project"]["entry-points"]["collhub"] == {"my_algos": "collhub_my_algos.plugin"}
    monkeypatch.syspath_prepend(str(root))
    import importlib

    plugin = importlib.import_module("collhub_my_algos.plugin")
    collhub_tmp_plugin(plugin, name="my_algos")
    alg = collhub_pm.run_producer("my_algos.flat_broadcast", {"ranks": 3})
    assert alg.ranks == 3 and alg.node_count() == 4
    assert cli("plugins", "new", "my_algos", "--dir", str(tmp_path)).exit_code == 2  # exists
    assert cli("plugins", "new", "Bad-Name", "--dir", str(tmp_path)).exit_code == 2
    for m in [m for m in sys.modules if m.startswith("collhub_my_algos")]:
        del sys.modules[m]


def test_scaffolded_plugin_test_passes(tmp_path):
    """The generated package's own pytest test passes (run in a subprocess, as its author would)."""
    r = sub("plugins", "new", "demo", "--dir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    root = tmp_path / "collhub-demo"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), str(REPO)]))
    p = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(root / "tests")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=root,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert "7 passed" in p.stdout  # test_plugin.py's 2 and the kit's 5 (docs/plugins.md), pipeline included


def test_the_documented_kit_tests_are_what_plugins_new_writes(tmp_path):
    from tests._docblocks import blocks

    r = sub("plugins", "new", "mine", "--dir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    (doc,) = [b for b in blocks("python") if b.doc == "docs/plugins.md" and "check_manifest" in b.code]
    assert doc.code == (tmp_path / "collhub-mine" / "tests" / "test_kit.py").read_text()
    assert (tmp_path / "collhub-mine" / "examples" / "mine.yaml").is_file()


# ----------------------------------------------------------------------------- subprocesses
def test_subprocess_help_and_exit_codes():
    r = sub("--help")
    assert r.returncode == 0 and "plugins" in r.stdout and r.stderr == ""
    r = sub("no-such-command")
    assert r.returncode == 2 and r.stderr.startswith("error: collhub: no such command")


def test_subprocess_broken_plugin_does_not_take_cli_down():
    r = sub("plugins", "list", "--format", "json", plugins=("good", "broken"))
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)  # stdout is pure JSON
    assert [b["distribution"] for b in data["broken"]] == ["collhub_fixture_broken"]
    r = sub("plugins", "doctor", plugins=("good", "broken"))
    assert r.returncode == 4 and "error: " in r.stderr


def test_subprocess_strict_mode_and_plugin_commands_in_help(tmp_path):
    r = sub("plugins", "list", plugins=("broken",), env={"COLLHUB_STRICT_PLUGINS": "1"})
    assert r.returncode == 4
    assert r.stderr.startswith("error: plugin 'broken' from collhub_fixture_broken 0.1.0 failed to import")
    env = {"COLLHUB_CACHE_DIR": str(tmp_path / "cache")}
    r = sub("--help", plugins=("good",), env=env)  # help imports no plugin code: not indexed yet
    assert r.returncode == 0 and "not indexed yet" in r.stdout and "goodtool" not in r.stdout
    assert sub("plugins", "list", plugins=("good",), env=env).returncode == 0  # loads plugins: writes the cache
    assert (tmp_path / "cache" / "commands-v1.json").is_file()
    r = sub("--help", plugins=("good",), env=env)
    assert r.returncode == 0 and "Plugin commands:" in r.stdout and "goodtool" in r.stdout
    r = sub("--help", plugins=("good",), env=env)  # served from the cache
    assert "goodtool" in r.stdout
    r = sub("goodtool", "hello", plugins=("good",), env=env)
    assert r.returncode == 0 and r.stdout == "hello world from good\n"


def test_subprocess_conflict_reported(tmp_path):
    """The first distribution keeps 'dup'; `plugins list` shows the second as broken, naming both."""
    r = sub("plugins", "info", "dup.same", plugins=("dup_a", "dup_b"))
    assert r.returncode == 0 and "collhub_fixture_dup_a" in r.stdout
    r = sub("plugins", "list", "--format", "json", plugins=("dup_a", "dup_b"))
    [b] = json.loads(r.stdout)["broken"]
    assert b["distribution"] == "collhub_fixture_dup_b"
    assert "collhub_fixture_dup_a" in b["error"] and "collhub_fixture_dup_b" in b["error"]


@pytest.mark.parametrize("cmd", [["--help"]])
def test_help_does_not_import_heavy_modules(cmd, tmp_path):
    code = (
        "import sys; from hub.cli import main\n"
        f"try:\n    main({cmd!r})\nexcept SystemExit:\n    pass\n"
        # hub.plugins itself is a lazy namespace; help reads its entry-point index (._index), never the manager
        "heavy = [m for m in ('numpy', 'pydantic', 'pluggy', 'rich', 'yaml', 'hub.plugins._manager', "
        "'hub.plugins._loader', 'hub.plugins._spec') if m in sys.modules]\n"
        "print('HEAVY', heavy, file=sys.stderr)"
    )
    p = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        # a cache directory of its own (help writes the entry-point index there), empty: the cold start
        env=dict(os.environ, COLLHUB_LOAD_PLUGINS="", PYTHONPATH=str(REPO), COLLHUB_CACHE_DIR=str(tmp_path / "cache")),
    )
    assert "HEAVY []" in p.stderr, p.stderr
