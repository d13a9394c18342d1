"""Draw a :class:`~hub.results._plot.PlotLayout` with matplotlib (object API, Agg canvas).

Imported only when a plot is drawn (``hub.results._plot._render``), so matplotlib is never
imported by a run that does not plot; the caller's pyplot state and backend are left alone.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .._units import format_size
from ..atomic import output_path
from ._plot import _WARNED, Panel, PlotLayout, _matplotlib

__all__ = ["render"]


def _x_ticks(layout: PlotLayout) -> tuple[list[float], list[str]]:
    vals = list(layout.x_values)
    if layout.x_scale == "log2" and len(vals) > 10:
        # Many sizes (nccl-tests sweeps 8B..8GiB): label every k-th power of two instead of each point.
        lo, hi = math.floor(math.log2(vals[0])), math.ceil(math.log2(vals[-1]))
        step = max(1, math.ceil((hi - lo + 1) / 9))
        vals = [2.0**e for e in range(lo, hi + 1, step)]
    elif len(vals) > 10:
        return [], []  # let matplotlib choose
    if layout.x_kind == "bytes":
        return vals, [format_size(v, "label") for v in vals]
    return vals, [f"{v:g}" for v in vals]


#: the figure's text sizes and frame: small, like a paper's figure
_RC = {
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "legend.fontsize": 9.5,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
}


def render(layout: PlotLayout, target: Path, dpi: int) -> None:
    """Draw ``layout`` with matplotlib's object API on the Agg canvas; write the PNG atomically."""
    mpl = _matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    n = max(1, len(layout.panels))
    ncols = n if n <= 3 else 2 if n == 4 else 3  # 4 panels read better as 2 x 2 than as 3 + 1
    nrows = math.ceil(n / ncols)
    style = _series_style(mpl, layout.series)
    ticks, tick_labels = _x_ticks(layout)
    with mpl.rc_context(_RC):
        width, height = 4.6 * ncols + 0.6, 3.5 * nrows + 1.2
        loc, legend_cols, extra_w, extra_h = _legend_plan(layout.series, width)
        fig = Figure(figsize=(width + extra_w, height + extra_h), layout="constrained")
        FigureCanvasAgg(fig)
        axes = fig.subplots(nrows, ncols, sharex=True, sharey=True, squeeze=False)
        handles: dict[str, Any] = {}
        for idx, ax in enumerate(axes.flat):
            if idx >= len(layout.panels):
                ax.set_visible(False)
                continue
            _draw_panel(ax, layout.panels[idx], style, handles)
            _format_axes(ax, layout, ticks, tick_labels)
            # Only the outer axes carry labels: the panels share both axes.
            if idx // ncols == nrows - 1 or idx + ncols >= len(layout.panels):
                ax.set_xlabel(layout.x_label)
                ax.tick_params(axis="x", labelbottom=True)
            if idx % ncols == 0:
                ax.set_ylabel(layout.y_label)
        if layout.y_scale == "linear":
            lo = min(y for p in layout.panels for line in p.lines.values() for _, y in line)
            if lo >= 0:  # bandwidth starts at zero so heights compare honestly
                axes.flat[0].set_ylim(bottom=0)
        if len(ticks) > 6:
            for ax in axes.flat:
                for lab in ax.get_xticklabels():
                    lab.set_rotation(45)
                    lab.set_horizontalalignment("right")
        fig.suptitle(layout.title, fontsize=12)
        order = [s for s in layout.series if s in handles] + ([_WARNED] if _WARNED in handles else [])
        fig.legend([handles[s] for s in order], order, loc=loc, ncols=legend_cols, frameon=False)
        with output_path(target) as tmp:  # whole or absent, with the run's file mode
            fig.savefig(tmp, format="png", dpi=dpi, facecolor="white")


