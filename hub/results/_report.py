"""Writing a run's report: ``report.json`` (machines), ``report.md`` (people), ``report.png``.

:func:`write_report` reads the run only through :func:`hub.results._plot.load_document`, so it
works on any run directory, finished or being committed. :func:`auto_report` is the runner's
guarded call: a run with a size variable gets its report, and nothing about the report can fail
the run.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..atomic import write_file
from ..errors import UsageError
from ._answer import FAR_FROM_BOUND, Answer, Best, Study, answer, size_variable

__all__ = [
    "NCCL_HEADS",
    "auto_report",
    "bound_cells",
    "has_bound",
    "markdown",
    "nccl_rows",
    "summary_lines",
    "vs_nccl_cell",
    "write_report",
]


def _fmt_time(t: float) -> str:
    return f"{t:.3f}" if t < 1000 else f"{t:.1f}"


def has_bound(st: Study) -> bool:
    """Whether any winner of the study reports a lower bound (then the tables show it)."""
    return any(b.time_over_bound is not None or b.bound_term is not None for b in st.best)


def bound_cells(b: Best) -> tuple[str, str]:
    """A winner's ``% of bound`` (``112%``) and binding term, ``-`` where there is none."""
    from .._units import percent_of_bound

    return percent_of_bound(b.time_over_bound) or "-", b.bound_term or "-"


def vs_nccl_cell(st: Study, size: int) -> str:
    """The "vs NCCL" cell of a size: NCCL's pick and its time here over the best other
    contender's (``Tree/LL 1.91x``), or why there is none (:mod:`hub.results._baseline`); the
    detail table (:func:`nccl_rows`) has the times."""
    cell = next((c for c in st.nccl.cells if c.size_bytes == size), None) if st.nccl else None
    if cell is None:
        return "-"
    if cell.pick is None or cell.reason:  # the detail table has the pick and the full reason
        return "other system" if cell.reason == "other system" else ("below bound" if cell.pick else "-")
    ratio = cell.ratio
    return cell.pick + (f" {ratio:.2f}x" if ratio is not None else " (no other)")


def _nccl_lines(st: Study) -> list[str]:
    if st.nccl is None:
        return [st.nccl_note] if st.nccl_note else []
    b = st.nccl
    lines = [b.note] if b.note else []
    rated = [c for c in b.cells if c.ratio is not None]
    if rated:
        faster = [c for c in rated if (c.ratio or 0.0) > 1]
        lines.append(
            f"vs NCCL: NCCL's own pick ({b.source}, system {b.system}); Nx = its time here / the best other "
            f"contender's, above 1 that contender is faster: at {len(faster)} of {len(rated)} size(s)"
        )
    return lines


def _far_line(st: Study) -> str | None:
    """Rule 5 of :mod:`hub.results._answer`: the winners far above their lower bound, by name."""
    from .._units import format_size

    far = [b for b in st.best if b.far_from_bound]
    if not far:
        return None
    worst = max(b.time_over_bound or 0.0 for b in far)
    who = ", ".join(f"{b.source} at {format_size(b.size_bytes)} ({bound_cells(b)[0]})" for b in far)
    return (
        f"sub-optimal winner(s), over {FAR_FROM_BOUND:g}x the lower bound: {who}; the bound holds for every "
        f"schedule, so a better one could be at most {worst:.2f}x faster (less if the bound is not attainable)"
    )


def summary_lines(st: Study) -> list[str]:
    """What a study concludes, one sentence a line: the crossovers (or the one winner), the sizes
    without an answer, and how many rows were set apart (shared by report.md and the CLI)."""
    from .._units import format_size

    lines = [
        f"crossover: {c.before} up to {format_size(c.below)}, {c.after} from {format_size(c.at)}" for c in st.crossovers
    ]
    winners = list(dict.fromkeys(b.source for b in st.best))
    if not st.crossovers and len(winners) == 1:
        every = "every size" if not st.unanswered else "every size that has an answer"
        lines.append(f"no crossover: {winners[0]} wins at {every}")
    if st.unanswered:
        sizes = ", ".join(format_size(s) for s in st.unanswered)
        lines.append(f"no winner at {sizes}: every row there is below a lower bound")
    if st.set_apart:
        n = len(st.set_apart)
        lines.append(f"{n} row(s) below a lower bound set apart (impossible times never win; see below)")
    far = _far_line(st)
    if far:
        lines.append(far)
    lines += _nccl_lines(st)
    if any(b.below_bound for b in st.best):
        lines.append("WARNING: some winners are below a lower bound (--allow-below-bound): not achievable times")
    return lines


NCCL_HEADS = (
    "size",
    "NCCL pick",
    "ran as",
    "NCCL time (µs)",
    "NCCL model (µs)",
    "best other",
    "time (µs)",
    "NCCL ÷ other",
)


def nccl_rows(st: Study) -> list[tuple[str, ...]]:
    """The "vs NCCL" detail per studied size (:data:`NCCL_HEADS`): NCCL's pick, the algorithm
    that ran when it differs (``=`` when not), its time here, NCCL's own model time of its pick,
    the best other contender and its time, and the ratio (or why there is none)."""
    from .._units import format_size

    if st.nccl is None:
        return []

    def t(v: float | None) -> str:
        return _fmt_time(v) if v is not None else "-"

    return [
        (
            format_size(c.size_bytes),
            c.pick or "-",
            c.scheduled or "=",
            t(c.time_us),
            t(c.model_us),
            c.best or "-",
            t(c.best_time_us),
            f"{c.ratio:.2f}" if c.ratio is not None else (c.reason or "-"),
        )
        for c in st.nccl.cells
    ]


