"""``replay.run``: pre-flight on the CPU, run on the ranks, report like nccl-tests."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hub.atomic import write_file
from hub.chakra import Algorithm

from ._params import ReplayParams, modes_of, sizes_of
from ._preflight import preflight
from ._table import format_table, metrics_of
from ._worker import Job

__all__ = ["ReplayReport", "consume_run", "replay"]


@dataclass
class ReplayReport:
    """One algorithm's replay: the per-size rows (see :mod:`._worker`) and the table text."""

    name: str
    collective: str
    ranks: int
    backend: str
    steps: int
    rows: list[dict[str, Any]]
    table: str

    def wrong(self) -> int:
        return sum(int(r.get(k) or 0) for r in self.rows for k in ("oop_wrong", "ip_wrong"))


def _job(alg: Algorithm, params: ReplayParams) -> Job:
    sizes = sizes_of(params)
    plan = preflight(alg, sizes, params.dtype, verify=params.preflight)
    return Job(
        plan=plan,
        sizes=sizes,
        dtype=params.dtype,
        op=params.op,
        modes=modes_of(params, alg.meta.inplace),
        iters=params.iters,
        warmup=params.warmup,
        repeat=params.repeat,
        check=params.check,
        native=params.native,
    )


def replay(
    algorithms: list[Algorithm],
    params: ReplayParams | dict[str, Any] | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[ReplayReport]:
    """Replay several algorithms of the same rank count in **one** set of rank processes
    (spawning torch processes costs seconds; the tests and benchmarks batch through this).

    Every pre-flight runs before anything is launched. ``progress(text)`` hears each step
    (the launch, each size, each timing round); nothing is printed here.
    """
    from ._launch import replay_jobs

    p = params if isinstance(params, ReplayParams) else _validated(params or {})
    jobs = [_job(a, p) for a in algorithms]
    backend, results = replay_jobs(
        jobs, ranks=p.ranks, backend=p.backend, timeout=p.timeout, schedule=p.schedule, progress=progress
    )
    world = jobs[0].plan.ranks if jobs else 0
    reports = []
    for alg, job, rows in zip(algorithms, jobs, results, strict=False):
        title = (
            f"replay of {job.plan.name} ({alg.meta.producer or 'unknown producer'}), {job.plan.collective}, "
            f"{'in-place' if job.plan.inplace else 'out-of-place'} algorithm, {world} ranks on {backend}, "
            f"{job.iters} iters, {job.warmup} warm-up"
        )
        reports.append(
            ReplayReport(
                job.plan.name,
                job.plan.collective,
                world,
                backend,
                job.plan.steps(),
                rows,
                format_table(title, job.plan.collective, rows),
            )
        )
    return reports


def _validated(values: dict[str, Any]) -> ReplayParams:
    """Params from a dict; a bad value is a one-line UsageError naming the field."""
    from pydantic import ValidationError

    from hub.errors import UsageError

    try:
        return ReplayParams(**values)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err.get("loc", ())) or "params"
        raise UsageError(
            f"replay: {where}: {err.get('msg', exc)}", hint="fields: " + ", ".join(ReplayParams.model_fields)
        ) from None


def _write(path: Path, text: str) -> None:
    write_file(path, text)  # no half-written artifact


def consume_run(alg: Algorithm, params: ReplayParams, ctx: Any) -> Any:
    """Consumer ``replay.run``."""
    from hub import Result

    rep = replay([alg], params, getattr(ctx, "progress", None))[0]  # set by the CLI on a terminal only
    primary = "ip" if (params.inplace is True or (params.inplace == "algorithm" and alg.meta.inplace)) else "oop"
    if params.inplace == "both":
        primary = "ip" if alg.meta.inplace else "oop"  # the mode the algorithm was built for
    last = rep.rows[-1]
    metrics: dict[str, Any] = metrics_of(last, primary)
    metrics.update({"ranks": rep.ranks, "backend": rep.backend, "steps": rep.steps, "wrong_total": rep.wrong()})
    artifacts: dict[str, str] = {}
    workdir = Path(getattr(ctx, "workdir", Path.cwd()))
    if workdir.is_dir():
        label = re.sub(r"[^A-Za-z0-9_.-]+", "_", rep.name)
        key = hashlib.sha256(f"{alg.content_hash()}|{params.model_dump_json()}".encode()).hexdigest()[:10]
        txt, js = workdir / f"replay-{label}-{key}.txt", workdir / f"replay-{label}-{key}.json"
        _write(txt, rep.table + "\n")
        _write(js, json.dumps({"title": rep.table.splitlines()[0][2:], "rows": rep.rows}, indent=1))
        artifacts = {"table": str(txt), "json": str(js)}  # as the user can open them (workdir is absolute)
    if not getattr(ctx, "quiet", True):
        print(rep.table)
    return Result(
        component="replay.run",
        metrics=metrics,
        artifacts=artifacts,
        details={"rows": rep.rows, "table": rep.table, "primary": primary},
    )
