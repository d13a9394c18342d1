"""The unit of work: ``run_unit(unit: dict) -> dict``, a plain top-level function.

A unit carries only picklable data (plain values, plus the in-memory ``Algorithm`` for consume
units), so a process pool, or later a distributed engine, can run it anywhere the plugins are
installed. A unit never raises for a failing step: it returns the error as data, because
exceptions of plugins do not always survive pickling.

Two kinds:

* ``produce``: run a source's producer and transforms, write the algorithm's ET files once
  into ``algorithms/<source>-<hash>/`` of the run directory, return the algorithm.
* ``consume``: run consumer jobs (consumer x point) on one algorithm, return the result rows.
  Each job carries its planned row (``slot``: position in file order, content key); a failure
  in ``on_error: fail`` mode ends the unit with the error and the ``pos`` of the failing job.
  A consumer's ``Result.details`` is written to ``details.json`` in the job's workdir (the row
  names it in ``details_file``); a workdir left empty is removed again.

Observer step hooks run in isolation (:mod:`hub.pipeline._run.hooks`): the failures come back as
``hook_failures`` in every result, for the main process to report once.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
import traceback
import uuid
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from ...errors import PluginError
from ...plugins import RunContext
from .._record.row import RowSlot, build_row
from .env import ManagerSpec, manager_for
from .hooks import HookFailure, call_observers

__all__ = ["Step", "run_unit", "describe_step"]


@dataclass(frozen=True)
class Step:
    """What the step hooks receive: one produce / transform / consume of one sweep point."""

    kind: str  # "produce" | "transform" | "consume"
    source: str
    component: str
    point: dict[str, Any] = field(default_factory=dict)
    consumer: str | None = None
    index: int = 0  # transform position, 0 otherwise

    def describe(self) -> str:
        return describe_step(self.kind, self.source, self.component, self.point, self.consumer)


def describe_step(kind: str, source: str, component: str, point: dict[str, Any], consumer: str | None) -> str:
    from .._file.matrix import _text

    where = ", ".join(f"{k}={_text(v)}" for k, v in point.items())
    who = (
        f"consumer {consumer!r} ({component}) on source {source!r}"
        if consumer
        else f"{kind} {component} of source {source!r}"
    )
    return who + (f" at point {where}" if where else "")


def _error(step: Step, exc: BaseException, debug: bool) -> dict[str, Any]:
    return {
        "step": step.describe(),
        "kind": step.kind,
        "type": type(exc).__name__,
        "message": str(getattr(exc, "message", None) or exc) or type(exc).__name__,
        "hint": getattr(exc, "hint", None),
        "traceback": traceback.format_exc() if debug else None,
    }


class _HookFatal(Exception):
    """A step hook raised under COLLHUB_STRICT_PLUGINS=1: the run ends, blaming the hook's plugin."""

    def __init__(self, error: PluginError) -> None:
        super().__init__(error.message)
        self.error = error


def _observe(mgr: Any, failures: list[HookFailure], hook: str, **kwargs: Any) -> None:
    try:
        failures += call_observers(mgr, hook, **kwargs)
    except PluginError as exc:  # strict mode
        raise _HookFatal(exc) from exc


def _call(mgr: Any, step: Step, failures: list[HookFailure], fn: Any, *args: Any) -> Any:
    _observe(mgr, failures, "collhub_before_step", step=step)
    try:
        out = fn(*args)
    except Exception as exc:
        _observe(mgr, failures, "collhub_on_step_error", step=step, error=exc)
        raise
    _observe(mgr, failures, "collhub_after_step", step=step, output=out)
    return out


def _hook_error(exc: _HookFatal) -> dict[str, Any]:
    return {
        "step": "observer hook",
        "kind": "hook",
        "type": "PluginError",
        "message": exc.error.message,
        "hint": exc.error.hint,
        "traceback": None,
        "text": exc.error.message,
    }


def _content_hash(obj: Any, spec_key: str) -> str:
    method = getattr(obj, "content_hash", None)
    if callable(method):
        return str(method())
    return hashlib.sha256(spec_key.encode()).hexdigest()[:16]


