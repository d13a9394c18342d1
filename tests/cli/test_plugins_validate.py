"""`collhub plugins validate` and `collhub plugins info --remote`, as real subprocesses.

Plugin projects are written here, wheels are built with pip (session fixture ``wheels`` of the
registry tests), installed distributions are made with ``pip install --target``, and the
registry is a live loopback server.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from collhub_registry import build_site, make_server
from hub.errors import UsageError
from hub.plugins._manifest import validate_plugin

REPO = Path(__file__).resolve().parents[2]


def _collhub(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: int = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hub.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )


def _json(proc: subprocess.CompletedProcess[str]) -> dict:
    return json.loads(proc.stdout)


def _problems(check) -> list[tuple[str, str]]:  # noqa: ANN001
    return [(p.where, p.message) for p in check.problems]


def _no_traceback(proc: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout


PLUGIN_CODE = """\
from hub.plugins import ConsumerSpec, ProducerSpec, TransformSpec, hookimpl

COLLHUB_PLUGIN_API = "1.0"


@hookimpl
def collhub_producers():
    return [ProducerSpec(name="a", summary="A", factory="x.y:f", collectives=frozenset({"allreduce"}))]


@hookimpl
def collhub_transforms():
    return [TransformSpec(name="b", summary="B", factory="x.y:g")]


@hookimpl
def collhub_consumers():
    return [ConsumerSpec(name="c", summary="C", factory="x.y:h", inputs=frozenset({"algorithm", "workload"}))]
"""

MATCHING_MANIFEST = """\
[[components]]
kind = "producer"
name = "a"
collectives = ["allreduce"]

[[components]]
kind = "transform"
name = "b"