def _series_style(mpl: Any, series: Sequence[str]) -> dict[str, tuple[Any, str, str]]:
    """(color, marker, dash) per series.

    One style per series for the whole figure, so an algorithm looks the same in every panel;
    marker and dash patterns differ too, so coinciding lines stay visible (and print in grey).
    A series ``source · consumer`` takes its source's colour and marker (the ones the source has
    in ``report.png`` and every other picture of the run) and its consumer's dash, so measured
    and simulated lines of one algorithm read as one algorithm."""
    colors = list(mpl.colormaps["tab10" if len(series) <= 10 else "tab20"].colors)
    markers = ["o", "s", "^", "D", "v", "P", "X", "*", "<", ">"]
    dashes = ["-", "--", "-.", ":"]
    sources = list(dict.fromkeys(s.split(" · ", 1)[0] for s in series))
    consumers = list(dict.fromkeys(s.split(" · ", 1)[1] for s in series if " · " in s))
    out = {}
    for s in series:
        src, _, cons = s.partition(" · ")
        i = sources.index(src)
        dash = dashes[consumers.index(cons) % len(dashes)] if cons else dashes[i % len(dashes)]
        out[s] = (colors[i % len(colors)], markers[i % len(markers)], dash)
    return out


def _draw_panel(ax: Any, p: Panel, style: dict[str, tuple[Any, str, str]], handles: dict[str, Any]) -> None:
    """The panel's lines, then a red ring around each flagged point; the first handle of each
    label is kept for the figure's one legend."""
    for s, pts in p.lines.items():
        color, marker, dash = style[s]
        (h,) = ax.plot(
            [a for a, _ in pts],
            [b for _, b in pts],
            color=color,
            marker=marker,
            linestyle=dash,
            markersize=5.5,
            linewidth=1.8,
            markeredgecolor="white",
            markeredgewidth=0.6,
            label=s,
        )
        handles.setdefault(s, h)
    for pts in p.flagged.values():
        (h,) = ax.plot(
            [a for a, _ in pts],
            [b for _, b in pts],
            linestyle="none",
            marker="o",
            markersize=11,
            markerfacecolor="none",
            markeredgecolor="#d62728",
            markeredgewidth=1.6,
            label=_WARNED,
        )
        handles.setdefault(_WARNED, h)
    if p.title:
        ax.set_title(p.title)


def _format_axes(ax: Any, layout: PlotLayout, ticks: list[float], tick_labels: list[str]) -> None:
    """Scales, ticks and grid of one panel."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    if layout.x_scale == "log2":
        ax.set_xscale("log", base=2)
    elif layout.x_scale == "log10":
        ax.set_xscale("log")
    if ticks:
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_major_formatter(_fixed_formatter(ticks, tick_labels))
        ax.xaxis.set_minor_locator(NullLocator())
    if layout.y_scale == "log":
        ax.set_yscale("log")
        # Plain numbers (10, 100, 1000 µs) read faster than 10^k for times.
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    ax.grid(True, which="major", color="0.85", linewidth=0.8)
    ax.margins(x=0.04)
    ax.set_axisbelow(True)


def _legend_plan(series: Sequence[str], width: float) -> tuple[str, int, float, float]:
    """Legend location, columns and the figure growth (inches) it needs.

    Below the panels while the entries fit across the figure in up to 4 columns (one row
    fits in the base height), else one column on the right with the figure widened to hold it."""
    char_in, handle_in = 0.075, 0.75  # ~9.5 pt text; the line sample and padding of one entry
    longest = max((len(s) for s in series), default=0) * char_in + handle_in
    for cols in range(min(len(series), 4), 0, -1):
        if cols * longest <= width:
            rows = math.ceil(len(series) / cols)
            if rows <= 3:
                return "outside lower center", cols, 0.0, 0.25 * (rows - 1)
            break
    return "outside right center", 1, longest + 0.2, 0.0


def _fixed_formatter(ticks: list[float], labels: list[str]) -> Any:
    from matplotlib.ticker import FuncFormatter

    table = dict(zip(ticks, labels, strict=False))
    return FuncFormatter(lambda v, _pos: table.get(v, ""))