def _write_trace(obj: Any, run_dir: Path, source: str, digest: str) -> tuple[str, list[str]]:
    """Write ``obj``'s ET files into ``algorithms/<source>-<digest>/`` once (atomic per directory)."""
    from ...chakra import Algorithm

    rel = Path("algorithms") / f"{source}-{digest}"
    final = run_dir / rel
    if not final.exists():
        tmp = run_dir / "algorithms" / f".{source}-{digest}.{uuid.uuid4().hex[:8]}"
        tmp.mkdir(parents=True)
        name = (getattr(getattr(obj, "meta", None), "name", "") or source).replace("/", "_")
        if isinstance(obj, Algorithm):
            from ...chakra import write_algorithm

            write_algorithm(obj, tmp / name)
        else:
            from ...chakra import write_workload

            write_workload(obj, tmp / name)
        try:
            os.rename(tmp, final)
        except OSError:  # another unit wrote the same algorithm first
            shutil.rmtree(tmp, ignore_errors=True)
    files = sorted(str(rel / p.name) for p in final.iterdir() if p.is_file())
    return str(rel), files


def _produce(unit: dict[str, Any]) -> dict[str, Any]:
    mgr = manager_for(ManagerSpec.from_dict(unit["manager"]))
    source, point, debug = unit["source"], unit["point"], bool(unit.get("debug"))
    run_dir = Path(unit["run_dir"])
    workdir = run_dir / unit["workdir"]
    workdir.mkdir(parents=True, exist_ok=True)
    ctx = RunContext(workdir=workdir, debug=debug, quiet=True, options={"source": source, "point": point})
    start = time.perf_counter()
    hooks: list[HookFailure] = []
    step = Step("produce", source, unit["producer"], point)
    try:
        obj = _call(
            mgr,
            step,
            hooks,
            partial(mgr.run_producer, timeout=unit.get("timeout")),
            unit["producer"],
            unit["params"],
            ctx,
        )
        for i, t in enumerate(unit["transforms"]):
            step = Step("transform", source, t["use"], point, index=i)
            obj = _call(
                mgr, step, hooks, partial(mgr.run_transform, timeout=t.get("timeout")), t["use"], obj, t["params"], ctx
            )
    except _HookFatal as exc:
        return {"ok": False, "error": _hook_error(exc), "hook_failures": _plain(hooks)}
    except Exception as exc:  # noqa: BLE001 - returned as data, see the module docstring
        return {"ok": False, "error": _error(step, exc, debug), "hook_failures": _plain(hooks)}
    step = Step("produce", source, unit["producer"], point)
    try:
        digest = _content_hash(obj, unit["spec_key"])
        rel, files = _write_trace(obj, run_dir, source, digest)
    except Exception as exc:  # noqa: BLE001
        err = _error(step, exc, debug)
        err["message"] = f"writing the trace failed: {err['message']}"
        return {"ok": False, "error": err, "hook_failures": _plain(hooks)}
    from ...chakra import Algorithm, algorithm_summary

    summary = algorithm_summary(obj.meta, obj.graphs) if isinstance(obj, Algorithm) else {}
    info = {
        "hash": digest,
        "dir": rel,
        "files": files,
        "name": summary.get("name") or source,
        "nodes": summary.get("nodes"),
        "kind": "algorithm" if hasattr(obj, "graphs") else "workload",
    }
    return {
        "ok": True,
        "algorithm": obj,
        "info": info,
        "summary": summary,
        "wall_s": round(time.perf_counter() - start, 6),
        "hook_failures": _plain(hooks),
    }


def _plain(failures: list[HookFailure]) -> list[dict[str, str]]:
    return [f.as_dict() for f in failures]


def _relative_artifacts(artifacts: dict[str, str], workdir: Path, run_dir: Path) -> dict[str, str]:
    out = {}
    for name, value in artifacts.items():
        p = Path(value)
        if not p.is_absolute():
            p = workdir / p
        try:
            out[name] = str(p.resolve().relative_to(run_dir.resolve()))
        except ValueError:  # outside the run directory: keep it as given
            out[name] = str(value)
    return out


