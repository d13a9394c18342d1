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

Example::

    import my_plugin.plugin as plugin

    def test_my_producer(collhub_pm, collhub_tmp_plugin):
        collhub_tmp_plugin(plugin, name="mine")
        alg = collhub_pm.run_producer("mine.ring", {"collective": "allreduce", "ranks": 4})
        assert alg.ranks == 4
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

__all__ = ["collhub_pm", "collhub_run_pipeline", "collhub_tmp_plugin"]


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
