"""The pipeline runner: plan the sweep, run the units (serially or in processes), write the run.

Every source x matrix point x consumer becomes one result row. A source is produced (and
transformed) once per distinct interpolated spec, so an algorithm whose params do not depend on
a matrix variable is made once and shared by every point and consumer. Rows are ordered by
source (file order), point index and consumer (file order), so serial and parallel runs write
identical results.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..errors import HubError, StepFailedError, UsageError
from ._env import ManagerSpec, manager_for
from ._executors import Executor, make_executor
from ._interrupt import Interrupts
from ._matrix import Point, interpolate
from ._plot import auto_plot
from ._rundir import RunDir, write_results
from ._validate import ValidatedPipeline

__all__ = ["RunResult", "execute", "default_jobs"]


@dataclass
class RunResult:
    """A finished run: where it was written, its rows and the full results document."""

    run_dir: Path
    rows: list[dict[str, Any]]
    document: dict[str, Any] = field(default_factory=dict)
    #: ``run_dir/results.png`` when the runner drew one (see :func:`hub.pipeline.plot_results`).
    plot: Path | None = None

    @property
    def ok(self) -> bool:
        return all(r["status"] == "ok" for r in self.rows)


def default_jobs() -> int:
    """Worker processes by default: the CPUs this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def max_jobs() -> int:
    """The most worker processes a run may ask for: 4 per CPU (a fork bomb is not a sweep)."""
    return 4 * default_jobs()


@dataclass
class _Group:
    """One distinct interpolated source spec and the points that share it."""

    source: str
    spec_key: str
    unit: dict[str, Any]
    points: list[Point] = field(default_factory=list)
    result: dict[str, Any] | None = None


def _plan(vp: ValidatedPipeline, run_dir: Path, mspec: ManagerSpec, debug: bool,
          timeout: float | None = None) -> list[_Group]:
    model = vp.model
    groups: dict[tuple[str, str], _Group] = {}
    for sname, src in model.sources.items():
        for point in vp.points:
            env = {**model.vars, **point.as_dict()}
            params = interpolate(src.params, env)
            transforms = [{"use": t.use, "params": interpolate(t.params, env), "timeout": t.timeout or timeout}
                          for t in src.transforms]
            key = json.dumps({"producer": src.producer, "params": params, "transforms": transforms},
                             sort_keys=True, default=str)
            group = groups.get((sname, key))
            if group is None:
                n = sum(1 for g in groups.values() if g.source == sname)
                unit = {
                    "kind": "produce", "manager": mspec.as_dict(), "source": sname, "producer": src.producer,
                    "params": params, "transforms": transforms, "point": point.as_dict(),
                    "spec_key": key, "run_dir": str(run_dir), "debug": debug, "timeout": src.timeout or timeout,
                    "workdir": str(Path("artifacts") / sname / f"_produce-{n:03d}"),
                }
                group = groups[(sname, key)] = _Group(sname, key, unit)
            group.points.append(point)
    return list(groups.values())


def _consume_units(vp: ValidatedPipeline, groups: list[_Group], run_dir: Path, mspec: ManagerSpec,
                   debug: bool, workers: int, timeout: float | None = None) -> list[dict[str, Any]]:
    model = vp.model
    per_group: list[tuple[_Group, list[dict[str, Any]]]] = []
    for g in groups:
        if g.result is None or not g.result["ok"]:
            continue
        jobs = []
        for point in g.points:
            env = {**model.vars, **point.as_dict()}
            for cname, cons in model.consumers.items():
                if cons.sources is not None and g.source not in cons.sources:
                    continue
                jobs.append({"consumer": cname, "use": cons.use, "params": interpolate(cons.params, env),
                             "timeout": cons.timeout or timeout,
                             "point": point.as_dict(), "point_index": point.index,
                             "workdir": str(Path("artifacts") / g.source / point.slug / cname)})
        if jobs:
            per_group.append((g, jobs))
    total = sum(len(j) for _, j in per_group)
    # Batches big enough to amortize sending the algorithm, small enough to keep workers busy.
    batch = max(1, math.ceil(total / (workers * 4))) if workers > 1 else max(1, total)
    units = []
    for g, jobs in per_group:
        for i in range(0, len(jobs), batch):
            units.append({"kind": "consume", "manager": mspec.as_dict(), "source": g.source,
                          "algorithm": g.result["algorithm"], "info": g.result["info"],  # type: ignore[index]
                          "jobs": jobs[i:i + batch], "run_dir": str(run_dir), "on_error": model.on_error,
                          "debug": debug})
    return units


