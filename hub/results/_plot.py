"""Plot a run's results: a metric against a swept size, one line per algorithm, one panel per network.

The picture is the one nccl-tests users draw by hand: bus bandwidth against message size on a
log2 axis, one line per algorithm. :func:`plot_layout` is a pure function that decides *what*
to draw (x variable, panels, series, the points of every line) from a ``results.json``
document; :func:`plot_results` renders that layout with matplotlib (``hub.results._plot_render``, imported
lazily, through the object API and the Agg canvas, so the caller's pyplot state and backend are
left alone) and writes the PNG atomically. The runner calls :func:`auto_plot` to leave ``results.png`` in every
run directory whose results have a numeric x axis with at least two values.
"""

from __future__ import annotations

import difflib
import json
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .._units import SIZE_NAMES, parse_size
from ..errors import FormatError, UsageError

__all__ = ["Panel", "PlotLayout", "auto_plot", "load_document", "plot_layout", "plot_results"]

PLOT_HINT = 'pip install "collhub[plot]"'

#: Metrics the runner's automatic plot tries, in order.
_AUTO_METRICS = ("busbw_GBps", "time_us", "time_ns")
_WARNED = "has a warning (see results.md)"
#: metric -> (axis label, words for the title); bandwidths are decimal GB/s (10^9 B/s) as in nccl-tests.
_KNOWN_METRICS = {
    "busbw_GBps": ("bus bandwidth (GB/s)", "bus bandwidth"),
    "algbw_GBps": ("algorithm bandwidth (GB/s)", "algorithm bandwidth"),
    "time_us": ("time (µs)", "time"),
    "time_ns": ("time (ns)", "time"),
    "time_ms": ("time (ms)", "time"),
}
_UNIT_SUFFIXES = (("_GBps", "GB/s"), ("_us", "µs"), ("_ns", "ns"), ("_ms", "ms"), ("_s", "s"), ("_bytes", "bytes"))


@dataclass(frozen=True)
class Panel:
    """One subplot: its title and, per series label, the ``(x, y)`` points sorted by x;
    ``flagged`` holds the points whose row carries warnings (e.g. a time below the bound)."""

    title: str
    lines: dict[str, list[tuple[float, float]]]
    flagged: dict[str, list[tuple[float, float]]] = field(default_factory=dict)


@dataclass(frozen=True)
class PlotLayout:
    """What :func:`plot_results` draws; computed by :func:`plot_layout` without matplotlib."""

    metric: str
    x: str
    x_kind: Literal["bytes", "number"]
    x_scale: Literal["log2", "log10", "linear"]
    x_values: tuple[float, ...]
    x_label: str
    y_label: str
    y_scale: Literal["log", "linear"]
    panel_vars: tuple[str, ...]
    series: tuple[str, ...]
    panels: tuple[Panel, ...]
    title: str
    failed: int
    missing: int
    warned: int = 0

    def as_dict(self) -> dict[str, Any]:
        """A JSON-friendly description (for ``--format json`` and tests)."""
        return {
            "metric": self.metric,
            "x": self.x,
            "x_kind": self.x_kind,
            "x_scale": self.x_scale,
            "x_values": list(self.x_values),
            "panel_vars": list(self.panel_vars),
            "series": list(self.series),
            "panels": [p.title for p in self.panels],
            "title": self.title,
            "failed": self.failed,
            "missing": self.missing,
            "warned": self.warned,
        }


# ----------------------------------------------------------------------------------------------
# values


def parse_bytes(value: Any) -> int | None:
    """Bytes from an int or a size string (the core grammar, ``hub.parse_size``), else None."""
    try:
        return parse_size(value)
    except UsageError:
        return None


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _key(v: Any) -> str:
    # Matrix values may be mappings (unhashable): compare them by their canonical JSON.
    return json.dumps(v, sort_keys=True, default=str)


def _show(v: Any) -> str:
    if isinstance(v, Mapping):
        return ", ".join(f"{k}={_show(x)}" for k, x in v.items())
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _metric_labels(metric: str) -> tuple[str, str]:
    if metric in _KNOWN_METRICS:
        return _KNOWN_METRICS[metric]
    for suffix, unit in _UNIT_SUFFIXES:
        if metric.endswith(suffix) and len(metric) > len(suffix):
            name = metric[: -len(suffix)].replace("_", " ")
            return f"{name} ({unit})", name
    return metric, metric


