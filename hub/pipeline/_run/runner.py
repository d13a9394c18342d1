"""The pipeline runner: plan the sweep, run the units (serially or in processes), write the run.

Every source x matrix point x consumer becomes one result row. A source is produced (and
transformed) once per distinct interpolated spec, so an algorithm whose params do not depend on
a matrix variable is made once and shared by every point and consumer. Rows are ordered by
source (file order), point index and consumer (file order), so serial and parallel runs write
identical results.

:func:`execute` is four steps: plan (:mod:`hub.pipeline._run.plan`: slots, content keys, what a resume reuses),
run (units through an executor, rows appended to ``rows.jsonl`` as they come), collect (the
results document's metadata) and write (results files streamed from the log, then publish).
With ``on_error: fail`` the error reported is the first failing row in file order, whatever
finished first: results keep coming until every unit holding an earlier row has finished.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ...errors import HubError, PluginError, StepFailedError, UsageError
from ...results import auto_report
from ...results._plot import auto_plot
from ...results._tables import write_from_log
from .._file.matrix import interpolate
from .._file.validate import ValidatedPipeline
from .._record.row import build_row
from .._record.rowlog import LOG_NAME, RowLog, read_log
from .._record.rundir import RunDir
from .env import ManagerSpec, manager_for
from .executors import Executor, make_executor
from .hooks import HookReporter, call_observers
from .interrupt import Interrupts
from .keys import KeyMaker
from .plan import Group, Plan, Reuse, make_plan, match_log

__all__ = ["RunResult", "execute", "default_jobs"]

_ALGORITHMS = "algorithms.jsonl"


@dataclass
class RunResult:
    """A finished run: where it was written, its rows and the full results document.

    ``rows`` and ``document`` are read from the run directory's ``results.json`` when first
    asked for, so a run of a million rows does not hold them all."""

    run_dir: Path
    meta: dict[str, Any] = field(default_factory=dict)
    #: ``run_dir/results.png`` when the runner drew one (see :func:`hub.pipeline.plot_results`).
    plot: Path | None = None
    #: What a resume reused (None for a new run).
    reuse: Reuse | None = None
    _rows: list[dict[str, Any]] | None = None

    @property
    def rows(self) -> list[dict[str, Any]]:
        if self._rows is None:
            with open(self.run_dir / "results.json", encoding="utf-8") as fh:
                self._rows = json.load(fh)["rows"]
        return self._rows

    @property
    def document(self) -> dict[str, Any]:
        return {**self.meta, "rows": self.rows}

    def iter_rows(self) -> Iterator[dict[str, Any]]:
        """The rows one at a time (flat memory), in file order."""
        if self._rows is not None:
            yield from self._rows
            return
        yield from read_log(self.run_dir / LOG_NAME)  # written in file order when the run completed

    @property
    def ok(self) -> bool:
        return all(r["status"] == "ok" for r in self.iter_rows())


def default_jobs() -> int:
    """Worker processes by default: the CPUs this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def max_jobs() -> int:
    """The most worker processes a run may ask for: 4 per CPU (a fork bomb is not a sweep)."""
    return 4 * default_jobs()


def _failed(error: dict[str, Any]) -> HubError:
    if error.get("kind") == "hook":  # a step hook under COLLHUB_STRICT_PLUGINS=1: the plugin's fault
        return PluginError(error["text"], hint=error.get("hint"))
    message = f"{error['step']} failed: {error['type']}: {error['message']}"
    if error.get("traceback"):
        message += "\n" + error["traceback"]
    return StepFailedError(message, hint=error.get("hint") or "set `on_error: continue` to record failures and go on")


def _progress(enabled: bool) -> Any:
    if not enabled:
        return None
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )


def _remove_empty_dirs(root: Path) -> None:
    if not root.is_dir():
        return
    for dirpath, _dirs, _files in sorted(os.walk(root), key=lambda t: -len(t[0])):
        try:
            os.rmdir(dirpath)  # only succeeds when empty
        except OSError:
            pass


