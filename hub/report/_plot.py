"""``report.png``: busbw against size per algorithm, one panel per study, the winner marked.

Under each panel's curves a strip of markers along the x axis shows, at every studied size, the
colour of the winning algorithm; dotted vertical lines sit at the crossovers (the geometric mean
of the two sizes between which the winner changes). matplotlib is imported here only, through
the object API and the Agg canvas, so the caller's pyplot state is left alone.
"""

from __future__ import annotations

import math
from pathlib import Path

from ..atomic import output_path
from ..errors import UsageError
from ._answer import Answer

__all__ = ["MAX_PANELS", "render_plot"]

#: Panels drawn at most: a picture of 50 studies is unreadable (and huge); the tables have them all.
MAX_PANELS = 8


def _label(n: float) -> str:
    from .._ranges import exact_size

    return exact_size(int(n))


def render_plot(ans: Answer, target: Path, dpi: int = 110) -> Path:
    """Draw ``ans`` into the PNG ``target`` (written atomically) and return it."""
    try:
        import matplotlib
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator
    except ImportError:
        raise UsageError(
            "the report plot needs matplotlib, which is not installed",
            hint='pip install "collhub[plot]" (or pass --no-plot)',
        ) from None
    sources = list(dict.fromkeys(s for st in ans.studies for s in st.series))
    palette = list(matplotlib.colormaps["tab10" if len(sources) <= 10 else "tab20"].colors)  # type: ignore[attr-defined]
    color = {s: palette[i % len(palette)] for i, s in enumerate(sources)}
    markers = dict(zip(sources, "osD^vPX*<>" * (len(sources) // 10 + 1), strict=False))
    studies = ans.studies[:MAX_PANELS]
    n = len(studies)
    ncols = 1 if n == 1 else 2
    nrows = math.ceil(n / ncols)
    fig = Figure(figsize=(6.4 * ncols, 4.2 * nrows + 0.6), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for idx, ax in enumerate(axes.flat):
        if idx >= n:
            ax.set_visible(False)
            continue
        st = studies[idx]
        top = 0.0
        for src, pts in st.series.items():
            xs = sorted(pts)
            ys = [bw if bw is not None else math.nan for bw in (pts[x][1] for x in xs)]
            top = max([top, *(y for y in ys if not math.isnan(y))])
            ax.plot(xs, ys, color=color[src], marker=markers[src], markersize=4.5, linewidth=1.6, label=src)
        # The winner strip: one marker per size at the bottom, in the winner's colour.
        strip = -0.06 * (top or 1.0)
        ax.scatter(
            [b.size_bytes for b in st.best],
            [strip] * len(st.best),
            marker="s",
            s=42,
            zorder=3,
            c=[color[b.source] for b in st.best],
            edgecolors="black",
            linewidths=0.4,
        )
        for c in st.crossovers:
            ax.axvline(math.sqrt(c.below * c.at), color="0.35", linestyle=":", linewidth=1.0)
        ax.set_ylim(bottom=2 * strip, top=(top or 1.0) * 1.08)
        ax.axhline(0, color="0.6", linewidth=0.6)
        ax.set_xscale("log", base=2)
        sizes = st.sizes
        ticks = [float(s) for s in sizes]
        if len(ticks) > 9:
            lo, hi = math.floor(math.log2(sizes[0])), math.ceil(math.log2(sizes[-1]))
            step = max(1, math.ceil((hi - lo + 1) / 8))
            ticks = [2.0**e for e in range(lo, hi + 1, step)]
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: _label(v) if v >= 1 else ""))
        ax.xaxis.set_minor_locator(NullLocator())
        for lab in ax.get_xticklabels():
            lab.set_rotation(30)
        ax.set_title(st.title, fontsize=9.5)
        ax.set_xlabel(f"{ans.size_variable} (bytes); squares: the winner at each size")
        ax.set_ylabel("bus bandwidth (GB/s)")
        ax.grid(True, color="0.88", linewidth=0.7)
        ax.legend(fontsize=8, frameon=False, loc="upper left")
    title = f"{ans.pipeline + ': ' if ans.pipeline else ''}the best algorithm at each size"
    if len(ans.studies) > n:
        title += f" (the first {n} of {len(ans.studies)} studies; report.json and report.md have all)"
    fig.suptitle(title, fontsize=11)
    with output_path(target) as tmp:  # whole or absent, with the run's file mode
        fig.savefig(tmp, format="png", dpi=dpi, facecolor="white")
    return target