# ----------------------------------------------------------------------------------------------
# layout


def load_document(source: Mapping[str, Any] | str | Path) -> tuple[dict[str, Any], Path | None]:
    """The results document and the file it came from (None for a mapping).

    ``source`` is a document, a run directory, or a ``results.json`` path."""
    if isinstance(source, Mapping):
        return dict(source), None
    path = Path(source)
    if path.is_dir():
        path = path / "results.json"
    if not path.is_file() and (path.parent / "INCOMPLETE").is_file():
        raise UsageError(
            f"{path.parent} is an incomplete run (it was interrupted): it has no results yet",
            hint="complete it with `collhub run FILE --resume --out DIR` (see its INCOMPLETE file)",
        )
    if not path.is_file():
        # a missing input is a bad input file (exit 3), as for a trace prefix or a pipeline file
        raise FormatError(
            f"no results file at {path}", hint="pass a run directory written by `collhub run` or its results.json"
        )
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FormatError(
            f"{path}: not a readable results document: {exc}", hint="re-run the pipeline to rewrite results.json"
        ) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("rows"), list):
        raise FormatError(
            f"{path}: not a collhub results document (no 'rows' list)",
            hint="pass the results.json of a run directory (format collhub-run/1)",
        )
    return doc, path


def _variables(doc: Mapping[str, Any]) -> tuple[list[str], dict[str, list[Any]]]:
    """Variable names (document order, then any seen in rows) and each one's distinct values in first-seen order."""
    names: list[str] = [str(v) for v in doc.get("variables") or []]
    values: dict[str, dict[str, Any]] = {n: {} for n in names}
    points: list[Mapping[str, Any]] = [p for p in doc.get("points") or [] if isinstance(p, Mapping)]
    points += [r["point"] for r in doc["rows"] if isinstance(r, Mapping) and isinstance(r.get("point"), Mapping)]
    for p in points:
        for k, v in p.items():
            if k not in values:
                names.append(k)
                values[k] = {}
            values[k].setdefault(_key(v), v)
    return names, {n: list(values[n].values()) for n in names}


def _x_kind(name: str, vals: list[Any]) -> Literal["bytes", "number"] | None:
    """``bytes`` for sizes (a size-like name, or strings with a byte unit), ``number`` for plain numbers."""
    if not vals:
        return None
    sized = all(parse_bytes(v) is not None for v in vals)
    has_unit = any(isinstance(v, str) and not v.strip().isdigit() for v in vals)
    if sized and (name.lower() in SIZE_NAMES or has_unit):
        return "bytes"
    if all(_is_number(v) for v in vals):
        return "number"
    return None


def _x_value(kind: str, v: Any) -> float | None:
    if kind == "bytes":
        b = parse_bytes(v)
        return None if b is None else float(b)
    return float(v) if _is_number(v) else None


def _did_you_mean(word: str, options: Sequence[str]) -> str:
    close = difflib.get_close_matches(word, list(options), n=1)
    return f"did you mean {close[0]}? " if close else ""


def _choose_x(names: list[str], values: dict[str, list[Any]], x: str | None) -> tuple[str, Literal["bytes", "number"]]:
    kinds = {n: _x_kind(n, values[n]) for n in names}
    numeric = [n for n in names if kinds[n] is not None]
    if x is not None:
        if x not in values:
            raise UsageError(
                f"x variable {x!r} is not a matrix variable of this run",
                hint=f"{_did_you_mean(x, names)}variables: {', '.join(names) or '(none)'}",
            )
        kind = kinds[x]
        if kind is None:
            shown = ", ".join(_show(v) for v in values[x][:4])
            raise UsageError(
                f"x variable {x!r} is not numeric (values: {shown})",
                hint=f"numeric variables: {', '.join(numeric) or '(none)'}",
            )
        return x, kind
    for n in names:  # a size first, then the first numeric variable that varies, then any numeric one
        if n.lower() in SIZE_NAMES and kinds[n] is not None:
            return n, kinds[n]  # type: ignore[return-value]
    for n in sorted(numeric, key=lambda n: len(values[n]) < 2):
        return n, kinds[n]  # type: ignore[return-value]
    raise UsageError(
        "no numeric matrix variable to use as the x axis",
        hint="sweep a size (matrix: {size: [64KiB, 1MiB]}) or pass --x VAR",
    )