def _failed(error: dict[str, Any]) -> StepFailedError:
    message = f"{error['step']} failed: {error['type']}: {error['message']}"
    if error.get("traceback"):
        message += "\n" + error["traceback"]
    return StepFailedError(message, hint=error.get("hint") or "set `on_error: continue` to record failures and go on")


def _progress(enabled: bool) -> Any:
    if not enabled:
        return None
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=Console(stderr=True), transient=True)


def _plugin_versions(mgr: Any) -> list[dict[str, Any]]:
    out = []
    for p in mgr.plugins():
        out.append({"name": p.name, "distribution": p.distribution, "version": p.version})
    return out


def _remove_empty_dirs(root: Path) -> None:
    if not root.is_dir():
        return
    for dirpath, _dirs, _files in sorted(os.walk(root), key=lambda t: -len(t[0])):
        try:
            os.rmdir(dirpath)  # only succeeds when empty
        except OSError:
            pass


def execute(vp: ValidatedPipeline, out_dir: str | Path | None = None, *, jobs: int | None = None,
            force: bool = False, manager_spec: ManagerSpec | None = None, progress: bool | None = None,
            debug: bool = False, on_row: Callable[[dict[str, Any]], None] | None = None,
            plot: bool = True, timeout: float | None = None, executor: str = "local",
            scheduler: str | None = None) -> RunResult:
    """Run a validated pipeline and publish its run directory; see the module docstring.

    With ``plot`` (and matplotlib installed) the run directory also gets ``results.png`` when the
    results have a numeric x axis with at least two values.

    ``timeout`` (seconds) bounds every component call without a ``timeout:`` of its own.
    SIGINT and SIGTERM stop the run with the workers killed and no temporary directory left
    (see :mod:`._interrupt`); they surface as ``KeyboardInterrupt``.

    ``executor`` chooses where units run (see :mod:`._executors`): ``"local"`` worker processes
    (the default); ``scheduler`` is the address of a cluster for executors that use one."""
    model = vp.model
    mspec = manager_spec or ManagerSpec()
    mgr = manager_for(mspec)
    if jobs is not None and jobs < 1:
        raise UsageError(f"--jobs must be at least 1, got {jobs}")
    if timeout is not None and not timeout > 0:
        raise UsageError(f"--timeout must be a positive number of seconds, got {timeout}")
    if jobs is not None and jobs > max_jobs():
        raise UsageError(f"--jobs {jobs} is more than {max_jobs()} worker processes",
                         hint=f"use at most {max_jobs()} (4 per CPU); the default is {default_jobs()}")
    if out_dir is None:
        out_dir = interpolate(model.output, dict(model.vars)) if model.output else Path("runs") / vp.name
    if not str(out_dir).strip():
        raise UsageError("the run directory is empty (--out '')", hint="give a directory, e.g. --out runs/sweep")
    target = Path(out_dir)
    if target.exists() and not target.is_dir():
        raise UsageError(f"{target} exists and is not a directory; a run directory cannot replace it",
                         hint="choose another --out (--force replaces only an earlier run directory)")
    with Interrupts() as interrupts:
        return _execute(vp, Path(out_dir), interrupts, mgr=mgr, mspec=mspec, jobs=jobs, force=force, progress=progress,
                        debug=debug, on_row=on_row, plot=plot, timeout=timeout, executor=executor,
                        scheduler=scheduler)