class _Workdirs:
    """Creates job workdirs (``artifacts/<source>/<point>/<consumer>``) as cheaply as it can and
    removes those a job left empty: a 10,000-row sweep must not cost 40,000 directory calls."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self._made: set[Path] = set()

    def make(self, rel: str) -> Path:
        path = self.run_dir / rel
        parent = path.parent
        if parent not in self._made:
            parent.mkdir(parents=True, exist_ok=True)
            self._made.add(parent)
        path.mkdir(exist_ok=True)
        return path

    def tidy(self, path: Path) -> None:
        try:
            os.rmdir(path)  # only when empty
        except OSError:
            return
        try:
            os.rmdir(path.parent)
            self._made.discard(path.parent)
        except OSError:
            pass


def _write_details(details: Any, workdir: Path, run_dir: Path, artifacts: dict[str, str]) -> str | None:
    """Write a Result's ``details`` to ``details.json`` beside its artifacts; None when empty.

    A file of that name left by an interrupted earlier attempt is replaced; one the consumer
    returned as an artifact of its own is not."""
    if not details:
        return None
    path = workdir / "details.json"
    if str(path.relative_to(run_dir)) in artifacts.values():
        path = workdir / "collhub-details.json"
    path.write_text(json.dumps(details, default=str), encoding="utf-8")  # a torn one is rewritten on resume
    return str(path.relative_to(run_dir))


def _consume(unit: dict[str, Any]) -> dict[str, Any]:
    mgr = manager_for(ManagerSpec.from_dict(unit["manager"]))
    source, obj, debug, info = unit["source"], unit["algorithm"], bool(unit.get("debug")), unit["info"]
    run_dir = Path(unit["run_dir"])
    dirs = _Workdirs(run_dir)
    rows: list[dict[str, Any]] = []
    hooks: list[HookFailure] = []
    for job in unit["jobs"]:
        point, slot = job["point"], RowSlot.from_dict(job["slot"])
        workdir = dirs.make(job["workdir"])
        ctx = RunContext(
            workdir=workdir,
            debug=debug,
            quiet=True,
            options={"source": source, "consumer": job["consumer"], "point": point},
        )
        step = Step("consume", source, job["use"], point, consumer=job["consumer"])
        start = time.perf_counter()
        try:
            result = _call(
                mgr,
                step,
                hooks,
                partial(mgr.run_consumer, timeout=job.get("timeout")),
                job["use"],
                obj,
                job["params"],
                ctx,
            )
            artifacts = _relative_artifacts(dict(result.artifacts), workdir, run_dir)
            row = build_row(
                slot,
                info,
                metrics=dict(result.metrics),
                artifacts=artifacts,
                details_file=_write_details(result.details, workdir, run_dir, artifacts),
                warnings=result.warnings,
                wall_s=time.perf_counter() - start,
            )
        except _HookFatal as exc:
            return {"rows": rows, "error": {**_hook_error(exc), "pos": slot.pos}, "hook_failures": _plain(hooks)}
        except Exception as exc:  # noqa: BLE001
            err = _error(step, exc, debug)
            if unit["on_error"] != "continue":
                dirs.tidy(workdir)
                return {"rows": rows, "error": {**err, "pos": slot.pos}, "hook_failures": _plain(hooks)}
            row = build_row(slot, info, error=f"{err['type']}: {err['message']}", wall_s=time.perf_counter() - start)
        dirs.tidy(workdir)
        rows.append(row)
    return {"rows": rows, "error": None, "hook_failures": _plain(hooks)}


def run_unit(unit: dict[str, Any]) -> dict[str, Any]:
    """Run one unit of work (``unit["kind"]`` is ``produce`` or ``consume``); never raises for a step."""
    if unit["kind"] == "produce":
        return _produce(unit)
    if unit["kind"] == "consume":
        return _consume(unit)
    raise ValueError(f"unknown unit kind {unit['kind']!r}")