def execute(
    vp: ValidatedPipeline,
    out_dir: str | Path | None = None,
    *,
    jobs: int | None = None,
    force: bool = False,
    manager_spec: ManagerSpec | None = None,
    progress: bool | None = None,
    debug: bool = False,
    on_row: Callable[[dict[str, Any]], None] | None = None,
    plot: bool = True,
    timeout: float | None = None,
    executor: str = "local",
    scheduler: str | None = None,
    resume: str | bool | None = None,
) -> RunResult:
    """Run a validated pipeline and publish its run directory; see the module docstring.

    With ``plot`` (and matplotlib installed) the run directory also gets ``results.png`` when the
    results have a numeric x axis with at least two values.

    ``timeout`` (seconds) bounds every component call without a ``timeout:`` of its own.
    SIGINT and SIGTERM stop the run with the workers killed; the rows done so far stay in the
    run directory, marked ``INCOMPLETE`` (see :mod:`hub.pipeline._record.rundir`); they surface
    as ``KeyboardInterrupt``.

    ``resume`` (``True``/``"auto"`` or ``"strict"``) completes the run directory at ``out_dir``:
    rows whose content key is there are reused, the rest computed; ``"strict"`` refuses
    (UsageError) when a row of the pipeline was run before with other params, plugins or inputs.

    ``executor`` chooses where units run (see :mod:`hub.pipeline._run.executors`): ``"local"`` worker processes
    (the default); ``scheduler`` is the address of a cluster for executors that use one."""
    model = vp.model
    mspec = manager_spec or ManagerSpec()
    mgr = manager_for(mspec)
    if jobs is not None and jobs < 1:
        raise UsageError(f"--jobs must be at least 1, got {jobs}")
    if timeout is not None and not timeout > 0:
        raise UsageError(f"--timeout must be a positive number of seconds, got {timeout}")
    if jobs is not None and jobs > max_jobs():
        raise UsageError(
            f"--jobs {jobs} is more than {max_jobs()} worker processes",
            hint=f"use at most {max_jobs()} (4 per CPU); the default is {default_jobs()}",
        )
    mode = {None: None, False: None, True: "auto", "auto": "auto", "strict": "strict"}.get(resume, "?")
    if mode == "?":
        raise UsageError(f"--resume takes 'auto' or 'strict', got {resume!r}")
    if mode and force:
        raise UsageError(
            "--resume and --force exclude each other", hint="--resume completes a run directory, --force replaces it"
        )
    if out_dir is None:
        out_dir = interpolate(model.output, dict(model.vars)) if model.output else Path("runs") / vp.name
    if not str(out_dir).strip():
        raise UsageError("the run directory is empty (--out '')", hint="give a directory, e.g. --out runs/sweep")
    target = Path(out_dir)
    if target.exists() and not target.is_dir():
        raise UsageError(
            f"{target} exists and is not a directory; a run directory cannot replace it",
            hint="choose another --out (--force replaces only an earlier run directory)",
        )
    with Interrupts() as interrupts:
        run = _Run(
            vp,
            mgr,
            mspec,
            interrupts,
            jobs=jobs,
            debug=debug,
            on_row=on_row,
            timeout=timeout,
            executor=executor,
            scheduler=scheduler,
            progress=sys.stderr.isatty() if progress is None else progress,
            plot=plot,
        )
        return run.execute(target, force=force, resume=mode)


