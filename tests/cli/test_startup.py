"""What ``collhub produce`` and ``consume`` import: start-up is kept short by not importing what they do not use.

Checked by module presence in ``sys.modules`` after a real command in a fresh interpreter, never by
timing (timings belong to ``benchmarks/``). Every installed plugin is loaded, as a user's
``collhub`` does, so a plugin whose registration imports its heavy code shows up here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

#: modules `produce` has no use for: the registry client's HTTP stack, the registry site builder
#: (imported when the collhub-registry plugin loads, if its package imports it eagerly), plots,
#: the pipeline runner, and PyYAML with the pipeline loader (plain --set values need neither)
NOT_ON_PRODUCE_PATH = (
    "httpx",
    "collhub_registry._builder",
    "matplotlib",
    "hub.pipeline._run.runner",
    "yaml",
    "hub.pipeline._file.loader",
)
#: what `--help` never imports once the entry-point index is warm: importlib.metadata (the scan of
#: every distribution's metadata), the plugin manager and its dependencies, numpy, YAML, and the
#: findings of verification and pipeline validation (two dataclasses hub.errors makes on first use)
NOT_ON_WARM_HELP_PATH = (
    "importlib.metadata",
    "hub.plugins._manager",
    "pluggy",
    "pydantic",
    "numpy",
    "yaml",
    "hub._findings",
)
#: modules `consume hub.simulate` of an algorithm has no use for: the workload layer (ASTRA-sim's
#: native collectives), the trace/plot writers, the codec's writing half, the JSON view, summaries,
#: the workload codec, link-graph presets and network.yml, every other component's package, and
#: numpy.ma (a plain np.unique imports it on first call)
NOT_ON_SIMULATE_PATH = (
    "hub.sim._astrasim.workload",
    "hub.sim._astrasim.collectives",
    "hub.sim._astrasim.streams",
    "hub.sim._views.trace",
    "hub.sim._views.timeline",
    "hub.sim._views.tracks",
    "hub.chakra._json",
    "hub.chakra._summary",
    "hub.chakra._writer",
    "hub.chakra._encode",
    "hub.chakra._workload_io",
    "hub.topology._presets",
    "hub.topology._yaml",
    "hub.algorithms",
    "hub.transforms",
    "hub.verify",
    "hub.pipeline",
    "hub._findings",
    "numpy.ma",
    "matplotlib",
    "yaml",
    "httpx",
)


def _modules_after(argv: list[str], tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    code = (
        "import json, sys\nfrom hub.cli import main\n"
        f"try:\n    main({argv!r})\nexcept SystemExit as exc:\n    code = exc.code\n"
        "print('MODULES', json.dumps(sorted(sys.modules)), 'EXIT', code, file=sys.stderr)"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO), COLLHUB_CACHE_DIR=str(tmp_path / "cache"))
    for name in ("COLLHUB_LOAD_PLUGINS", "COLLHUB_DISABLE_PLUGINS", "COLLHUB_DEBUG"):
        env.pop(name, None)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    line = next((x for x in p.stderr.splitlines() if x.startswith("MODULES ")), None)
    assert line is not None, p.stderr
    modules, _, code_text = line.removeprefix("MODULES ").rpartition(" EXIT ")
    assert code_text == "0", p.stdout + p.stderr
    return p, json.loads(modules)


def test_produce_two_ranks_imports_no_http_registry_builder_plots_or_runner(tmp_path: Path) -> None:
    out = tmp_path / "r"
    p, modules = _modules_after(
        ["produce", "hub.ring", "-s", "ranks=2", "-s", "collective=allgather", "--out", str(out)], tmp_path
    )
    # the command really ran: both rank files exist
    assert (tmp_path / "r.0.et").is_file() and (tmp_path / "r.1.et").is_file(), p.stdout + p.stderr
    # and it went through the paths that must stay light: the plugin manager and the --set parser
    assert "hub.plugins._manager" in modules and "hub.cli._scalars" in modules
    imported = [m for m in NOT_ON_PRODUCE_PATH if m in modules]
    assert not imported, f"`collhub produce` imported {imported}"


@pytest.mark.parametrize("mode", ["aware", "unaware"])
def test_consume_simulate_imports_the_engine_only(tmp_path: Path, mode: str) -> None:
    prefix = tmp_path / "ring"
    made = subprocess.run(
        [sys.executable, "-m", "hub.cli", "produce", "hub.ring", "-s", "ranks=4", "-s", "collective=allreduce"]
        + ["--out", str(prefix)],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, PYTHONPATH=str(REPO), COLLHUB_CACHE_DIR=str(tmp_path / "cache")),
    )
    assert made.returncode == 0, made.stderr
    argv = ["consume", "hub.simulate", str(prefix), "-s", "network=ring:4", "-s", f"mode={mode}", "-s", "size=1MiB"]
    argv += ["-f", "json"]
    p, modules = _modules_after(argv, tmp_path)
    # the command really simulated, through the compiled event loop
    assert json.loads(p.stdout)["metrics"]["mode"] == mode and json.loads(p.stdout)["metrics"]["time_ns"] > 0
    assert "hub._native._sim" in modules and "hub.sim._engine.loop" in modules and "hub.chakra._stream" in modules
    imported = [m for m in NOT_ON_SIMULATE_PATH if m in modules]
    assert not imported, f"`collhub consume hub.simulate` imported {imported}"


def test_a_yaml_set_value_still_goes_through_the_loader(tmp_path: Path) -> None:
    argv = ["produce", "hub.ring", "-s", "ranks=2", "-s", "collective=allgather", "-s", "inplace=yes"]
    _, modules = _modules_after([*argv, "--out", str(tmp_path / "r")], tmp_path)
    assert "hub.pipeline._file.loader" in modules and "hub.pipeline._run.runner" not in modules


def test_warm_help_reads_the_entry_point_index_only(tmp_path: Path) -> None:
    _modules_after(["--help"], tmp_path)  # the cold start writes the index
    assert list((tmp_path / "cache").glob("entry-points-v1-*.json"))
    _, modules = _modules_after(["--help"], tmp_path)
    assert "hub.plugins._index" in modules
    imported = [m for m in NOT_ON_WARM_HELP_PATH if m in modules]
    assert not imported, f"`collhub --help` imported {imported}"


def test_lazy_names_still_resolve() -> None:
    # the deferred packages keep their public names: each resolves to its defining module's object
    code = (
        "import hub.pipeline as p, hub.registry as r, collhub_registry as c\n"
        "from hub.pipeline._run.runner import execute\nfrom hub.registry._client import RegistryClient\n"
        "from collhub_registry._builder import build_site\n"
        "assert p.execute is execute and r.RegistryClient is RegistryClient and c.build_site is build_site\n"
        "print('OK')"
    )
    p = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
    )
    assert p.stdout.strip() == "OK", p.stderr


def _blas_threads_seen(env_extra: dict[str, str], as_cli: bool) -> str | None:
    """OPENBLAS_NUM_THREADS as the process sees it after importing hub.cli (argv[0] decides
    whether it is the collhub process or a library caller)."""
    argv0 = "collhub" if as_cli else "host-program"
    code = f"import os, sys\nsys.argv = [{argv0!r}]\nimport hub.cli\nprint(os.environ.get('OPENBLAS_NUM_THREADS'))"
    env = {
        k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")
    }
    env.update(env_extra, PYTHONPATH=str(REPO))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60, check=True)
    value = r.stdout.strip()
    return None if value == "None" else value


def test_the_cli_runs_numpy_with_one_blas_thread_unless_the_user_chose() -> None:
    assert _blas_threads_seen({}, as_cli=True) == "1"  # no idle BLAS pool per collhub process
    assert _blas_threads_seen({"OPENBLAS_NUM_THREADS": "4"}, as_cli=True) == "4"
    assert _blas_threads_seen({"OMP_NUM_THREADS": "3"}, as_cli=True) is None  # the user's OpenMP count rules
    assert _blas_threads_seen({}, as_cli=False) is None  # a library caller's process is left alone
