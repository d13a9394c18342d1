"""Declarative pipelines: sources (producer + transforms) x matrix points x consumers.

::

    from hub.pipeline import plot_results, run_pipeline
    run = run_pipeline("examples/compare-allreduce.yaml", jobs=4)
    print(run.run_dir, len(run.rows))
    plot_results(run.run_dir, "time.png", metric="time_us")  # the run drew results.png (busbw)

See ``docs/pipeline.md`` for the file format.
"""

from __future__ import annotations

import typing as _typing

from .._lazy import lazy_exports as _lazy_exports

#: public name -> the private module defining it, imported on first use (PEP 562): ``collhub
#: produce`` needs only the YAML loader, not the runner, the plots or the report behind them
_LAZY: dict[str, str] = {
    "ManagerSpec": "._run.env",
    "LoadedFile": "._file.loader",
    "load_file": "._file.loader",
    "load_text": "._file.loader",
    "Point": "._file.matrix",
    "expand": "._file.matrix",
    "interpolate": "._file.matrix",
    "ConsumerStep": "._file.model",
    "Pipeline": "._file.model",
    "SourceSpec": "._file.model",
    "TransformStep": "._file.model",
    "json_schema": "._file.model",
    "Panel": "hub.results",
    "PlotLayout": "hub.results",
    "plot_layout": "hub.results",
    "plot_results": "hub.results",
    "RunResult": "._run.runner",
    "default_jobs": "._run.runner",
    "execute": "._run.runner",
    "Step": "._run.unit",
    "run_unit": "._run.unit",
    "KNOWN_PLUGINS": "._file.validate",
    "ValidatedPipeline": "._file.validate",
    "validate_file": "._file.validate",
    "validate_loaded": "._file.validate",
    "validate_text": "._file.validate",
}

if _typing.TYPE_CHECKING:  # for type checkers; at run time __getattr__ imports on first use
    from pathlib import Path
    from typing import Any

    from ..results import Panel, PlotLayout, plot_layout, plot_results
    from ._file.loader import LoadedFile, load_file, load_text
    from ._file.matrix import Point, expand, interpolate
    from ._file.model import ConsumerStep, Pipeline, SourceSpec, TransformStep, json_schema
    from ._file.validate import KNOWN_PLUGINS, ValidatedPipeline, validate_file, validate_loaded, validate_text
    from ._run.env import ManagerSpec
    from ._run.runner import RunResult, default_jobs, execute
    from ._run.unit import Step, run_unit

__all__ = [
    "KNOWN_PLUGINS",
    "ConsumerStep",
    "LoadedFile",
    "ManagerSpec",
    "Panel",
    "Pipeline",
    "PlotLayout",
    "Point",
    "RunResult",
    "SourceSpec",
    "Step",
    "TransformStep",
    "ValidatedPipeline",
    "default_jobs",
    "execute",
    "expand",
    "interpolate",
    "json_schema",
    "load_file",
    "load_pipeline",
    "load_text",
    "plot_layout",
    "plot_results",
    "run_pipeline",
    "run_pipeline_text",
    "run_unit",
    "validate_file",
    "validate_loaded",
    "validate_pipeline",
    "validate_text",
]


def load_pipeline(path: str | Path) -> Pipeline:
    """Parse a pipeline file and check its structure (pass 1 only; no plugins are loaded)."""
    from ._file.loader import load_file
    from ._file.model import Pipeline
    from ._file.validate import _raise, _structure_issues

    loaded = load_file(path)
    issues = _structure_issues(loaded)
    if issues:
        _raise(loaded, issues)
    return Pipeline.model_validate(loaded.data)


def validate_pipeline(path: str | Path, *, manager_spec: ManagerSpec | None = None) -> ValidatedPipeline:
    """Both validation passes; raises :class:`hub.errors.PipelineValidationError` listing every issue."""
    from ._file.validate import validate_file

    return validate_file(path, manager_spec=manager_spec)


def run_pipeline(
    path: str | Path,
    out_dir: str | Path | None = None,
    jobs: int | None = None,
    *,
    force: bool = False,
    manager_spec: ManagerSpec | None = None,
    progress: bool | None = False,
    debug: bool = False,
    plot: bool = True,
    resume: str | bool | None = None,
) -> RunResult:
    """Validate and run a pipeline file; ``out_dir`` defaults to the file's ``output:``
    (relative to the current directory) or ``runs/<name>``; ``jobs`` to the CPU count;
    ``plot`` draws ``results.png`` when matplotlib is installed and the results have a numeric x;
    ``resume`` (``True`` or ``"strict"``) completes an earlier run directory at ``out_dir``."""
    from ._file.validate import validate_file
    from ._run.runner import execute

    vp = validate_file(path, manager_spec=manager_spec)
    return execute(
        vp,
        out_dir,
        jobs=jobs,
        force=force,
        manager_spec=manager_spec,
        progress=progress,
        debug=debug,
        plot=plot,
        resume=resume,
    )


def run_pipeline_text(text: str, out_dir: str | Path, jobs: int = 1, **options: Any) -> RunResult:
    """Validate and run pipeline ``text`` (for tests and notebooks); options as for :func:`run_pipeline`."""
    from ._file.validate import validate_text
    from ._run.runner import execute

    manager_spec = options.pop("manager_spec", None)
    vp = validate_text(text, "<pipeline>", manager_spec=manager_spec)
    options.setdefault("progress", False)
    return execute(vp, out_dir, jobs=jobs, manager_spec=manager_spec, **options)


__getattr__, __dir__ = _lazy_exports(__name__, _LAZY, globals())
