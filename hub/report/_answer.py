"""The answer of a size sweep: per network and collective, which algorithm wins at each size.

A *study* is one network (every matrix variable but the size, e.g. ``network=ring:8``), one
consumer and one collective/rank count. In a study, the winner at a size is the source with the
smallest time (``time_us``, else ``time_ns``); for one collective and size busbw is the same
number scaled (nccl-tests' factor does not depend on the algorithm), so the fastest is also the
one with the highest busbw. Ties go to the source listed first in the pipeline.

*Segments* are the runs of consecutive studied sizes with the same winner (same source and the
same algorithm files). Their byte ranges tile the studied range ``[smallest, largest]`` with no
gap or overlap: a segment holds from its first size up to one byte below the next segment's
first size (the winner measured at a size keeps every size below the next measurement), and the
last one ends at the largest size. A *crossover* is where one segment ends and the next begins.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .._units import parse_size
from ..errors import UsageError

__all__ = ["Answer", "Best", "Crossover", "Segment", "Study", "answer", "size_variable"]

FORMAT = "collhub-report/1"
#: Variable names taken as the message size (their values may carry units).
SIZE_NAMES = ("size", "bytes", "size_bytes", "nbytes", "message_size", "msg_size")


@dataclass(frozen=True)
class Best:
    """The winner at one size, with the runner-up for comparison (None when alone)."""

    size_bytes: int
    size: Any
    source: str
    algorithm: str | None
    time_us: float
    busbw_GBps: float | None
    runner_up: str | None
    runner_up_time_us: float | None

    @property
    def margin(self) -> float | None:
        """How many times faster than the runner-up (>= 1)."""
        if self.runner_up_time_us is None or self.time_us <= 0:
            return None
        return self.runner_up_time_us / self.time_us


@dataclass(frozen=True)
class Segment:
    """A run of studied sizes won by one algorithm; ``min_bytes..max_bytes`` inclusive."""

    source: str
    algorithm: str | None
    min_bytes: int
    max_bytes: int
    sizes: tuple[int, ...]


@dataclass(frozen=True)
class Crossover:
    """The winner changes between ``below`` (last size of ``before``) and ``at`` (first of ``after``)."""

    below: int
    at: int
    before: str
    after: str


@dataclass
class Study:
    """One network x consumer x collective: the candidates' numbers and the winners."""

    key: dict[str, Any]
    title: str
    consumer: str | None
    component: str | None
    collective: str | None
    ranks: int | None
    #: source -> size_bytes -> (time_us, busbw_GBps or None, algorithm dir or None)
    series: dict[str, dict[int, tuple[float, float | None, str | None]]] = field(default_factory=dict)
    labels: dict[int, Any] = field(default_factory=dict)
    best: list[Best] = field(default_factory=list)
    segments: list[Segment] = field(default_factory=list)
    crossovers: list[Crossover] = field(default_factory=list)

    @property
    def sizes(self) -> list[int]:
        return sorted({s for pts in self.series.values() for s in pts})

    def as_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "title": self.title,
            "consumer": self.consumer,
            "component": self.component,
            "collective": self.collective,
            "ranks": self.ranks,
            "sizes": self.sizes,
            "best": [
                {
                    "size_bytes": b.size_bytes,
                    "size": b.size,
                    "source": b.source,
                    "algorithm": b.algorithm,
                    "time_us": b.time_us,
                    "busbw_GBps": b.busbw_GBps,
                    "runner_up": b.runner_up,
                    "runner_up_time_us": b.runner_up_time_us,
                    "margin": b.margin,
                }
                for b in self.best
            ],
            "crossovers": [
                {"below": c.below, "at": c.at, "before": c.before, "after": c.after} for c in self.crossovers
            ],
            "segments": [
                {
                    "source": s.source,
                    "algorithm": s.algorithm,
                    "min_bytes": s.min_bytes,
                    "max_bytes": s.max_bytes,
                    "sizes": list(s.sizes),
                }
                for s in self.segments
            ],
            "series": {
                src: [[size, t, bw] for size, (t, bw, _alg) in sorted(pts.items())] for src, pts in self.series.items()
            },
        }


@dataclass
class Answer:
    """Every study of a run, and what could not be used."""

    pipeline: str | None
    size_variable: str
    studies: list[Study]
    failed_rows: int = 0
    rows_without_time: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "pipeline": self.pipeline,
            "size_variable": self.size_variable,
            "metric": "time_us",
            "failed_rows": self.failed_rows,
            "rows_without_time": self.rows_without_time,
            "studies": [s.as_dict() for s in self.studies],
        }


def _bytes(value: Any) -> int | None:
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        return _cached_bytes(value)
    try:
        return parse_size(value)
    except UsageError:
        return None


@functools.lru_cache(maxsize=4096)
def _cached_bytes(value: str | int) -> int | None:
    # A sweep repeats each size once per source, network and consumer: parse each spelling once.
    try:
        return parse_size(value)
    except UsageError:
        return None


def _hashable(value: Any) -> Any:
    """A dictionary key for a matrix value (mappings and lists by their canonical JSON)."""
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return json.dumps(value, sort_keys=True, default=str)