def plot_layout(
    document: Mapping[str, Any],
    metric: str = "busbw_GBps",
    x: str | None = None,
    panel: str | Sequence[str] | None = None,
) -> PlotLayout:
    """Decide what to draw from a results document.

    ``x``: the matrix variable on the x axis (default: a variable named ``size``/``bytes``, else
    the first numeric one). ``panel``: the variable(s) with one subplot per value (default: every
    other variable that varies; ``[]`` for a single panel). Varying variables that are neither x
    nor panels join the series, which are otherwise one per source (and per consumer when there
    are several). Failed rows and rows without a numeric ``metric`` are counted and skipped."""
    rows = [r for r in document.get("rows") or [] if isinstance(r, Mapping)]
    names, values = _variables(document)
    xname, kind = _choose_x(names, values, x)
    varying = [n for n in names if n != xname and len(values[n]) > 1]
    panel_vars = _panel_vars(panel, names, values, xname, varying)
    extra = [n for n in varying if n not in panel_vars]
    failed, usable, missing = _usable_rows(rows, metric)
    many_consumers = len({r.get("consumer") for r in rows}) > 1
    placed = _place_rows(usable, metric, kind, xname, panel_vars, extra, many_consumers, names, values)
    missing += placed.unplaced
    if not placed.xs:
        raise UsageError(
            f"no successful row has a value of {xname!r} to place it on the x axis",
            hint="pass --x with a variable every row has",
        )
    panels = _panels(placed, panel_vars, values)
    x_values = tuple(sorted(placed.xs))
    y_label, words = _metric_labels(metric)
    warned = sum(len(pts) for p in panels for pts in p.flagged.values())
    return PlotLayout(
        metric=metric,
        x=xname,
        x_kind=kind,
        x_scale=_x_scale(kind, x_values),
        x_values=x_values,
        x_label=f"{xname} (bytes)" if kind == "bytes" else xname,
        y_label=y_label,
        y_scale=_y_scale(metric, panels),
        panel_vars=tuple(panel_vars),
        series=tuple(placed.series),
        panels=tuple(panels),
        title=_title(document, words, xname, _context(usable), _notes(metric, failed, missing, warned)),
        failed=failed,
        missing=missing,
        warned=warned,
    )


def _panel_vars(
    panel: str | Sequence[str] | None, names: list[str], values: dict[str, list[Any]], xname: str, varying: list[str]
) -> list[str]:
    """The variables with one subplot per value: the ones asked for (checked), else every varying one."""
    if panel is None:
        return list(varying)
    panel_vars = [panel] if isinstance(panel, str) else list(panel)
    for p in panel_vars:
        if p not in values:
            raise UsageError(
                f"panel variable {p!r} is not a matrix variable of this run",
                hint=f"{_did_you_mean(p, names)}variables: {', '.join(names) or '(none)'}",
            )
        if p == xname:
            raise UsageError(
                f"{p!r} is the x axis and cannot also split the panels", hint="choose another --x or panel variable"
            )
    return panel_vars


def _usable_rows(rows: list[Mapping[str, Any]], metric: str) -> tuple[int, list[Mapping[str, Any]], int]:
    """(failed rows, the successful rows with a numeric ``metric``, the successful rows without it)."""
    ok = [r for r in rows if r.get("status") == "ok"]
    failed = len(rows) - len(ok)
    usable = [r for r in ok if _is_number((r.get("metrics") or {}).get(metric))]
    if not usable:
        present = sorted({k for r in ok for k, v in (r.get("metrics") or {}).items() if _is_number(v)})
        note = f" ({failed} row(s) failed)" if failed else ""
        raise UsageError(
            f"no successful row has the metric {metric!r}{note}",
            hint=f"{_did_you_mean(metric, present)}numeric metrics: {', '.join(present) or '(none)'}",
        )
    return failed, usable, len(ok) - len(usable)


