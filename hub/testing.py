"""collhub's pytest plugin for plugin authors (entry point ``pytest11: collhub = hub.testing``).

Fixtures:

``collhub_pm``
    An isolated :class:`~hub.plugins.PluginManager`: no entry points are loaded, only the core's
    own components (``hub.*``) are registered. While the test runs, :func:`hub.plugins.get_manager`
    returns it, so the CLI (``typer.testing.CliRunner``) and pipelines see exactly this manager.
``collhub_tmp_plugin``
    ``collhub_tmp_plugin(module_or_object, name=None, distribution=None, version="0")`` registers a
    plugin into ``collhub_pm`` for the test only and returns its :class:`~hub.plugins.PluginInfo`.
``collhub_run_pipeline``
    ``collhub_run_pipeline(yaml_text, out_dir=None)`` runs a pipeline file's text with
    ``hub.pipeline.run_pipeline_text`` in a temporary directory and returns what it returns.
``collhub_cli``
    ``collhub_cli("produce", "mine.ring", "--set", "ranks=4", "--out", "out/r")`` runs the
    ``collhub`` command line in-process against ``collhub_pm`` (plugins registered with
    ``collhub_tmp_plugin`` included), in the test's ``tmp_path``; returns a :class:`CliResult`
    with ``exit_code``, ``stdout`` and ``stderr`` (the ``error:``/``hint:`` lines).

Helpers (plain functions):

:func:`check_producer`
    runs a producer at every rank count of a range and every collective it declares, and
    verifies each algorithm (structure, progress, semantics); one ``AssertionError`` lists every
    failing case.
:func:`check_manifest`
    validates a plugin's ``collhub-plugin.toml`` (a project directory, wheel or installed
    distribution) against its code, as ``collhub plugins validate --imports`` does.

Example::

    import my_plugin.plugin as plugin

    def test_my_producer(collhub_pm, collhub_tmp_plugin):
        collhub_tmp_plugin(plugin, name="mine")
        alg = collhub_pm.run_producer("mine.ring", {"collective": "allreduce", "ranks": 4})
        assert alg.ranks == 4
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

__all__ = [
    "CliResult",
    "check_manifest",
    "check_producer",
    "collhub_cli",
    "collhub_pm",
    "collhub_run_pipeline",
    "collhub_tmp_plugin",
]


@pytest.fixture
def collhub_pm(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """An isolated plugin manager with only the core registered; also returned by get_manager()."""
    from hub.plugins import _builtin, _manager, create_manager

    pm = create_manager(autoload=False)
    pm.register(_builtin, name="hub", distribution="collhub", version=_core_version())
    monkeypatch.setattr(_manager, "_GLOBAL", pm)
    yield pm


@pytest.fixture
def collhub_tmp_plugin(collhub_pm: Any) -> Iterator[Callable[..., Any]]:
    """Register plugins into ``collhub_pm`` for the duration of one test."""
    names: list[str] = []

    def register(plugin: Any, name: str | None = None, distribution: str | None = None, version: str = "0") -> Any:
        info = collhub_pm.register(plugin, name=name, distribution=distribution, version=version)
        names.append(info.name)
        return info

    yield register
    for name in reversed(names):
        try:
            collhub_pm.unregister(name)
        except Exception:  # noqa: BLE001 - the test may have unregistered it itself
            pass


@pytest.fixture
def collhub_run_pipeline(collhub_pm: Any, tmp_path: Path) -> Callable[..., Any]:
    """Run a pipeline from YAML text (in ``tmp_path / "run"`` unless ``out_dir`` is given)."""

    def run(text: str, out_dir: str | Path | None = None) -> Any:
        try:
            from hub.pipeline import run_pipeline_text
        except ImportError as exc:  # an older collhub without the pipeline runner
            pytest.fail(f"collhub_run_pipeline needs hub.pipeline.run_pipeline_text: {exc}")
        return run_pipeline_text(text, Path(out_dir) if out_dir is not None else tmp_path / "run")

    return run


def _core_version() -> str:
    import hub

    return str(hub.__version__)


# --------------------------------------------------------------------------- the CLI
@dataclass(frozen=True)
class CliResult:
    """One ``collhub`` invocation: exit code and the two streams, as a shell would see them."""

    exit_code: int
    stdout: str
    stderr: str


@pytest.fixture
def collhub_cli(collhub_pm: Any, tmp_path: Path) -> Callable[..., CliResult]:
    """Run ``collhub ARGS...`` in-process against ``collhub_pm``, in ``tmp_path`` (or ``cwd=``)."""
    from typer.testing import CliRunner

    from hub.cli import app

    runner = CliRunner()

    def run(*args: str, cwd: str | Path | None = None, input: str | None = None) -> CliResult:  # noqa: A002
        with contextlib.chdir(cwd if cwd is not None else tmp_path):
            r = runner.invoke(app, [str(a) for a in args], input=input)
        if r.exception is not None and not isinstance(r.exception, SystemExit):
            raise r.exception  # a crash in the command is the test's failure, with its traceback
        return CliResult(r.exit_code, r.stdout, r.stderr)

    return run


# --------------------------------------------------------------------------- producers
def check_producer(
    component: str,
    ranks: Iterable[int] = range(2, 9),
    collectives: Sequence[str] | None = None,
    params: Mapping[str, Any] | None = None,
    *,
    level: str = "semantics",
    manager: Any = None,
    allow_refusal: bool = True,
) -> list[tuple[str, int]]:
    """Run producer ``component`` at every rank count in ``ranks`` for every collective (default:
    those its descriptor declares) and verify each algorithm at ``level``.

    ``params`` are passed on with ``collective`` and ``ranks`` set per case. Rank counts outside
    the descriptor's ``min_ranks``/``max_ranks`` are left out; with ``allow_refusal`` a case the
    producer refuses with an :class:`~hub.errors.AlgorithmError` (say, powers of two only) is
    left out too, but at least one case must run. Returns the ``(collective, ranks)`` cases
    verified; raises one ``AssertionError`` that lists every failing case.
    """
    from hub.errors import AlgorithmError, HubError
    from hub.plugins import get_manager
    from hub.verify import verify

    pm = manager if manager is not None else get_manager()
    spec = pm.component(component)
    if spec.kind != "producer":
        raise AssertionError(f"{component} is a {spec.kind}, not a producer")
    colls = list(collectives) if collectives is not None else sorted(spec.collectives)
    if not colls:
        raise AssertionError(f"{component} declares no collectives: pass collectives=[...]")
    top = spec.max_ranks if spec.max_ranks is not None else float("inf")
    failures: list[str] = []
    checked: list[tuple[str, int]] = []
    for coll in colls:
        for n in ranks:
            if not spec.min_ranks <= n <= top:
                continue
            case = f"{coll} at {n} ranks"
            try:
                alg = pm.run_producer(component, {**(params or {}), "collective": coll, "ranks": n})
            except AlgorithmError as exc:
                if not allow_refusal:
                    failures.append(f"{case}: refused: {exc}")
                continue
            except HubError as exc:
                failures.append(f"{case}: {type(exc).__name__}: {exc}")
                continue
            rep = verify(alg, level=level, max_problems=3)
            if not rep.ok:
                first = "; ".join(str(p) for p in rep.problems[:3])
                failures.append(f"{case}: {rep.problem_count} problem(s): {first}")
            checked.append((coll, n))
    if failures:
        raise AssertionError(f"{component}: {len(failures)} failing case(s):\n  " + "\n  ".join(failures))
    if not checked:
        raise AssertionError(f"{component}: no case ran (every rank count was refused or out of range)")
    return checked


# --------------------------------------------------------------------------- manifests
def check_manifest(target: str | Path, *, imports: bool = True) -> Any:
    """Validate the manifest of ``target`` (project directory, ``.whl`` or distribution name)
    and, with ``imports``, compare it with what the code registers; returns the
    ``ManifestCheck`` or raises one ``AssertionError`` listing every problem."""
    from hub.plugins._manifest import validate_plugin

    check = validate_plugin(target, imports=imports)
    if not check.ok:
        raise AssertionError(
            f"{target}: {len(check.problems)} manifest problem(s):\n  " + "\n  ".join(str(p) for p in check.problems)
        )
    return check