[[components]]
kind = "consumer"
name = "c"
inputs = ["algorithm", "workload"]
"""


def write_project(
    root: Path,
    *,
    manifest_body: str = MATCHING_MANIFEST,
    plugin_code: str = PLUGIN_CODE,
    init_code: str = "",
    header: str | None = None,
    manifest_ep: bool = True,
    package_data: bool = True,
) -> Path:
    """A plugin project ``collhub-demo`` (entry point ``demo = collhub_demo.plugin``)."""
    project = root / "collhub-demo"
    pkg = project / "collhub_demo"
    pkg.mkdir(parents=True)
    ep = '\n[project.entry-points."collhub.manifest"]\ndemo = "collhub_demo"\n' if manifest_ep else ""
    data = (
        '\n[tool.setuptools.package-data]\ncollhub_demo = ["collhub-plugin.toml"]\n'
        if package_data
        else ('\n[tool.setuptools.package-data]\ncollhub_demo = ["py.typed"]\n')
    )
    (project / "pyproject.toml").write_text(
        textwrap.dedent("""\
        [build-system]
        requires = ["setuptools>=61"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "collhub-demo"
        version = "0.2.0"

        [project.entry-points.collhub]
        demo = "collhub_demo.plugin"
        """)
        + ep
        + data
    )
    (pkg / "__init__.py").write_text(init_code)
    (pkg / "plugin.py").write_text(plugin_code)
    if header is None:
        header = 'name = "collhub-demo"\nplugin = "demo"\napi_version = "1.0"\nrequires_hub = ">=0.1"\n'
    (pkg / "collhub-plugin.toml").write_text(header + "\n" + manifest_body)
    return project


# --------------------------------------------------------------------------- project directories
def test_consistent_project_passes_with_and_without_imports(tmp_path: Path) -> None:
    project = write_project(tmp_path)
    plain = _collhub("plugins", "validate", str(project))
    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert "demo.a" in plain.stdout and plain.stdout.rstrip().endswith("ok")
    deep = _collhub("plugins", "validate", str(project), "--imports", "--format", "json")
    assert deep.returncode == 0, deep.stdout + deep.stderr
    report = _json(deep)
    assert report["ok"] and report["imports_checked"] and report["problems"] == []
    assert report["source"] == "project" and report["distribution"] == "collhub-demo"
    assert sorted(c["id"] for c in report["registered"]) == ["demo.a", "demo.b", "demo.c"]


def test_without_imports_no_plugin_code_runs(tmp_path: Path) -> None:
    marker = tmp_path / "imported"
    side_effect = f"import pathlib\npathlib.Path({str(marker)!r}).write_text('x')\n"
    project = write_project(tmp_path, init_code=side_effect, plugin_code=side_effect + PLUGIN_CODE)
    proc = _collhub("plugins", "validate", str(project))
    assert proc.returncode == 0, proc.stderr
    assert not marker.exists()
    # ... and --imports really does import it (so the check above can fail).
    proc = _collhub("plugins", "validate", str(project), "--imports")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert marker.exists()


def test_every_mismatch_between_code_and_manifest_is_reported(tmp_path: Path) -> None:
    # By construction: a's collectives differ, b is declared with the wrong kind, the code's
    # consumer c is missing from the manifest, the manifest's d is registered by nobody.
    manifest = (
        '[[components]]\nkind = "producer"\nname = "a"\ncollectives = ["allgather"]\n\n'
        '[[components]]\nkind = "consumer"\nname = "b"\n\n'
        '[[components]]\nkind = "producer"\nname = "d"\n'
    )
    project = write_project(tmp_path, manifest_body=manifest)
    assert validate_plugin(project).ok  # the file alone is valid
    problems = set(_problems(validate_plugin(project, imports=True)))
    assert problems == {
        ("demo.a", "collectives: manifest allgather, code allreduce"),
        ("demo.b", "kind: manifest says consumer, code registers a transform"),
        ("demo.c", "registered by the code (consumer) but missing from the manifest"),
        ("demo.d", "declared in the manifest (producer) but the code does not register it"),
    }
    table = _collhub("plugins", "validate", str(project), "--imports")
    assert table.returncode == 3
    assert table.stdout.count("problem:") == 4
    assert table.stderr.strip().splitlines()[-1].endswith("4 manifest problem(s)")


def test_inputs_capabilities_and_api_version_are_compared_where_stated(tmp_path: Path) -> None:
    manifest = MATCHING_MANIFEST.replace(
        'inputs = ["algorithm", "workload"]', 'inputs = ["algorithm"]\ncapabilities = ["fast"]'
    )
    header = 'name = "collhub-demo"\nplugin = "demo"\napi_version = "1.1"\n'
    project = write_project(tmp_path, manifest_body=manifest, header=header)
    messages = sorted(m for _, m in _problems(validate_plugin(project, imports=True)))
    assert messages == [
        "1.1 but the code declares COLLHUB_PLUGIN_API = '1.0'",
        "capabilities: manifest fast, code (any)",
        "inputs: manifest algorithm, code algorithm, workload",
    ]


def test_all_manifest_errors_are_listed_and_nothing_is_imported(tmp_path: Path) -> None:
    header = (
        'name = "collhub-other-name"\nplugin = "nodemo"\napi_version = "2.0"\nrequires_hub = "~~1"\ncolour = "red"\n'
    )
    manifest = (
        '[[components]]\nkind = "producer"\nname = "a"\ncollectives = ["allreducee"]\n\n'
        '[[components]]\nkind = "producer"\nname = "a"\n\n'
        '[[components]]\nkind = "consumer"\nname = "c"\noutputs = ["algorithm"]\n'
    )
    project = write_project(tmp_path, header=header, manifest_body=manifest, init_code="raise SystemExit(9)\n")
    # colour (an unknown key) and an unparsable requires_hub make the model reject the file: every
    # field error is listed.
    problems = sorted((w.rsplit(": ", 1)[-1], m) for w, m in _problems(validate_plugin(project)))
    assert [field for field, _ in problems] == ["colour", "requires_hub"]
    assert problems[0][1] == "Extra inputs are not permitted"
    assert "'~~1' is not a PEP 440 version specifier" in problems[1][1]
    header = header.replace('requires_hub = "~~1"\n', "")
    (project / "collhub_demo" / "collhub-plugin.toml").write_text(
        header.replace('colour = "red"\n', "") + 'lifecycle = "dead"\n[[components]]\nkind = "x"\nname = "Bad.Name"\n'
    )
    fields = sorted(w.rsplit(": ", 1)[-1] for w, _ in _problems(validate_plugin(project)))
    assert fields == ["components.0.kind", "components.0.name", "lifecycle"]
    # A valid file with semantic errors: each one named.
    (project / "collhub_demo" / "collhub-plugin.toml").write_text(header.replace('colour = "red"\n', "") + manifest)
    got = [m for _, m in _problems(validate_plugin(project))]
    expected = [
        "'collhub-other-name' differs from the distribution name 'collhub-demo'",
        "'nodemo' is not an entry point in [collhub]",
        "the entry point is named 'demo'; name it 'nodemo'",
        "2.0 has another major",
        "unknown collective(s) allreducee",
        "name 'a' repeats components[0]",
        "outputs applies to producers only, not a consumer",
    ]
    assert len(got) == len(expected), got
    for text in expected:
        assert sum(text in m for m in got) == 1, (text, got)
    table = _collhub("plugins", "validate", str(project))
    assert table.returncode == 3 and table.stdout.count("problem:") == len(expected)
    _no_traceback(table)


def test_missing_manifest_entry_point_and_package_data_are_problems(tmp_path: Path) -> None:
    project = write_project(tmp_path, manifest_ep=False, package_data=False)
    proc = _collhub("plugins", "validate", str(project))
    assert proc.returncode == 3
    assert 'add [project.entry-points."collhub.manifest"] demo = "collhub_demo"' in proc.stdout
    assert "does not include 'collhub-plugin.toml'" in proc.stdout
    assert "demo.a" in proc.stdout  # the manifest itself was still found and read


def test_invalid_toml_and_missing_file(tmp_path: Path) -> None:
    project = write_project(tmp_path)
    manifest = project / "collhub_demo" / "collhub-plugin.toml"
    manifest.write_text('name = "collhub-demo"\nplugin = \n')
    ((where, message),) = _problems(validate_plugin(project))
    assert where == str(manifest) and message.startswith("invalid TOML") and "line 2" in message
    manifest.unlink()
    proc = _collhub("plugins", "validate", str(project))
    assert proc.returncode == 3 and "manifest file does not exist" in proc.stdout
    _no_traceback(proc)


def test_import_failure_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    project = write_project(tmp_path, plugin_code="import does_not_exist_anywhere\n")
    proc = _collhub("plugins", "validate", str(project), "--imports")
    assert proc.returncode == 3
    assert "import failed: ModuleNotFoundError" in proc.stdout
    _no_traceback(proc)


def test_bad_target_is_an_error(tmp_path: Path) -> None:
    proc = _collhub("plugins", "validate", "collhub-no-such-plugin-anywhere")
    assert proc.returncode == 3  # a missing input, as everywhere (tests/cli/test_surface.py)
    assert proc.stderr.startswith("error: collhub-no-such-plugin-anywhere: no such directory, wheel file or installed")
    _no_traceback(proc)
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(UsageError, match="not a plugin project directory or a .whl file"):
        validate_plugin(tmp_path / "notes.txt")
    with pytest.raises(UsageError, match="no pyproject.toml"):
        validate_plugin(tmp_path)


# --------------------------------------------------------------------------- wheels and installed dists
def test_wheel(wheels: dict[str, Path]) -> None:
    check = validate_plugin(wheels["sample"])
    assert check.ok, check.problems
    assert check.source == "wheel" and check.version == "1.2.0"
    assert check.manifest_file == "collhub_sample-1.2.0-py3-none-any.whl:collhub_sample/collhub-plugin.toml"
    # The sample's plugin.py registers `pairs` for any collective; its manifest says alltoall.
    deep = _collhub("plugins", "validate", str(wheels["sample"]), "--imports", "-f", "json")
    assert deep.returncode == 3
    assert [(p["where"], p["message"]) for p in _json(deep)["problems"]] == [
        ("sample.pairs", "collectives: manifest alltoall, code (any)")
    ]
    ((_, message),) = _problems(validate_plugin(wheels["no_manifest"]))
    assert "expected one entry point in group 'collhub.manifest', found 0" in message


def test_installed_distribution_is_read_without_importing_it(tmp_path: Path, wheels: dict[str, Path]) -> None:
    target = tmp_path / "site"
    pip = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-index",
            "--target",
            str(target),
            str(wheels["sample"]),
        ],
        capture_output=True,
        text=True,
    )
    assert pip.returncode == 0, pip.stderr
    env = {"PYTHONPATH": os.pathsep.join([str(target), str(REPO)])}
    # In a fresh interpreter: validate, then look whether the plugin's package got imported.
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import json, sys; from hub.plugins._manifest import validate_plugin as v; c = v('collhub-sample'); "
            "print(json.dumps({'imported': 'collhub_sample' in sys.modules, **c.as_dict()}))",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
    )
    report = json.loads(probe.stdout)
    assert report["ok"] and report["imported"] is False, report
    assert report["source"] == "installed" and report["manifest"]["display_name"] == "Sample pairs"
    assert report["manifest_file"] == "collhub-sample:collhub_sample/collhub-plugin.toml"
    deep = _collhub("plugins", "validate", "collhub-sample", "--imports", "-f", "json", env=env)
    assert deep.returncode == 3
    assert [p["where"] for p in _json(deep)["problems"]] == ["sample.pairs"]


# --------------------------------------------------------------------------- first-party plugins
# The lines the lead adds to plugins/<name>/pyproject.toml; the copies below get them if missing.
FIRST_PARTY = {
    "astrasim": ("collhub_astrasim", ["astrasim.bundle", "astrasim.custom", "astrasim.run"]),
    "mscclang": ("collhub_mscclang", ["mscclang.export", "mscclang.ir", "mscclang.program"]),
    "taccl": ("collhub_taccl", ["taccl.synthesize"]),
    "forest": ("collhub_forest", ["forest.synthesize"]),
    "mscclpp": ("collhub_mscclpp", ["mscclpp.export", "mscclpp.plan"]),
    "nccl": ("collhub_nccl", ["nccl.auto", "nccl.nvls", "nccl.nvlstree", "nccl.pat", "nccl.ring", "nccl.tree"]),
    "tacos": ("collhub_tacos", ["tacos.synthesize"]),
    "replay": ("collhub_replay", ["replay.run"]),
}


@pytest.mark.parametrize("name", sorted(FIRST_PARTY))
def test_first_party_manifests_match_their_code(tmp_path: Path, name: str) -> None:
    package, ids = FIRST_PARTY[name]
    src = REPO / "plugins" / name
    project = tmp_path / name
    shutil.copytree(src / package, project / package, ignore=shutil.ignore_patterns("__pycache__"))
    text = (src / "pyproject.toml").read_text()
    if '"collhub.manifest"' not in text:
        text += f'\n[project.entry-points."collhub.manifest"]\n{name} = "{package}"\n'
    if "collhub-plugin.toml" not in text:
        text = text.replace(f'{package} = ["py.typed"]', f'{package} = ["py.typed", "collhub-plugin.toml"]')
    (project / "pyproject.toml").write_text(text)
    proc = _collhub("plugins", "validate", str(project), "--imports", "-f", "json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = _json(proc)
    assert sorted(c["id"] for c in report["registered"]) == ids
    assert report["manifest"]["name"] == f"collhub-{name}"


# --------------------------------------------------------------------------- plugins info --remote
def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_info_remote_json(server, wheels: dict[str, Path], tmp_path: Path) -> None:
    env = {"COLLHUB_CACHE_DIR": str(tmp_path / "cache")}
    proc = _collhub("plugins", "info", "collhub_other", "--remote", "--registry", server.url, "-f", "json", env=env)
    assert proc.returncode == 0, proc.stderr
    doc = _json(proc)
    assert doc["name"] == "collhub-other"
    # 0.4.0 needs collhub>=99 but is the newest non-yanked version: `latest` is about the index.
    assert doc["latest"] == "0.4.0"
    versions = doc["plugin"]["versions"]
    assert sorted(versions) == ["0.3.0", "0.4.0"]
    assert versions["0.4.0"]["requires_hub"] == ">=99" and versions["0.3.0"]["requires_hub"] == ">=0.1"
    assert versions["0.3.0"]["yanked"] is False and versions["0.3.0"]["api_version"] == "1.0"
    (f,) = versions["0.3.0"]["files"]
    assert f["filename"] == wheels["other"].name
    assert f["hashes"]["sha256"] == _sha256(wheels["other"]) and f["size"] == wheels["other"].stat().st_size
    assert doc["components"] == [
        {
            "id": "other.replay",
            "kind": "consumer",
            "summary": "Replay on NCCL",
            "collectives": ["allreduce", "allgather"],
        }
    ]


def test_info_remote_table_with_yanked_version(tmp_path: Path, wheels: dict[str, Path]) -> None:
    build_site(
        [wheels["sample"], wheels["other"], wheels["other_future"]], tmp_path / "site", yanked=["collhub-other==0.4.0"]
    )
    srv = make_server(tmp_path / "site", "127.0.0.1", 0)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        env = {"COLLHUB_REGISTRY_URL": srv.url, "COLLHUB_CACHE_DIR": str(tmp_path / "cache")}
        proc = _collhub("plugins", "info", "collhub-other", "--remote", env=env)
    finally:
        srv.shutdown()
        srv.server_close()
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("collhub-other 0.3.0")  # latest skips the yanked 0.4.0
    rows = {ln.split()[0]: ln.split() for ln in lines if re.match(r"^0\.[34]\.0\s+(yes|no)\s", ln)}
    assert rows["0.4.0"][1:4] == ["yes", ">=99", "1.0"] and rows["0.3.0"][1:4] == ["no", ">=0.1", "1.0"]
    assert _sha256(wheels["other_future"]) in proc.stdout and _sha256(wheels["other"]) in proc.stdout
    assert any(ln.split()[:3] == ["other.replay", "consumer", "allreduce,allgather"] for ln in lines)


def test_info_remote_errors_exit_5(server, tmp_path: Path) -> None:
    env = {"COLLHUB_CACHE_DIR": str(tmp_path / "cache")}
    missing = _collhub("plugins", "info", "collhub-nope", "--remote", "--registry", server.url, env=env)
    assert (
        missing.returncode == 5
        and missing.stderr.startswith("error: ")
        and "has no plugin named 'collhub-nope'" in missing.stderr
    )
    down = _collhub("plugins", "info", "collhub-other", "--remote", "--registry", "http://127.0.0.1:9/", env=env)
    assert down.returncode == 5 and down.stderr.startswith("error: cannot reach")
    for proc in (missing, down):
        _no_traceback(proc)
        assert len([ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]) == 1
    usage = _collhub("plugins", "info", "collhub-other", "--registry", server.url)
    assert usage.returncode == 2 and "--registry needs --remote" in usage.stderr