@dataclass
class _Placed:
    """The usable rows placed on the plot: series labels (first-seen order), per panel key (the
    matrix index of each panel variable's value) and series the points and the warned x values."""

    series: dict[str, None] = field(default_factory=dict)
    cells: dict[tuple[int, ...], dict[str, dict[float, float]]] = field(default_factory=dict)
    warned_at: dict[tuple[int, ...], dict[str, set[float]]] = field(default_factory=dict)
    xs: set[float] = field(default_factory=set)
    unplaced: int = 0


def _place_rows(
    usable: list[Mapping[str, Any]],
    metric: str,
    kind: str,
    xname: str,
    panel_vars: list[str],
    extra: list[str],
    many_consumers: bool,
    names: list[str],
    values: dict[str, list[Any]],
) -> _Placed:
    """Each usable row as a point (x, metric) of its series in its panel; a row without an x value
    is counted as unplaced."""
    order = {n: {_key(v): i for i, v in enumerate(values[n])} for n in names}
    placed = _Placed()
    for r in usable:
        point = r.get("point") or {}
        xv = _x_value(kind, point.get(xname))
        if xv is None:  # a row from outside the matrix (hand-made documents): nothing to place it at
            placed.unplaced += 1
            continue
        label = str(r.get("source"))
        if many_consumers:
            label += f" · {r.get('consumer') or '-'}"
        if extra:
            label += " (" + ", ".join(f"{n}={_show(point.get(n))}" for n in extra) + ")"
        placed.series.setdefault(label, None)
        pkey = tuple(order[n].get(_key(point.get(n)), -1) for n in panel_vars)
        placed.cells.setdefault(pkey, {}).setdefault(label, {})[xv] = float(r["metrics"][metric])
        if r.get("warnings"):
            placed.warned_at.setdefault(pkey, {}).setdefault(label, set()).add(xv)
        placed.xs.add(xv)
    return placed


def _panels(placed: _Placed, panel_vars: list[str], values: dict[str, list[Any]]) -> list[Panel]:
    """One panel per panel key, in matrix order, its lines sorted by x and its warned points."""
    panels = []
    for pkey in sorted(placed.cells):  # matrix order of each panel variable's values
        title = ", ".join(f"{n} = {_show(values[n][i])}" for n, i in zip(panel_vars, pkey, strict=False) if i >= 0)
        cell, warned_at = placed.cells[pkey], placed.warned_at.get(pkey, {})
        lines = {s: sorted(cell[s].items()) for s in placed.series if s in cell}
        flags = {s: [(x, y) for x, y in pts if x in warned_at.get(s, ())] for s, pts in lines.items()}
        panels.append(Panel(title, lines, {s: pts for s, pts in flags.items() if pts}))
    return panels


def _x_scale(kind: str, x_values: tuple[float, ...]) -> Literal["log2", "log10", "linear"]:
    positive = bool(x_values) and x_values[0] > 0
    if kind == "bytes" and positive:
        return "log2"
    if (
        positive
        and all(v == int(v) and int(v) & (int(v) - 1) == 0 for v in x_values)
        and x_values[-1] / x_values[0] >= 4
    ):
        return "log2"  # rank counts and other powers of two: evenly spaced
    if positive and x_values[-1] / x_values[0] >= 16:
        return "log10"
    return "linear"


#: A series whose largest value is below this share of the largest series' would lie flat on
#: zero on a linear axis (measured gloo bandwidth beside simulated NVLink-class links).
FLAT_SHARE = 0.05


def _y_scale(metric: str, panels: list[Panel]) -> Literal["log", "linear"]:
    """Log for times spanning a decade or more. Bandwidths stay linear (heights compare
    honestly from zero) unless a series would lie flat on zero next to another: then log, so
    both can be read."""
    ys = [y for p in panels for line in p.lines.values() for _, y in line]
    if not ys or min(ys) <= 0:
        return "linear"
    if metric.startswith("time"):
        return "log" if max(ys) / min(ys) >= 10 else "linear"
    tops = [max(y for _, y in line) for p in panels for line in p.lines.values() if line]
    return "log" if min(tops) < FLAT_SHARE * max(tops) else "linear"


def _notes(metric: str, failed: int, missing: int, warned: int) -> list[str]:
    """What the picture leaves out or flags, for the title."""
    notes = []
    if failed:
        notes.append(f"{failed} failed row(s) not shown")
    if missing:
        notes.append(f"{missing} row(s) without {metric}")
    if warned:
        notes.append(f"{warned} point(s) circled red carry a warning (e.g. below the lower bound)")
    return notes


