"""The unit of work: ``run_unit(unit: dict) -> dict``, a plain top-level function.

A unit carries only picklable data (plain values, plus the in-memory ``Algorithm`` for consume
units), so a process pool, or later a distributed engine, can run it anywhere the plugins are
installed. A unit never raises for a failing step: it returns the error as data, because
exceptions of plugins do not always survive pickling.

Two kinds:

* ``produce``: run a source's producer and transforms, write the algorithm's ET files once
  into ``algorithms/<source>-<hash>/`` of the run directory, return the algorithm.
* ``consume``: run consumer jobs (consumer x point) on one algorithm, return the result rows.
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

from ..plugins import RunContext
from ._env import ManagerSpec, manager_for

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
    from ._matrix import _text

    where = ", ".join(f"{k}={_text(v)}" for k, v in point.items())
    if consumer:
        who = f"consumer {consumer!r} ({component}) on source {source!r}"
    else:
        who = f"{kind} {component} of source {source!r}"
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


def _call(mgr: Any, step: Step, fn: Any, *args: Any) -> Any:
    hook = mgr.hook
    hook.collhub_before_step(step=step)
    try:
        out = fn(*args)
    except Exception as exc:
        hook.collhub_on_step_error(step=step, error=exc)
        raise
    hook.collhub_after_step(step=step, output=out)
    return out


def _content_hash(obj: Any, spec_key: str) -> str:
    method = getattr(obj, "content_hash", None)
    if callable(method):
        return str(method())
    return hashlib.sha256(spec_key.encode()).hexdigest()[:16]


def _write_trace(obj: Any, run_dir: Path, source: str, digest: str) -> tuple[str, list[str]]:
    """Write ``obj``'s ET files into ``algorithms/<source>-<digest>/`` once (atomic per directory)."""
    from ..chakra import Algorithm

    rel = Path("algorithms") / f"{source}-{digest}"
    final = run_dir / rel
    if not final.exists():
        tmp = run_dir / "algorithms" / f".{source}-{digest}.{uuid.uuid4().hex[:8]}"
        tmp.mkdir(parents=True)
        name = (getattr(getattr(obj, "meta", None), "name", "") or source).replace("/", "_")
        if isinstance(obj, Algorithm):
            from ..chakra import write_algorithm

            write_algorithm(obj, tmp / name)
        else:
            from ..chakra import write_workload

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
    step = Step("produce", source, unit["producer"], point)
    try:
        obj = _call(mgr, step, partial(mgr.run_producer, timeout=unit.get("timeout")), unit["producer"],
                    unit["params"], ctx)
        for i, t in enumerate(unit["transforms"]):
            step = Step("transform", source, t["use"], point, index=i)
            obj = _call(mgr, step, partial(mgr.run_transform, timeout=t.get("timeout")), t["use"], obj, t["params"],
                        ctx)
    except Exception as exc:  # noqa: BLE001 - returned as data, see the module docstring
        return {"ok": False, "error": _error(step, exc, debug)}
    step = Step("produce", source, unit["producer"], point)
    try:
        digest = _content_hash(obj, unit["spec_key"])
        rel, files = _write_trace(obj, run_dir, source, digest)
    except Exception as exc:  # noqa: BLE001
        err = _error(step, exc, debug)
        err["message"] = f"writing the trace failed: {err['message']}"
        return {"ok": False, "error": err}
    summary_fn = getattr(obj, "summary", None)
    summary = summary_fn() if callable(summary_fn) else {}
    info = {"hash": digest, "dir": rel, "files": files, "name": summary.get("name") or source,
            "nodes": summary.get("nodes"), "kind": "algorithm" if hasattr(obj, "graphs") else "workload"}
    return {"ok": True, "algorithm": obj, "info": info, "summary": summary,
            "wall_s": round(time.perf_counter() - start, 6)}


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


def _consume(unit: dict[str, Any]) -> dict[str, Any]:
    mgr = manager_for(ManagerSpec.from_dict(unit["manager"]))
    source, obj, debug = unit["source"], unit["algorithm"], bool(unit.get("debug"))
    run_dir = Path(unit["run_dir"])
    rows: list[dict[str, Any]] = []
    for job in unit["jobs"]:
        point = job["point"]
        workdir = run_dir / job["workdir"]
        workdir.mkdir(parents=True, exist_ok=True)
        ctx = RunContext(workdir=workdir, debug=debug, quiet=True,
                         options={"source": source, "consumer": job["consumer"], "point": point})
        step = Step("consume", source, job["use"], point, consumer=job["consumer"])
        row = {"source": source, "consumer": job["consumer"], "component": job["use"], "point": point,
               "point_index": job["point_index"], "algorithm": unit["info"]}
        start = time.perf_counter()
        try:
            result = _call(mgr, step, partial(mgr.run_consumer, timeout=job.get("timeout")), job["use"], obj,
                           job["params"], ctx)
        except Exception as exc:  # noqa: BLE001
            err = _error(step, exc, debug)
            if unit["on_error"] != "continue":
                return {"rows": rows, "error": err}
            rows.append({**row, "status": "failed", "metrics": {}, "artifacts": {}, "details": {},
                         "error": f"{err['type']}: {err['message']}", "wall_s": round(time.perf_counter() - start, 6)})
            continue
        rows.append({**row, "status": "ok", "metrics": dict(result.metrics),
                     "artifacts": _relative_artifacts(dict(result.artifacts), workdir, run_dir),
                     "details": json.loads(json.dumps(result.details, default=str)),
                     "warnings": list(result.warnings), "error": None, "wall_s": round(time.perf_counter() - start, 6)})
    return {"rows": rows, "error": None}


def run_unit(unit: dict[str, Any]) -> dict[str, Any]:
    """Run one unit of work (``unit["kind"]`` is ``produce`` or ``consume``); never raises for a step."""
    if unit["kind"] == "produce":
        return _produce(unit)
    if unit["kind"] == "consume":
        return _consume(unit)
    raise ValueError(f"unknown unit kind {unit['kind']!r}")
