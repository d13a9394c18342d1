"""``report.png``: busbw against size per algorithm, one panel per study, the winner marked.

Each source keeps the colour, marker and dash it has in ``results.png`` (the pipeline's order,
:func:`hub.results._plot_render._series_style`). A black square frames the winner's point at
every size; a red ring marks each point set apart (below a lower bound: it never wins); dotted
vertical lines sit at the crossovers (the geometric mean of the two sizes between which the
winning source changes). A study's ``nccl.auto`` source (the "vs NCCL" baseline) is named in the
legend as NCCL's own pick. Every mark lies inside its axes, and the one legend sits below the
panels, so it hides no curve. matplotlib is imported here only, through
the object API and the Agg canvas, so the caller's pyplot state is left alone.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..atomic import output_path
from ..errors import UsageError
from ._answer import Answer, Study

__all__ = ["MAX_PANELS", "render_plot"]

#: Panels drawn at most: a picture of 50 studies is unreadable (and huge); the tables have them all.
MAX_PANELS = 8


def _label(n: float) -> str:
    from .._units import format_size

    return format_size(int(n))


def render_plot(ans: Answer, target: Path, dpi: int = 110) -> Path:
    """Draw ``ans`` into the PNG ``target`` (written atomically) and return it."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

        from ._plot import _matplotlib
        from ._plot_render import _series_style

        mpl = _matplotlib()
    except (ImportError, UsageError):
        raise UsageError(
            "the report plot needs matplotlib, which is not installed",
            hint='pip install "collhub[plot]" (or pass --no-plot)',
        ) from None
    # The pipeline's order, so a source has the marker and colour it has in results.png.
    sources = ans.sources or list(dict.fromkeys(s for st in ans.studies for s in st.series))
    style = _series_style(mpl, sources)
    studies = ans.studies[:MAX_PANELS]
    n = len(studies)
    ncols = 1 if n == 1 else 2
    nrows = math.ceil(n / ncols)
    fig = Figure(figsize=(6.4 * ncols, 4.2 * nrows + 1.0), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    handles: dict[str, Any] = {}
    for idx, ax in enumerate(axes.flat):
        if idx >= n:
            ax.set_visible(False)
            continue
        _panel(ax, studies[idx], style, handles)
        _x_axis(ax, studies[idx].sizes, FixedLocator, FuncFormatter, NullLocator)
        ax.set_xlabel(f"{ans.size_variable} (bytes)")
        ax.set_ylabel("bus bandwidth (GB/s)")
    title = f"{ans.pipeline + ': ' if ans.pipeline else ''}the best algorithm at each size"
    if len(ans.studies) > n:
        title += f" (the first {n} of {len(ans.studies)} studies; report.json and report.md have all)"
    fig.suptitle(title, fontsize=11)
    # One legend for the figure, below the panels: it covers no curve.
    order = [s for s in sources if s in handles] + [k for k in (_WINNER, _APART) if k in handles]
    # The "vs NCCL" baseline (hub/results/_baseline.py) is named as such: its curve is NCCL's own pick.
    baseline = {st.nccl.source for st in studies if st.nccl is not None}
    labels = [f"{k} (NCCL's own pick)" if k in baseline else k for k in order]
    fig.legend([handles[k] for k in order], labels, loc="outside lower center", ncols=min(4, len(order)), frameon=False)
    with output_path(target) as tmp:  # whole or absent, with the run's file mode
        fig.savefig(tmp, format="png", dpi=dpi, facecolor="white")
    return target


_WINNER = "winner at this size"
_APART = "below a lower bound (set apart, never wins)"


def _panel(ax: Any, st: Study, style: dict[str, tuple[Any, str, str]], handles: dict[str, Any]) -> None:
    """A study's curves (busbw per size), a square around each winner's point, a red ring
    around each point set apart, dotted lines at the crossovers; every mark inside the axes."""
    top = 0.0
    for src, pts in st.series.items():
        color, marker, dash = style[src]
        xs = sorted(pts)
        ys = [bw if bw is not None else math.nan for bw in (pts[x][1] for x in xs)]
        top = max([top, *(y for y in ys if not math.isnan(y))])
        (h,) = ax.plot(xs, ys, color=color, marker=marker, linestyle=dash, markersize=5, linewidth=1.6, label=src)
        handles.setdefault(src, h)
    wins = [(b.size_bytes, b.busbw_GBps) for b in st.best if b.busbw_GBps is not None]
    if wins:
        handles.setdefault(_WINNER, _frame_points(ax, wins, marker="s", size=12, color="black", width=1.2))
    apart = [(size, st.series[src][size][1]) for src, size, _t, _w in st.set_apart]
    apart = [(x, y) for x, y in apart if y is not None]
    if apart:
        handles.setdefault(_APART, _frame_points(ax, apart, marker="o", size=11, color="#d62728", width=1.6))
    for c in st.crossovers:
        ax.axvline(math.sqrt(c.below * c.at), color="0.35", linestyle=":", linewidth=1.0)
    ax.set_ylim(bottom=0, top=(top or 1.0) * 1.1)
    ax.set_title(st.title, fontsize=9.5)
    ax.grid(True, color="0.88", linewidth=0.7)


def _x_axis(ax: Any, sizes: list[int], fixed: Any, func: Any, null: Any) -> None:
    ax.set_xscale("log", base=2)
    ticks = [float(s) for s in sizes]
    if len(ticks) > 9:
        lo, hi = math.floor(math.log2(sizes[0])), math.ceil(math.log2(sizes[-1]))
        step = max(1, math.ceil((hi - lo + 1) / 8))
        ticks = [2.0**e for e in range(lo, hi + 1, step)]
    ax.xaxis.set_major_locator(fixed(ticks))
    ax.xaxis.set_major_formatter(func(lambda v, _p: _label(v) if v >= 1 else ""))
    ax.xaxis.set_minor_locator(null())
    # Room for the edge markers: half an octave each side.
    ax.set_xlim(sizes[0] / 1.5, sizes[-1] * 1.5)
    for lab in ax.get_xticklabels():
        lab.set_rotation(30)


def _frame_points(
    ax: Any, pts: Sequence[tuple[int, float | None]], *, marker: str, size: float, color: str, width: float
) -> Any:
    """Hollow marks drawn around points already plotted (winners, set-apart rows); the handle."""
    (h,) = ax.plot(
        [x for x, _ in pts],
        [y for _, y in pts],
        linestyle="none",
        marker=marker,
        markersize=size,
        markerfacecolor="none",
        markeredgecolor=color,
        markeredgewidth=width,
        zorder=4,
    )
    return h