def _nccl_table(st: Study) -> list[str]:
    """report.md's detail of the "vs NCCL" column."""
    assert st.nccl is not None
    b = st.nccl
    out = [
        f"vs NCCL: `{b.source}` is NCCL's own choice for {b.system} (network `{b.network}`).",
        "",
        "| " + " | ".join(NCCL_HEADS) + " |",
        "|---|---|---|---:|---:|---|---:|---:|",
    ]
    out += ["| " + " | ".join(r) + " |" for r in nccl_rows(st)]
    return [*out, ""]


def markdown(ans: Answer) -> str:
    """The report as Markdown: one table per study (size, winner, time, busbw, runner-up, margin)
    and its crossovers."""
    from .._units import format_size

    lines = [f"# {ans.pipeline or 'run'}: the best algorithm at each {ans.size_variable}", ""]
    for st in ans.studies:
        bounded = has_bound(st)
        vs = st.nccl is not None
        lines += [
            f"## {st.title}",
            "",
            "| size | winner | time (µs) | busbw (GB/s) | "
            + ("% of bound | bound term | " if bounded else "")
            + "runner-up | × faster |"
            + (" vs NCCL |" if vs else ""),
            "|---|---|---:|---:|" + ("---:|---|" if bounded else "") + "---|---:|" + ("---|" if vs else ""),
        ]
        for b in st.best:
            bw = f"{b.busbw_GBps:.3f}" if b.busbw_GBps is not None else "-"
            margin = f"{b.margin:.2f}" if b.margin is not None else "-"
            winner = b.source + (" (below bound)" if b.below_bound else "")
            winner += " (sub-optimal)" if b.far_from_bound else ""
            pct, term = bound_cells(b)
            lines.append(
                f"| {format_size(b.size_bytes)} | {winner} | {_fmt_time(b.time_us)} | {bw} | "
                + (f"{pct} | {term} | " if bounded else "")
                + f"{b.runner_up or '-'} | {margin} |"
                + (f" {vs_nccl_cell(st, b.size_bytes)} |" if vs else "")
            )
        lines.append("")
        lines += [f"* {line}" for line in summary_lines(st)]
        lines.append("")
        if st.nccl is not None:
            lines += _nccl_table(st)
        if st.set_apart:
            lines += [
                "Set apart: times below a lower bound, which no schedule on this network can reach "
                "(the model left contention out); they never win.",
                "",
                "| size | source | time (µs) | why |",
                "|---|---|---:|---|",
            ]
            lines += [f"| {format_size(size)} | {src} | {_fmt_time(t)} | {why} |" for src, size, t, why in st.set_apart]
            lines.append("")
    notes = []
    if ans.failed_rows:
        notes.append(f"{ans.failed_rows} failed row(s) left out")
    if ans.rows_without_time:
        notes.append(f"{ans.rows_without_time} row(s) without a time left out")
    if notes:
        lines += ["_" + "; ".join(notes) + "_", ""]
    return "\n".join(lines)


def write_report(
    run_dir: str | Path,
    out_dir: str | Path | None = None,
    *,
    plot: bool = True,
    allow_below_bound: bool = False,
) -> dict[str, Path]:
    """Write ``report.json``, ``report.md`` and (with ``plot`` and matplotlib) ``report.png``
    for the run in ``run_dir`` into ``out_dir`` (default: the run directory); return the paths.
    ``allow_below_bound``: rule 2 of :mod:`hub.results._answer`."""
    from ._plot import load_document

    doc, _ = load_document(run_dir)
    ans = answer(doc, allow_below_bound=allow_below_bound)
    target = Path(out_dir) if out_dir is not None else Path(run_dir)
    target.mkdir(parents=True, exist_ok=True)
    written = {"json": target / "report.json", "md": target / "report.md"}
    write_file(written["json"], json.dumps(ans.as_dict(), indent=1) + "\n")
    write_file(written["md"], markdown(ans))
    if plot:
        from ._report_plot import render_plot

        written["png"] = render_plot(ans, target / "report.png")
    return written


def auto_report(
    run_dir: Path, document: Any = None, *, plot: bool = True, stopping: Callable[[], bool] = lambda: False
) -> dict[str, Path]:
    """The runner's call: the report of a run that swept a size (``report.png`` with ``plot`` when
    matplotlib is installed); an empty mapping otherwise. Never raises: a problem is one warning
    line, unless ``stopping()`` says the run is being interrupted (see :func:`hub.results._plot.auto_plot`):
    then it raises ``KeyboardInterrupt``."""
    try:
        if document is not None and size_variable(document) is None:
            return {}
        from ._plot import load_document

        doc, _ = load_document(run_dir)
        if size_variable(doc) is None or not any(r.get("status") == "ok" for r in doc["rows"] if isinstance(r, dict)):
            return {}
        plot = plot and importlib.util.find_spec("matplotlib") is not None
        return write_report(run_dir, plot=plot)
    except UsageError:  # nothing to compare (no row with a time): no report, and nothing to warn about
        return {}
    except Exception as exc:  # noqa: BLE001 - a report is a bonus: never fail a finished run because of it
        if stopping():
            raise KeyboardInterrupt from exc
        print(f"warning: could not write the report: {type(exc).__name__}: {exc}", file=sys.stderr)
        return {}