class _Run:
    """One run's state; :meth:`execute` is plan, run, collect, write."""

    def __init__(
        self,
        vp: ValidatedPipeline,
        mgr: Any,
        mspec: ManagerSpec,
        interrupts: Interrupts,
        *,
        jobs: int | None,
        debug: bool,
        on_row: Callable[[dict[str, Any]], None] | None,
        timeout: float | None,
        executor: str,
        scheduler: str | None,
        progress: bool,
        plot: bool,
    ) -> None:
        self.plot = plot
        self.vp, self.mgr, self.mspec, self.interrupts = vp, mgr, mspec, interrupts
        self.jobs, self.debug, self.on_row, self.timeout = jobs, debug, on_row, timeout
        self.executor, self.scheduler, self.progress = executor, scheduler, progress
        self.hooks = HookReporter()
        self.bar: Any = None
        self.task: Any = None
        self.workers = 1

    # ------------------------------------------------------------------ the four steps
    def execute(self, target: Path, *, force: bool, resume: str | None) -> RunResult:
        from ... import __version__

        vp = self.vp
        started = datetime.now(UTC)
        plan = make_plan(vp, KeyMaker(self.mgr), self.mspec, self.debug, self.timeout)
        reuse = self._check_resume(target, plan, resume)
        pool: Executor | None = None
        rd: RunDir | None = None
        log: RowLog | None = None
        try:
            with self.interrupts.critical():  # the directory exists only together with its cleanup
                rd = RunDir(
                    target, force=force, resume=resume is not None, resume_command=f"collhub run {vp.file} --resume"
                )
            self._observe("collhub_before_pipeline_run", pipeline=vp, run_dir=rd.final)
            (rd.work / "pipeline.yaml").write_text(vp.text, encoding="utf-8")
            log = self._open_log(rd, plan)
            self.workers = min(self.jobs or default_jobs(), max(1, len(plan.groups), plan.total))
            pool = make_executor(self.executor, self.workers, scheduler=self.scheduler)
            self.workers = pool.workers  # a cluster's own size (batches are cut for it)
            self._start_bar(plan.total, log.count)
            self._run(plan, pool, rd, log)
            pool.close()
            pool = None
            meta = self._collect(plan, rd, started, __version__)
            plot_file = self._write(rd, meta, log)
            self.interrupts.check()
            with self.interrupts.critical():  # publish whole: a signal here waits for the rename
                final = rd.commit()
        except BaseException as exc:
            if self.interrupts.stopping and isinstance(exc, Exception):
                # A signal arrived and its KeyboardInterrupt became another error on its way out
                # (a plugin guard, a half-imported module): keep the rows, as for the interrupt itself.
                interrupt = KeyboardInterrupt()
                self._abandon(interrupt, rd, pool, log)
                raise interrupt from exc
            self._abandon(exc, rd, pool, log)
            raise
        finally:
            self._stop_bar()
        meta["run_dir"] = str(final)
        plot_path = final / plot_file.name if plot_file is not None else None
        if plot_path is not None:
            meta["plot"] = str(plot_path)
        result = RunResult(final, meta, plot_path, reuse)
        if self.mgr.hook.collhub_after_pipeline_run.get_hookimpls():  # rows are read only for observers
            self._observe("collhub_after_pipeline_run", pipeline=vp, run_dir=final, results=result.rows)
        return result

    def _check_resume(self, target: Path, plan: Plan, resume: str | None) -> Reuse | None:
        if resume is None or not (target / LOG_NAME).is_file():
            return None
        reuse = match_log(target / LOG_NAME, plan)
        if reuse.changed and resume == "strict":
            more = f"; and {len(reuse.changed) - 5} more" if len(reuse.changed) > 5 else ""
            shown = "; ".join(reuse.changed[:5]) + more
            raise UsageError(
                f"{len(reuse.changed)} row(s) of {target} changed since they were run "
                f"(params, plugin versions or input files): {shown}",
                hint="use --resume to recompute only those rows, or --out a new directory",
            )
        return reuse

    def _open_log(self, rd: RunDir, plan: Plan) -> RowLog:
        """A new ``rows.jsonl``, holding the reusable rows of the one there (resume) first."""
        path = rd.work / LOG_NAME
        if not rd.resumed:
            return RowLog(path, plan.total)
        log = RowLog(rd.work / f".{LOG_NAME}.new", plan.total)
        for row in read_log(path):
            if row.get("status") != "ok":
                continue
            for pos in plan.by_key.get(row["key"], ()):
                if not log.has(pos):
                    log.append(pos, _relabel(row, plan, pos))
        log.replace(path)
        return log

    def _run(self, plan: Plan, pool: Executor, rd: RunDir, log: RowLog) -> None:
        """Produce what is missing, then consume; every row goes into ``log`` as it comes."""
        model = self.vp.model
        base = {"manager": self.mspec.as_dict(), "run_dir": str(rd.work), "debug": self.debug}
        todo = [g for g in plan.groups if any(not log.has(s.pos) for s in g.slots())]
        units = [{**g.unit, "run_dir": str(rd.work)} for g in todo]

        def produced(i: int, res: dict[str, Any]) -> int | None:
            g = todo[i]
            g.result = res
            if res["ok"]:
                self._record_algorithm(rd, g)
                for s in g.bare:
                    summary = res["summary"]
                    self._add(
                        log,
                        s.pos,
                        build_row(
                            s,
                            res["info"],
                            wall_s=res["wall_s"],
                            metrics={k: summary[k] for k in ("nodes", "send", "recv", "comp") if k in summary},
                        ),
                    )
                return None
            if model.on_error != "continue":
                return g.order
            err = res["error"]
            for s in g.slots():
                if not log.has(s.pos):
                    self._add(log, s.pos, build_row(s, None, error=f"{err['type']}: {err['message']}"))
            return None

        self._drain(pool, units, [g.order for g in todo], produced, log)
        consume = [
            (g, [j for j in g.jobs if not log.has(j["slot"]["pos"])])
            for g in todo
            if g.result is not None and g.result["ok"]
        ]
        units = plan.consume_units(
            [(g, j) for g, j in consume if j], {**base, "on_error": model.on_error}, self.workers
        )

        def consumed(i: int, res: dict[str, Any]) -> int | None:
            for row, job in zip(res["rows"], units[i]["jobs"], strict=False):  # fewer rows after a failure
                self._add(log, job["slot"]["pos"], row)
            return None if res["error"] is None else int(res["error"].get("pos", 0))

        self._drain(pool, units, [u["jobs"][0]["slot"]["pos"] for u in units], consumed, log)

    def _drain(
        self,
        pool: Executor,
        units: list[dict[str, Any]],
        orders: list[int],
        handle: Callable[[int, dict[str, Any]], int | None],
        log: RowLog,
    ) -> None:
        """Run ``units``; on a failure at row position P, wait for every unit that starts before
        P (it may fail earlier in file order), then raise the first failure in file order."""
        if not units:
            return
        first: tuple[int, dict[str, Any]] | None = None
        waiting = 0
        done = [False] * len(units)
        for i, res in pool.map(units, self.interrupts):
            done[i] = True
            self.hooks.report(res.get("hook_failures") or [])
            at = handle(i, res)
            log.flush()
            if at is not None and (first is None or at < first[0]):
                first = (at, res["error"])
                waiting = sum(1 for j, o in enumerate(orders) if not done[j] and o < at)
            elif first is not None and orders[i] < first[0]:
                waiting -= 1
            if first is not None and waiting <= 0:
                break
        if first is not None:
            raise _failed(first[1])

    def _collect(self, plan: Plan, rd: RunDir, started: datetime, version: str) -> dict[str, Any]:
        """The results document without its rows."""
        vp, model = self.vp, self.vp.model
        known = _read_algorithms(rd.work / _ALGORITHMS)
        algorithms: dict[str, dict[str, Any]] = {}
        for g in plan.groups:
            rec = known.get(g.key)
            if rec is not None:
                algorithms.setdefault(rec["dir"], {k: v for k, v in rec.items() if k != "key"})
        _remove_empty_dirs(rd.work / "artifacts")
        finished = datetime.now(UTC)
        return {
            "format": "collhub-run/1",
            "pipeline": {"name": vp.name, "file": str(vp.file), "sha256": hashlib.sha256(vp.text.encode()).hexdigest()},
            "collhub": version,
            "plugins": [
                {"name": p.name, "distribution": p.distribution, "version": p.version} for p in self.mgr.plugins()
            ],
            "python": sys.version.split()[0],
            "started": started.isoformat(timespec="seconds"),
            "finished": finished.isoformat(timespec="seconds"),
            "wall_s": round((finished - started).total_seconds(), 3),
            "jobs": self.workers,
            "variables": list(model.matrix),
            "points": [p.as_dict() for p in vp.points],
            "algorithms": list(algorithms.values()),
        }

    def _write(self, rd: RunDir, meta: dict[str, Any], log: RowLog) -> Path | None:
        """One pass over the log in file order: the log itself sorted, results.json/csv/md; the plot."""
        write_from_log(
            rd.work,
            meta,
            list(self.vp.model.matrix),
            self.vp.name,
            log.lines(),
            log.metric_keys(),
            len(log.consumers) > 1,
            rd.work / LOG_NAME,
        )
        log.close()

        def stopping() -> bool:
            return self.interrupts.stopping

        auto_report(rd.work, meta, plot=self.plot, stopping=stopping)  # report.json/.md/.png of a size sweep
        if not self.plot:
            return None
        from ...results._plot import load_document

        return auto_plot(rd.work, load_document(rd.work)[0], stopping=stopping)  # raises only if interrupted

    # ------------------------------------------------------------------ helpers
    def _add(self, log: RowLog, pos: int, row: dict[str, Any]) -> None:
        log.append(pos, row)
        if self.bar is not None:
            self.bar.update(self.task, completed=log.count)
        if self.on_row is not None:
            self.on_row(row)

    def _record_algorithm(self, rd: RunDir, g: Group) -> None:
        res = g.result or {}
        rec = {"key": g.key, **res["info"], "source": g.source, "summary": res["summary"]}
        with open(rd.work / _ALGORITHMS, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(rec, default=str) + "\n")

    def _observe(self, hook: str, **kwargs: Any) -> None:
        self.hooks.report(call_observers(self.mgr, hook, **kwargs))

    def _start_bar(self, total: int, done: int) -> None:
        self.bar = _progress(self.progress)
        if self.bar is not None:
            self.bar.start()
            self.task = self.bar.add_task(self.vp.name, total=total, completed=done)

    def _stop_bar(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None

    def _abandon(self, exc: BaseException, rd: RunDir | None, pool: Executor | None, log: RowLog | None) -> None:
        """After an interrupt keep what was done (marked incomplete); after a failure remove a new
        run's directory. Observers hear of the error; a non-collhub exception becomes a StepFailedError."""
        with self.interrupts.cleanup():  # a second Ctrl-C must not cut this short
            self._stop_bar()
            if pool is not None:
                pool.kill()
            if log is not None:
                log.close()
            if rd is not None:
                if isinstance(exc, KeyboardInterrupt):
                    kept = rd.keep_incomplete()
                    exc.hint = (  # type: ignore[attr-defined]  # read by the CLI's interrupt message
                        f"{log.count if log else 0} row(s) are kept in {kept} (incomplete); "
                        f"complete it with: {rd.resume_hint()}"
                    )
                else:
                    rd.discard()
        if isinstance(exc, Exception) and rd is not None:
            self._observe("collhub_on_pipeline_error", pipeline=self.vp, run_dir=rd.final, error=exc)
            if not isinstance(exc, HubError):
                raise StepFailedError(f"pipeline {self.vp.name!r} failed: {type(exc).__name__}: {exc}") from exc


def _relabel(row: dict[str, Any], plan: Plan, pos: int) -> dict[str, Any]:
    """A reused row at its position in the new plan (the point index may have moved)."""
    return {**row, "point_index": plan.point_index[pos]}


def _read_algorithms(path: Path) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                out[rec["key"]] = rec
    except FileNotFoundError:
        pass
    return out