def _title(document: Mapping[str, Any], words: str, xname: str, context: str, notes: list[str]) -> str:
    name = (document.get("pipeline") or {}).get("name") if isinstance(document.get("pipeline"), Mapping) else None
    title = f"{name}: {words} vs {xname}" if name else f"{words} vs {xname}"
    if context:
        title += f"\n{context}"
    if notes:
        title += ("\n" if not context else "; ") + "; ".join(notes)
    return title


def _context(rows: list[Mapping[str, Any]]) -> str:
    """What every plotted row has in common: collective, ranks, consumer component and mode."""

    def common(get: Any) -> Any:
        vals = {_key(get(r)) for r in rows}
        return get(rows[0]) if len(vals) == 1 else None

    parts = []
    coll = common(lambda r: (r.get("metrics") or {}).get("collective"))
    ranks = common(lambda r: (r.get("metrics") or {}).get("ranks"))
    if coll:
        parts.append(str(coll) + (f" on {ranks} ranks" if _is_number(ranks) else ""))
    elif _is_number(ranks):
        parts.append(f"{ranks} ranks")
    comp = common(lambda r: r.get("component"))
    mode = common(lambda r: (r.get("metrics") or {}).get("mode"))
    if comp:
        parts.append(str(comp) + (f" ({mode})" if isinstance(mode, str) else ""))
    return ", ".join(parts)


# ----------------------------------------------------------------------------------------------
# rendering


def _matplotlib() -> Any:
    try:
        import matplotlib
        from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: F401 - the canvas we draw on
    except ImportError:
        raise UsageError("plotting needs matplotlib, which is not installed", hint=PLOT_HINT) from None
    return matplotlib


def _render(layout: PlotLayout, target: Path, dpi: int) -> None:
    # the seam the runner's plot calls (and tests replace); the drawing lives apart, with matplotlib
    from ._plot_render import render

    render(layout, target, dpi)


def plot_results(
    document_or_run_dir: Mapping[str, Any] | str | Path,
    out_path: str | Path,
    *,
    metric: str = "busbw_GBps",
    x: str | None = None,
    panel: str | Sequence[str] | None = None,
    dpi: int = 150,
) -> Path:
    """Draw ``metric`` against ``x`` from a results document, a run directory or its results.json;
    write a PNG to ``out_path`` atomically and return its path. See :func:`plot_layout` for the
    choice of x, panels and series. Raises :class:`hub.errors.UsageError` when matplotlib is
    missing (hint: ``pip install "collhub[plot]"``) or the metric/variables do not fit."""
    _matplotlib()  # fail fast, before reading anything
    doc, path = load_document(document_or_run_dir)
    try:
        layout = plot_layout(doc, metric, x, panel)
    except UsageError as exc:
        if path is None:
            raise
        raise UsageError(f"{path}: {exc.message}", hint=exc.hint) from None
    target = Path(out_path)
    _render(layout, target, dpi)
    return target


def auto_plot(
    run_dir: Path,
    document: Mapping[str, Any],
    name: str = "results.png",
    *,
    stopping: Callable[[], bool] = lambda: False,
) -> Path | None:
    """The runner's plot: ``run_dir/results.png`` when matplotlib is importable and the results
    have a numeric x with at least two values; None otherwise. Never raises a plotting error: it
    is one warning line on stderr. ``stopping`` says whether the run is being interrupted; an
    error then is the interrupt's doing (a signal inside matplotlib's import leaves it half
    imported), so it raises ``KeyboardInterrupt`` instead of warning about a plot nobody asked
    about."""
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        return None
    try:
        layout = None
        for metric in _AUTO_METRICS:
            try:
                layout = plot_layout(document, metric)
                break
            except UsageError:
                continue  # no numeric x, or no such metric: nothing worth drawing
        if layout is None or len(layout.x_values) < 2:
            return None
        target = Path(run_dir) / name
        _render(layout, target, 150)
        return target
    except Exception as exc:  # a plot is a bonus: never fail a finished run because of it
        if stopping():
            raise KeyboardInterrupt from exc
        print(f"warning: could not plot results: {type(exc).__name__}: {exc}", file=sys.stderr)
        return None
