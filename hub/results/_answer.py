"""The answer of a size sweep: per network and collective, which algorithm wins at each size.

A *study* is one network (every matrix variable but the size, e.g. ``network=ring:8``), one
consumer and one collective/rank count. Rules, in order:

1. **A contender is a source** (a *family*): a source re-synthesized at every point (TACOS,
   TACCL: their params depend on the size or the network) is one contender whose algorithm files
   differ per size; the per-size files are kept (``Best.algorithm``, ``Segment.algorithms``).
2. **Impossible rows never win.** A row whose time is below a lower bound the consumer reports
   (``time_over_bound`` < 1: the collective's bound on that network; ``time_over_link_bound`` < 1:
   the algorithm's own link-load bound, hub/sim/_bounds/linkload.py; a time under the collective's bound
   by no more than ``bound_slack_ns``, what whole-ns truncation gains, is at the bound), or that
   carries a consumer warning saying so, is *set apart* (``Study.set_apart``, each with its
   reason) and does not compete, unless ``allow_below_bound`` is given: then it competes and its
   win says ``below_bound``.
   A size where every row is set apart has no winner (``Study.unanswered``).
3. The winner at a size is the contender with the smallest time (``time_us``, else ``time_ns``);
   for one collective and size busbw is the same number scaled (nccl-tests' factor does not
   depend on the algorithm), so the fastest is also the one with the highest busbw. Ties go to
   the source listed first in the pipeline.
4. *Segments* are the runs of consecutive answered sizes won by the same source. A segment holds
   from its first size up to one byte below the next studied size after its last (the winner
   measured at a size keeps every size below the next measurement); the last one ends at the
   largest size. A *crossover* is where one segment ends and the next begins.
5. **How far from the bound.** Each winner carries its row's ``time_over_bound`` and
   ``bound_term`` (None when the consumer reports no bound). A winner whose ``time_over_bound``
   exceeds :data:`FAR_FROM_BOUND` (1.5) is flagged ``far_from_bound``. The bound is a lower bound
   on every schedule, so the ratio is an *upper* bound on what any algorithm could gain there: a
   better schedule may exist, at most that many times faster (fewer when the bound is not
   attainable). Rows below the bound are rule 2, not this rule.
6. **vs NCCL.** A study with an ``nccl.auto`` source shows NCCL's own choice at each size beside
   the best other contender (:mod:`hub.results._baseline`); it still competes like any source.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .._units import SIZE_NAMES, parse_size
from ..errors import UsageError
from ._baseline import NcclBaseline, algorithm_metadata, attach_baselines

__all__ = ["FAR_FROM_BOUND", "Answer", "Best", "Crossover", "Segment", "Study", "answer", "size_variable"]

FORMAT = "collhub-report/1"
#: Rule 5: a winner above this many times its lower bound is flagged ``far_from_bound``.
FAR_FROM_BOUND = 1.5


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
    #: why the time is below a lower bound (only with ``allow_below_bound``); None when possible
    below_bound: str | None = None
    #: the winner's time / the collective's lower bound, and the term that binds (rule 5)
    time_over_bound: float | None = None
    bound_term: str | None = None

    @property
    def far_from_bound(self) -> bool:
        """Above :data:`FAR_FROM_BOUND` times the lower bound (rule 5)."""
        return self.time_over_bound is not None and self.time_over_bound > FAR_FROM_BOUND

    @property
    def margin(self) -> float | None:
        """How many times faster than the runner-up (>= 1)."""
        if self.runner_up_time_us is None or self.time_us <= 0:
            return None
        return self.runner_up_time_us / self.time_us


@dataclass(frozen=True)
class Segment:
    """A run of studied sizes won by one source; ``min_bytes..max_bytes`` inclusive.

    ``algorithms`` is the algorithm directory that won at each of ``sizes`` (one per size: a
    synthesized source has a different one at each); ``algorithm`` is the one when they agree."""

    source: str
    algorithm: str | None
    min_bytes: int
    max_bytes: int
    sizes: tuple[int, ...]
    algorithms: tuple[str | None, ...] = ()

    def pieces(self) -> list[tuple[str | None, int, int]]:
        """``(algorithm, min_bytes, max_bytes)`` per run of sizes with the same algorithm files,
        tiling ``min_bytes..max_bytes`` (what an export writes one file each for)."""
        algs = self.algorithms or (self.algorithm,) * len(self.sizes)
        out: list[tuple[str | None, int, int]] = []
        for i, (size, alg) in enumerate(zip(self.sizes, algs, strict=True)):
            if out and out[-1][0] == alg:
                continue
            if out:
                out[-1] = (out[-1][0], out[-1][1], size - 1)
            out.append((alg, self.min_bytes if i == 0 else size, self.max_bytes))
        return out


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
    #: source -> size_bytes -> why its time is below a lower bound (rule 2)
    below: dict[str, dict[int, str]] = field(default_factory=dict)
    #: sizes where every row is below a bound: no winner
    unanswered: list[int] = field(default_factory=list)
    #: source -> size_bytes -> (time_over_bound, bound_term), where the consumer reports a bound
    bounds: dict[str, dict[int, tuple[float | None, str | None]]] = field(default_factory=dict)
    #: source -> the network its consumer reports it ran on (``metrics.topology``), when reported
    networks: dict[str, str] = field(default_factory=dict)
    #: the "vs NCCL" column (:mod:`hub.results._baseline`); None without an ``nccl.auto`` source
    nccl: NcclBaseline | None = None
    #: why a study has no "vs NCCL" column while another study of the run has one
    nccl_note: str | None = None

    @property
    def set_apart(self) -> list[tuple[str, int, float, str]]:
        """``(source, size_bytes, time_us, reason)`` of every row below a bound, by size."""
        rows = [(src, size, self.series[src][size][0], why) for src, d in self.below.items() for size, why in d.items()]
        return sorted(rows, key=lambda r: (r[1], r[0]))

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
                    "below_bound": b.below_bound,
                    "time_over_bound": b.time_over_bound,
                    "bound_term": b.bound_term,
                    "far_from_bound": b.far_from_bound,
                }
                for b in self.best
            ],
            "set_apart": [
                {"source": src, "size_bytes": size, "time_us": t, "reason": why} for src, size, t, why in self.set_apart
            ],
            "unanswered": list(self.unanswered),
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
                    "algorithms": list(s.algorithms),
                }
                for s in self.segments
            ],
            "series": {
                src: [[size, t, bw] for size, (t, bw, _alg) in sorted(pts.items())] for src, pts in self.series.items()
            },
            "vs_nccl": self.nccl.as_dict() if self.nccl is not None else None,
            "vs_nccl_note": self.nccl_note,
        }


@dataclass
class Answer:
    """Every study of a run, and what could not be used."""

    pipeline: str | None
    size_variable: str
    studies: list[Study]
    failed_rows: int = 0
    rows_without_time: int = 0
    allow_below_bound: bool = False
    #: every source in the pipeline's order (first row first), for one style per source
    sources: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "pipeline": self.pipeline,
            "size_variable": self.size_variable,
            "metric": "time_us",
            "failed_rows": self.failed_rows,
            "rows_without_time": self.rows_without_time,
            "allow_below_bound": self.allow_below_bound,
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


def _ratio(metrics: Mapping[str, Any], key: str) -> float | None:
    v = metrics.get(key)
    if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
        return float(v)
    return None


def _within_slack(metrics: Mapping[str, Any]) -> bool:
    """A time under the collective's bound by no more than whole-ns truncation can gain
    (``bound_slack_ns``: 1 ns per message of the busiest GPU) is possible in the model: at the
    bound, not below it. (The link-load bound has its truncation inside it.)"""
    t, b, slack = (_ratio(metrics, k) for k in ("time_ns", "bound_ns", "bound_slack_ns"))
    return t is not None and b is not None and slack is not None and t >= b - slack


def below_bound_reason(metrics: Mapping[str, Any], warnings: Any = ()) -> str | None:
    """Why a row's time is impossible (rule 2), in a few words; None when nothing says so. The
    collective's bound is named first (it holds for every schedule), else the algorithm's own."""
    why = None
    r = _ratio(metrics, "time_over_bound")
    if r is not None and r < 1 and not _within_slack(metrics):
        why = f"below the {metrics.get('collective') or 'collective'} lower bound (time/bound {r:.3g})"
    r = _ratio(metrics, "time_over_link_bound")
    if why is None and r is not None and r < 1:
        why = f"below its link-load bound (time/bound {r:.3g})"
    if why is None and isinstance(warnings, list):
        why = next(
            (w.split(":")[0][:120] for w in warnings if isinstance(w, str) and "below the" in w and "lower bound" in w),
            None,
        )
    if why is None:
        return None
    return why + (", congestion-unaware model" if metrics.get("mode") == "unaware" else "")


def answer(document: Mapping[str, Any], *, allow_below_bound: bool = False) -> Answer:
    """The studies of a results document (see the module docstring; ``allow_below_bound``: rule 2).
    Raises :class:`~hub.errors.UsageError` when the run swept no size or no row has a time."""
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
        src = str(r.get("source"))
        study.series.setdefault(src, {})[size] = (
            t,
            float(bw) if isinstance(bw, (int, float)) and not isinstance(bw, bool) else None,
            alg,
        )
        ratio, term = _ratio(metrics, "time_over_bound"), metrics.get("bound_term")
        if ratio is not None or isinstance(term, str):
            study.bounds.setdefault(src, {})[size] = (ratio, term if isinstance(term, str) else None)
        why = below_bound_reason(metrics, r.get("warnings"))
        if why is not None:
            study.below.setdefault(src, {})[size] = why
        study.labels.setdefault(size, point.get(size_var))
        if isinstance(metrics.get("topology"), str):
            study.networks.setdefault(src, metrics["topology"])
    if not studies:
        raise UsageError(
            f"no successful row has a time to compare ({failed} failed, {no_time} without a time)",
            hint="report a run whose consumer measures time (hub.simulate, astrasim.run, replay.run)",
        )
    for study in studies.values():
        _decide(study, order, allow_below_bound)
    attach_baselines(list(studies.values()), algorithm_metadata(document))
    pipeline = document.get("pipeline")
    name = pipeline.get("name") if isinstance(pipeline, Mapping) else None
    return Answer(name, size_var, list(studies.values()), failed, no_time, allow_below_bound, list(order))


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


def _decide(study: Study, order: Mapping[str, int], allow_below_bound: bool) -> None:
    """Fill ``best``, ``segments``, ``crossovers`` and ``unanswered`` of a study (rules 1-4)."""
    for size in study.sizes:
        cands = sorted(
            (pts[size][0], order.get(src, 0), src)
            for src, pts in study.series.items()
            if size in pts and (allow_below_bound or size not in study.below.get(src, {}))
        )
        if not cands:
            study.unanswered.append(size)
            continue
        t, _, src = cands[0]
        _, bw, alg = study.series[src][size]
        ru = cands[1] if len(cands) > 1 else None
        why = study.below.get(src, {}).get(size)
        ratio, term = study.bounds.get(src, {}).get(size, (None, None))
        study.best.append(
            Best(
                size,
                study.labels.get(size),
                src,
                alg,
                t,
                bw,
                ru[2] if ru else None,
                ru[0] if ru else None,
                why,
                ratio,
                term,
            )
        )
    sizes = study.sizes
    after = {s: sizes[i + 1] for i, s in enumerate(sizes[:-1])}  # the next studied size
    runs: list[list[Best]] = []
    for b in study.best:
        if runs and runs[-1][-1].source == b.source and after.get(runs[-1][-1].size_bytes) == b.size_bytes:
            runs[-1].append(b)
        else:
            runs.append([b])
    for i, run in enumerate(runs):
        last = run[-1].size_bytes
        end = after[last] - 1 if last in after else last
        algs = tuple(b.algorithm for b in run)
        study.segments.append(
            Segment(
                run[0].source,
                algs[0] if len(set(algs)) == 1 else None,
                run[0].size_bytes,
                end,
                tuple(b.size_bytes for b in run),
                algs,
            )
        )
        if i + 1 < len(runs) and runs[i + 1][0].source != run[0].source:
            study.crossovers.append(Crossover(last, runs[i + 1][0].size_bytes, run[0].source, runs[i + 1][0].source))