def _execute(vp: ValidatedPipeline, out_dir: Path, interrupts: Interrupts, *, mgr: Any, mspec: ManagerSpec,
             jobs: int | None, force: bool, progress: bool | None, debug: bool,
             on_row: Callable[[dict[str, Any]], None] | None, plot: bool, timeout: float | None,
             executor: str, scheduler: str | None) -> RunResult:
    from .. import __version__

    model = vp.model
    if progress is None:
        progress = sys.stderr.isatty()
    started = datetime.now(UTC)
    pool: Executor | None = None
    rd: RunDir | None = None
    bar = None
    try:
        with interrupts.critical():  # the temporary directory exists only together with its cleanup
            rd = RunDir(out_dir, force=force)
        bar = _progress(progress)
        mgr.hook.collhub_before_pipeline_run(pipeline=vp, run_dir=rd.final)
        (rd.tmp / "pipeline.yaml").write_text(vp.text, encoding="utf-8")
        groups = _plan(vp, rd.tmp, mspec, debug, timeout)
        consumers_per_source = {s: sum(1 for c in model.consumers.values() if c.sources is None or s in c.sources)
                                for s in model.sources}
        total_rows = sum(len(g.points) * max(1, consumers_per_source[g.source]) for g in groups)
        workers = min(jobs or default_jobs(), max(1, len(groups), total_rows))
        pool = make_executor(executor, workers, scheduler=scheduler)
        task = None
        if bar is not None:
            bar.start()
            task = bar.add_task(f"{vp.name}", total=len(groups) + total_rows)

        rows: list[dict[str, Any]] = []
        for i, res in pool.map([g.unit for g in groups], interrupts):
            g = groups[i]
            g.result = res
            if bar is not None:
                bar.advance(task)
            if res["ok"]:
                continue
            if model.on_error != "continue":
                raise _failed(res["error"])
            err = res["error"]
            for point in g.points:
                names = [c for c, cons in model.consumers.items() if cons.sources is None or g.source in cons.sources]
                for cname in names or [None]:
                    rows.append({"source": g.source, "consumer": cname,
                                 "component": model.consumers[cname].use if cname else None,
                                 "point": point.as_dict(), "point_index": point.index, "algorithm": None,
                                 "status": "failed", "metrics": {}, "artifacts": {}, "details": {},
                                 "error": f"{err['type']}: {err['message']}", "wall_s": 0.0})
        for g in groups:
            if g.result and g.result["ok"] and consumers_per_source[g.source] == 0:
                summary = g.result["summary"]
                for point in g.points:
                    rows.append({"source": g.source, "consumer": None, "component": None, "point": point.as_dict(),
                                 "point_index": point.index, "algorithm": g.result["info"], "status": "ok",
                                 "metrics": {k: summary[k] for k in ("nodes", "send", "recv", "comp") if k in summary},
                                 "artifacts": {}, "details": {}, "error": None, "wall_s": g.result["wall_s"]})
        units = _consume_units(vp, groups, rd.tmp, mspec, debug, workers, timeout)
        for _, res in pool.map(units, interrupts):
            if res["error"] is not None:
                raise _failed(res["error"])
            rows.extend(res["rows"])
            if bar is not None:
                bar.advance(task, len(res["rows"]))
            if on_row is not None:
                for r in res["rows"]:
                    on_row(r)
        pool.close()
        pool = None

        order_s = {s: i for i, s in enumerate(model.sources)}
        order_c = {c: i for i, c in enumerate(model.consumers)}
        rows.sort(key=lambda r: (order_s[r["source"]], r["point_index"], order_c.get(r["consumer"], -1)))
        _remove_empty_dirs(rd.tmp / "artifacts")
        finished = datetime.now(UTC)
        algorithms = {}
        for g in groups:
            if g.result and g.result["ok"]:
                info = g.result["info"]
                algorithms.setdefault(info["dir"], {**info, "source": g.source, "summary": g.result["summary"]})
        document = {
            "format": "collhub-run/1",
            "pipeline": {"name": vp.name, "file": str(vp.file), "sha256": hashlib.sha256(vp.text.encode()).hexdigest()},
            "collhub": __version__,
            "plugins": _plugin_versions(mgr),
            "python": sys.version.split()[0],
            "started": started.isoformat(timespec="seconds"),
            "finished": finished.isoformat(timespec="seconds"),
            "wall_s": round((finished - started).total_seconds(), 3),
            "jobs": workers,
            "variables": list(model.matrix),
            "points": [p.as_dict() for p in vp.points],
            "algorithms": list(algorithms.values()),
            "rows": rows,
        }
        write_results(rd.tmp, document, list(model.matrix), vp.name)
        plot_file = auto_plot(rd.tmp, document) if plot else None  # never raises
        interrupts.check()
        with interrupts.critical():  # publish whole: a signal here waits for the rename
            final = rd.commit()
        document["run_dir"] = str(final)
        plot_path = final / plot_file.name if plot_file is not None else None
        if plot_path is not None:
            document["plot"] = str(plot_path)
    except BaseException as exc:
        with interrupts.cleanup():  # a second Ctrl-C must not cut this short
            if bar is not None:
                bar.stop()
                bar = None
            if pool is not None:
                pool.kill()
            if rd is not None:
                rd.discard()
        if isinstance(exc, Exception) and rd is not None:
            mgr.hook.collhub_on_pipeline_error(pipeline=vp, run_dir=rd.final, error=exc)
            if not isinstance(exc, HubError):
                raise StepFailedError(f"pipeline {vp.name!r} failed: {type(exc).__name__}: {exc}") from exc
        raise
    finally:
        if bar is not None:
            bar.stop()
    mgr.hook.collhub_after_pipeline_run(pipeline=vp, run_dir=final, results=rows)
    return RunResult(final, rows, document, plot_path)
