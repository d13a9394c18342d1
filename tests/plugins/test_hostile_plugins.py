"""Plugins that misbehave cannot take the host down or hide: real entry points, real subprocesses.

The fixture distributions live in tests/fixtures/plugins/hostile/ (package + .dist-info each).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HOSTILE = REPO / "tests" / "fixtures" / "plugins" / "hostile"


def run(
    *args: str, dists: tuple[str, ...], tmp: Path, timeout: float = 60, **env: str
) -> subprocess.CompletedProcess[str]:
    e = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(HOSTILE), str(REPO)]),
        COLLHUB_LOAD_PLUGINS=",".join(f"collhub_hostile_{d}" for d in dists),
        COLLHUB_CACHE_DIR=str(tmp / "cache"),
        COLLHUB_PLUGIN_IMPORT_TIMEOUT="3",
        **env,
    )
    e.pop("COLLHUB_DEBUG", None)
    e.pop("COLLHUB_STRICT_PLUGINS", None)
    return subprocess.run(
        [sys.executable, "-m", "hub.cli", *args], capture_output=True, text=True, env=e, timeout=timeout, cwd=tmp
    )


@pytest.mark.parametrize("dist", ["exit", "kbint", "sleep", "print"])
def test_help_imports_no_plugin_code(dist: str, tmp_path: Path) -> None:
    r = run("--help", dists=(dist,), tmp=tmp_path, timeout=20)
    assert r.returncode == 0 and "Usage: collhub" in r.stdout and "garbage" not in r.stdout


@pytest.mark.parametrize(
    ("dist", "said"),
    [
        ("exit", "called sys.exit(7)"),
        ("kbint", "raised KeyboardInterrupt by itself"),
        ("sleep", "did not finish within 3 s"),
    ],
)
def test_import_time_misbehaviour_is_a_broken_plugin(dist: str, said: str, tmp_path: Path) -> None:
    r = run("plugins", "list", "--format", "json", dists=(dist,), tmp=tmp_path)
    assert r.returncode == 0, r.stderr
    [broken] = json.loads(r.stdout)["broken"]
    assert broken["distribution"] == f"collhub_hostile_{dist}" and said in broken["error"]
    r = run(
        "produce",
        "hub.ring",
        "--set",
        "ranks=4",
        "--set",
        "collective=allreduce",
        "-o",
        "x/r",
        dists=(dist,),
        tmp=tmp_path,
    )
    assert r.returncode == 0, r.stderr  # the core still works


def test_plugin_ending_the_process_at_import_is_listed_broken(tmp_path: Path) -> None:
    r = run("plugins", "list", "--format", "json", dists=("osexit", "components"), tmp=tmp_path)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    [broken] = doc["broken"]
    assert broken["distribution"] == "collhub_hostile_osexit" and "ended the process (status 3)" in broken["error"]
    assert "hz.short" in {c["id"] for c in doc["components"]}  # the others are still listed


def test_version_survives_a_plugin_ending_the_process(tmp_path: Path) -> None:
    r = run("--version", dists=("osexit", "kbint", "components"), tmp=tmp_path)
    assert r.returncode == 0 and r.stdout.startswith("collhub ")
    assert "hz: collhub_hostile_components 0.1.0" in r.stdout
    assert "[broken] hosexit = collhub_hostile_osexit" in r.stdout and "[broken] hkbint" in r.stdout


def test_plugin_printing_at_import_does_not_corrupt_json(tmp_path: Path) -> None:
    r = run("plugins", "list", "--format", "json", dists=("print",), tmp=tmp_path)
    assert r.returncode == 0
    json.loads(r.stdout)
    assert "garbage from a plugin import" in r.stderr and "fd-level garbage" in r.stderr


def test_entry_point_named_hub_cannot_shadow_the_core(tmp_path: Path) -> None:
    r = run("plugins", "list", "--format", "json", dists=("shadow",), tmp=tmp_path)
    [broken] = json.loads(r.stdout)["broken"]
    assert "reserved for collhub's core" in broken["error"]
    r = run(
        "produce",
        "hub.ring",
        "--set",
        "ranks=4",
        "--set",
        "collective=allreduce",
        "-o",
        "x/r",
        dists=("shadow",),
        tmp=tmp_path,
    )
    assert r.returncode == 0 and "shadow" not in r.stderr


@pytest.mark.parametrize(
    ("component", "said"),
    [
        ("short", "returned an algorithm of 2 ranks, but ranks=4 was asked"),
        ("wrongcoll", "returned a broadcast algorithm, but collective=allreduce was asked"),
        ("exits", "called sys.exit(0)"),
        ("zero", "failed: ZeroDivisionError: division by zero"),
        ("kbint", "raised KeyboardInterrupt by itself"),
    ],
)
def test_component_misbehaviour_names_plugin_and_distribution(component: str, said: str, tmp_path: Path) -> None:
    r = run(
        "produce",
        f"hz.{component}",
        "--set",
        "ranks=4",
        "-o",
        "x/r",
        "--format",
        "json",
        dists=("components",),
        tmp=tmp_path,
    )
    assert r.returncode == 4, r.stderr
    first, hint = r.stderr.splitlines()[:2]
    assert first.startswith(f"error: component 'hz.{component}' (plugin hz, distribution collhub_hostile_components")
    assert said in first and hint.startswith("hint: ") and "Traceback" not in r.stderr
    assert r.stdout == "" and not (tmp_path / "x").exists()


def test_component_timeout(tmp_path: Path) -> None:
    r = run("produce", "hz.slow", "-o", "x/r", "--timeout", "1", dists=("components",), tmp=tmp_path, timeout=30)
    assert r.returncode == 4 and "did not finish within 1 s" in r.stderr


def test_pipeline_step_timeout(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text("version: 1\nsources:\n  s: {producer: hz.slow, timeout: 1}\n")
    r = run("run", "p.yaml", "-o", "out", "--jobs", "1", dists=("components",), tmp=tmp_path, timeout=30)
    assert r.returncode == 1 and "did not finish within 1 s" in r.stderr and not (tmp_path / "out").exists()


def test_chatty_component_keeps_json_clean(tmp_path: Path) -> None:
    r = run("produce", "hz.chatty", "-o", "x/r", "--format", "json", dists=("components",), tmp=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["component"] == "hz.chatty"
    assert "chatter on stdout" in r.stderr and "fd chatter" in r.stderr


def test_command_named_like_a_core_command_is_refused_loudly(tmp_path: Path) -> None:
    r = run("plugins", "list", dists=("components",), tmp=tmp_path)
    assert "command 'run', which is a core collhub command; refused" in r.stderr
    r = run("plugins", "doctor", dists=("components",), tmp=tmp_path)
    assert r.returncode == 4 and "core collhub command" in r.stdout
    r = run("run", "--help", dists=("components",), tmp=tmp_path)
    assert "Run a pipeline" in r.stdout  # the core's run, not the plugin's
    r = run("hzcmd", dists=("components",), tmp=tmp_path)
    assert r.returncode == 0 and r.stdout == "hello\n"


def test_reserved_commands_cover_the_core_commands() -> None:
    from hub.cli._app import COMMANDS
    from hub.plugins._manager import RESERVED_COMMANDS

    assert {c.name for c in COMMANDS} <= RESERVED_COMMANDS


def test_pipeline_with_chatty_and_lying_plugins(tmp_path: Path) -> None:
    (tmp_path / "ok.yaml").write_text("version: 1\nsources:\n  s: {producer: hz.chatty, params: {ranks: 4}}\n")
    r = run("run", "ok.yaml", "-o", "out", "--jobs", "1", "--format", "json", dists=("components",), tmp=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["rows"][0]["status"] == "ok"  # stdout is the JSON document only
    (tmp_path / "bad.yaml").write_text("version: 1\nsources:\n  s: {producer: hz.short, params: {ranks: 4}}\n")
    r = run("run", "bad.yaml", "-o", "bad", "--jobs", "1", dists=("components",), tmp=tmp_path)
    assert r.returncode == 1 and "returned an algorithm of 2 ranks, but ranks=4 was asked" in r.stderr
    assert "distribution collhub_hostile_components" in r.stderr and not (tmp_path / "bad").exists()


def test_plugins_list_cache_follows_edits_and_installs(tmp_path: Path) -> None:
    import shutil

    site = tmp_path / "site"
    shutil.copytree(HOSTILE / "collhub_hostile_components", site / "collhub_hostile_components")
    shutil.copytree(
        HOSTILE / "collhub_hostile_components-0.1.0.dist-info", site / "collhub_hostile_components-0.1.0.dist-info"
    )
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(site), str(REPO)]),
        COLLHUB_LOAD_PLUGINS="collhub_hostile_components",
        COLLHUB_CACHE_DIR=str(tmp_path / "cache"),
    )

    def summaries() -> dict[str, str]:
        r = subprocess.run(
            [sys.executable, "-m", "hub.cli", "plugins", "list", "--format", "json"],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            cwd=tmp_path,
        )
        assert r.returncode == 0, r.stderr
        return {c["id"]: c["summary"] for c in json.loads(r.stdout)["components"]}

    assert summaries()["hz.short"] == "returns 2 ranks whatever is asked"
    assert (tmp_path / "cache" / "plugins-v1.json").is_file()
    init = site / "collhub_hostile_components" / "__init__.py"
    init.write_text(init.read_text().replace("returns 2 ranks whatever is asked", "edited summary"))
    os.utime(init, ns=(time_ns := os.stat(init).st_mtime_ns + 10**9, time_ns))
    assert summaries()["hz.short"] == "edited summary"


# --- second pass (issue 26): loading is bounded by construction, names belong to their owner,
# contract breaches are the plugin's fault, a plugin's output path is the user's to fix.


def run_with(*args: str, load: str, tmp: Path, timeout: float = 60, **env: str) -> subprocess.CompletedProcess[str]:
    """Like :func:`run`, with ``load`` as the whole COLLHUB_LOAD_PLUGINS (first-party ones too)."""
    e = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(HOSTILE), str(REPO)]),
        COLLHUB_LOAD_PLUGINS=load,
        COLLHUB_CACHE_DIR=str(tmp / "cache"),
        COLLHUB_PLUGIN_IMPORT_TIMEOUT="3",
        **env,
    )
    e.pop("COLLHUB_DEBUG", None)
    e.pop("COLLHUB_STRICT_PLUGINS", None)
    return subprocess.run(
        [sys.executable, "-m", "hub.cli", *args], capture_output=True, text=True, env=e, timeout=timeout, cwd=tmp
    )


def _clean(r: subprocess.CompletedProcess[str], code: int) -> list[str]:
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("error: ")]
    assert r.returncode == code, r.stderr
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr
    assert len(errors) == 1 and "hint: " in r.stderr, r.stderr
    return errors


# Plugins that block at load time in ways an alarm cannot end (they swallow it, block it, or
# block in a registration hook): all listed broken with the deadline, and commands that load
# every plugin still finish.
BLOCKERS = ("stubborn", "sigblock", "hooksleep", "sleep")


@pytest.mark.parametrize("dist", BLOCKERS)
def test_blocking_at_load_is_a_broken_plugin(dist: str, tmp_path: Path) -> None:
    r = run("plugins", "list", "--format", "json", dists=(dist,), tmp=tmp_path, timeout=40)
    assert r.returncode == 0, r.stderr
    [broken] = json.loads(r.stdout)["broken"]
    assert broken["distribution"] == f"collhub_hostile_{dist}" and "did not finish within 3 s" in broken["error"]


def test_commands_loading_every_plugin_finish_despite_blockers(tmp_path: Path) -> None:
    """A pipeline run loads every installed plugin: with all the blockers installed it still runs."""
    (tmp_path / "p.yaml").write_text(
        "version: 1\nsources:\n  r: {producer: hub.ring, params: {collective: allreduce, ranks: 4}}\n"
    )
    r = run("run", "p.yaml", "-o", "out", "--jobs", "1", dists=BLOCKERS, tmp=tmp_path, timeout=90)
    assert r.returncode == 0, r.stderr
    r = run("pipeline", "validate", "p.yaml", dists=BLOCKERS, tmp=tmp_path, timeout=90)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("produce", "hlazy.factory", "-o", "x/r"),
        ("produce", "hlazy.params", "-o", "x/r"),
        ("plugins", "info", "hlazy.params"),
    ],
)
def test_component_module_blocking_at_import_is_the_plugins_fault(args: tuple[str, ...], tmp_path: Path) -> None:
    r = run(*args, dists=("lazysleep",), tmp=tmp_path, timeout=40)
    [line] = _clean(r, 4)
    assert "component 'hlazy." in line and "collhub_hostile_lazysleep" in line and "within 3 s" in line


def test_doctor_names_both_blocking_component_modules(tmp_path: Path) -> None:
    r = run("plugins", "doctor", dists=("lazysleep",), tmp=tmp_path, timeout=40)
    assert r.returncode == 4
    assert "hlazy.factory: PluginTimeout" in r.stdout and "hlazy.params: PluginTimeout" in r.stdout


def test_a_third_party_cannot_take_a_first_party_name(tmp_path: Path) -> None:
    """collhub_hostile_takeover registers plugin name 'mscclang': the real collhub-mscclang keeps
    mscclang.ir, the intruder is listed broken naming both, and its code never runs."""
    mark = tmp_path / "takeover-imported"
    load = "collhub_hostile_takeover,collhub-mscclang"
    xml = REPO / "examples" / "allreduce_ring.xml"
    r = run_with(
        "produce", "mscclang.ir", "--set", f"path={xml}", "-o", "x/m", load=load, tmp=tmp_path,
        HOSTILE_TAKEOVER_MARK=str(mark),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "x" / "m.0.et").is_file()
    r = run_with("plugins", "list", "--format", "json", load=load, tmp=tmp_path, HOSTILE_TAKEOVER_MARK=str(mark))
    doc = json.loads(r.stdout)
    [broken] = doc["broken"]
    assert broken["distribution"] == "collhub_hostile_takeover"
    assert "collhub-mscclang" in broken["error"] and "collhub_hostile_takeover" in broken["error"]
    assert {c["distribution"] for c in doc["components"] if c["id"].startswith("mscclang.")} == {"collhub-mscclang"}
    assert not mark.exists()


@pytest.mark.parametrize(("dist", "component"), [("takeover", "mscclang.ir"), ("astra", "astrasim.bundle")])
def test_first_party_names_are_reserved_even_when_not_installed(dist: str, component: str, tmp_path: Path) -> None:
    mark = tmp_path / "imported"
    r = run_with(
        "produce", component, "-o", "x/r", load=f"collhub_hostile_{dist}", tmp=tmp_path,
        HOSTILE_TAKEOVER_MARK=str(mark), HOSTILE_ASTRA_MARK=str(mark),
    )  # fmt: skip
    [line] = _clean(r, 4)
    assert f"unknown component {component!r}" in line
    assert "collhub-" + component.split(".")[0] in r.stderr and f"collhub_hostile_{dist}" in r.stderr
    assert not mark.exists()


CONTRACT = [
    (("produce", "hc.plainparams", "-o", "x/r"), "not a pydantic model"),
    (("produce", "hc.dictparams", "-o", "x/r"), "not a pydantic model"),
    (("plugins", "info", "hc.plainparams"), "not a pydantic model"),
    (("produce", "hc.none", "-o", "x/r"), "returned NoneType, expected Algorithm"),
    (("produce", "hc.number", "-o", "x/r"), "returned int, expected Algorithm"),
    (("produce", "hc.text", "-o", "x/r"), "returned str, expected Algorithm"),
    (("transform", "hc.dict", "r", "x/t"), "returned dict, expected Algorithm"),
    (("consume", "hc.list", "r"), "returned list, expected Result"),
]


@pytest.mark.parametrize(("args", "said"), CONTRACT, ids=[" ".join(a[:2]) for a, _ in CONTRACT])
def test_contract_breaches_are_the_plugins_fault(args: tuple[str, ...], said: str, tmp_path: Path) -> None:
    run("produce", "hub.ring", "--set", "ranks=4", "--set", "collective=allreduce", "-o", "r", dists=(), tmp=tmp_path)
    r = run(*args, dists=("contract",), tmp=tmp_path)
    [line] = _clean(r, 4)
    assert "hc." in line and "collhub_hostile_contract" in line + r.stderr and said in line


def test_pipeline_validate_names_a_params_model_that_is_not_one(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text("version: 1\nsources:\n  s: {producer: hc.plainparams}\n")
    r = run("pipeline", "validate", "p.yaml", dists=("contract",), tmp=tmp_path)
    assert r.returncode == 3 and "not a pydantic model" in r.stdout and "internal error" not in r.stderr


@pytest.mark.parametrize("out", ["/proc/collhub-x", "/proc/collhub-x/y", "afile/x", "/etc/passwd/x"])
def test_a_plugins_unusable_output_path_is_a_usage_error(out: str, tmp_path: Path) -> None:
    """The writer is a plugin using plain open(): the path is the user's to fix (exit 2), not a plugin bug."""
    (tmp_path / "afile").write_text("mine\n")
    run("produce", "hub.ring", "--set", "ranks=4", "--set", "collective=allreduce", "-o", "r", dists=(), tmp=tmp_path)
    r = run("consume", "hw.dump", "r", "--set", f"out={out}", dists=("writer",), tmp=tmp_path)
    [line] = _clean(r, 2)
    assert out in line and "bug" not in line
    assert (tmp_path / "afile").read_text() == "mine\n"