def size_variable(document: Mapping[str, Any]) -> str | None:
    """The swept size of a results document: a variable with a size name whose values are sizes,
    else one whose values all carry a byte unit; None when the run has none."""
    names = [str(v) for v in document.get("variables") or []]
    points = [p for p in document.get("points") or [] if isinstance(p, Mapping)]
    points += [
        r["point"] for r in document.get("rows") or [] if isinstance(r, Mapping) and isinstance(r.get("point"), Mapping)
    ]
    for p in points:
        names += [k for k in p if k not in names]
    # Distinct values only: a 100,000-row run has a few dozen sizes.
    values = {n: list({_hashable(p[n]): p[n] for p in points if n in p}.values()) for n in names}
    for n in names:
        if n.lower() in SIZE_NAMES and values[n] and all(_bytes(v) is not None for v in values[n]):
            return n
    for n in names:
        vals = values[n]
        if vals and all(isinstance(v, str) and not v.strip().isdigit() and _bytes(v) is not None for v in vals):
            return n
    return None


def _time_us(metrics: Mapping[str, Any]) -> float | None:
    for key, scale in (("time_us", 1.0), ("time_ns", 1e-3), ("time_ms", 1e3)):
        v = metrics.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0:
            return float(v) * scale
    return None


def _show(v: Any) -> str:
    if isinstance(v, Mapping):
        return "{" + ", ".join(f"{k}: {_show(x)}" for k, x in v.items()) + "}"
    return str(v)


def answer(document: Mapping[str, Any]) -> Answer:
    """The studies of a results document (see the module docstring). Raises
    :class:`~hub.errors.UsageError` when the run swept no size or no row has a time."""
    size_var = size_variable(document)
    if size_var is None:
        raise UsageError(
            "the run has no size variable to compare algorithms along",
            hint="sweep a size, e.g. matrix: {size: {from: 1KiB, to: 1GiB, factor: 2}}",
        )
    rows = [r for r in document.get("rows") or [] if isinstance(r, Mapping)]
    order = {s: i for i, s in enumerate(dict.fromkeys(str(r.get("source")) for r in rows))}
    studies: dict[str, Study] = {}
    failed = no_time = 0
    for r in rows:
        if r.get("status") != "ok":
            failed += 1
            continue
        metrics, point = r.get("metrics"), r.get("point")
        if not isinstance(metrics, Mapping) or not isinstance(point, Mapping):  # a hand-made or damaged row
            no_time += 1
            continue
        t = _time_us(metrics)
        size = _bytes(point.get(size_var))
        if t is None or size is None:
            no_time += 1
            continue
        study = _study_of(studies, r, metrics, point, size_var)
        bw = metrics.get("busbw_GBps")
        alg = r["algorithm"].get("dir") if isinstance(r.get("algorithm"), Mapping) else None
        alg = alg if isinstance(alg, str) else None
        study.series.setdefault(str(r.get("source")), {})[size] = (
            t,
            float(bw) if isinstance(bw, (int, float)) and not isinstance(bw, bool) else None,
            alg,
        )
        study.labels.setdefault(size, point.get(size_var))
    if not studies:
        raise UsageError(
            f"no successful row has a time to compare ({failed} failed, {no_time} without a time)",
            hint="report a run whose consumer measures time (hub.simulate, astrasim.run, replay.run)",
        )
    for study in studies.values():
        _decide(study, order)
    pipeline = document.get("pipeline")
    name = pipeline.get("name") if isinstance(pipeline, Mapping) else None
    return Answer(name, size_var, list(studies.values()), failed, no_time)


def _study_of(
    studies: dict[str, Study],
    row: Mapping[str, Any],
    metrics: Mapping[str, Any],
    point: Mapping[str, Any],
    size_var: str,
) -> Study:
    coll = metrics.get("collective")
    ranks = metrics.get("ranks")
    skey = repr(
        (
            row.get("consumer"),
            _hashable(coll),
            _hashable(ranks),
            sorted((k, _hashable(v)) for k, v in point.items() if k != size_var),
        )
    )
    study = studies.get(skey)
    if study is None:
        key: dict[str, Any] = {k: v for k, v in point.items() if k != size_var}
        key.update({"consumer": row.get("consumer"), "collective": coll, "ranks": ranks})
        parts = [f"{k}={_show(v)}" for k, v in point.items() if k != size_var]
        if coll:
            parts.append(str(coll) + (f" on {ranks} ranks" if isinstance(ranks, int) else ""))
        if row.get("consumer") or row.get("component"):
            parts.append(f"{row.get('consumer') or '-'} ({row.get('component') or '-'})")
        study = studies[skey] = Study(
            key,
            ", ".join(parts) or "all rows",
            row.get("consumer"),
            row.get("component"),
            str(coll) if coll else None,
            ranks if isinstance(ranks, int) else None,
        )
    return study


def _decide(study: Study, order: Mapping[str, int]) -> None:
    """Fill ``best``, ``segments`` and ``crossovers`` of a study from its series."""
    for size in study.sizes:
        cands = sorted(((pts[size][0], order.get(src, 0), src) for src, pts in study.series.items() if size in pts))
        t, _, src = cands[0]
        _, bw, alg = study.series[src][size]
        ru = cands[1] if len(cands) > 1 else None
        study.best.append(
            Best(size, study.labels.get(size), src, alg, t, bw, ru[2] if ru else None, ru[0] if ru else None)
        )
    runs: list[list[Best]] = []
    for b in study.best:
        if runs and (runs[-1][-1].source, runs[-1][-1].algorithm) == (b.source, b.algorithm):
            runs[-1].append(b)
        else:
            runs.append([b])
    for i, run in enumerate(runs):
        end = runs[i + 1][0].size_bytes - 1 if i + 1 < len(runs) else run[-1].size_bytes
        study.segments.append(
            Segment(run[0].source, run[0].algorithm, run[0].size_bytes, end, tuple(b.size_bytes for b in run))
        )
        if i + 1 < len(runs):
            study.crossovers.append(
                Crossover(run[-1].size_bytes, runs[i + 1][0].size_bytes, run[0].source, runs[i + 1][0].source)
            )
