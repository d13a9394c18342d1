"""SVG of a :class:`DagView`, drawn by matplotlib (imported here, never at CLI start-up)."""

from __future__ import annotations

import io

from ..chakra import Algorithm
from ._model import DagView, dag_view

__all__ = ["to_svg"]

_COLOR = {"SEND": "#3182bd", "RECV": "#31a354", "COMP": "#de2d26"}


def to_svg(alg: Algorithm | DagView, rank: int | None = None) -> str:
    """Layered drawing: x = dependency depth, one horizontal band per rank (nodes of equal depth
    stacked within it); dependency edges grey, message edges dashed black."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    view = alg if isinstance(alg, DagView) else dag_view(alg, rank)
    ranks = sorted({n.rank for n in view.nodes})
    stack: dict[tuple[int, int], int] = {}
    height = {r: 1 for r in ranks}
    for n in view.nodes:
        stack[(n.rank, n.depth)] = stack.get((n.rank, n.depth), 0) + 1
        height[n.rank] = max(height[n.rank], stack[(n.rank, n.depth)])
    base, y0 = {}, 0.0
    for r in ranks:
        base[r] = y0
        y0 += height[r] + 1
    seen: dict[tuple[int, int], int] = {}
    pos: dict[str, tuple[float, float]] = {}
    for n in view.nodes:
        k = seen.get((n.rank, n.depth), 0)
        seen[(n.rank, n.depth)] = k + 1
        pos[n.key] = (float(n.depth), base[n.rank] + k)
    depth = max((n.depth for n in view.nodes), default=0)
    fig, ax = plt.subplots(figsize=(min(4 + 0.6 * depth, 60), min(2 + 0.45 * y0, 60)))
    for a, b in view.deps:
        (x1, y1), (x2, y2) = pos[a], pos[b]
        ax.annotate("", (x2, y2), (x1, y1), arrowprops={"arrowstyle": "->", "color": "#999999", "lw": 0.6})
    for a, b in view.messages:
        (x1, y1), (x2, y2) = pos[a], pos[b]
        ax.annotate("", (x2, y2), (x1, y1), arrowprops={"arrowstyle": "->", "color": "black", "lw": 0.6, "ls": "--"})
    for n in view.nodes:
        x, y = pos[n.key]
        ax.text(
            x,
            y,
            n.label.split("\n")[0],
            ha="center",
            va="center",
            fontsize=6,
            color="white",
            bbox={"boxstyle": "round,pad=0.25", "fc": _COLOR.get(n.kind, "#777777"), "ec": "none"},
        )
    ax.set_yticks([base[r] + (height[r] - 1) / 2 for r in ranks], [f"rank {r}" for r in ranks])
    ax.set_xlabel("dependency depth")
    ax.set_xlim(-0.7, depth + 0.7)
    ax.set_ylim(y0 - 0.5, -0.8)
    ax.set_title(
        f"{view.name or 'algorithm'}: {len(view.nodes)} nodes, {len(view.deps)} dependencies, "
        f"{len(view.messages)} messages",
        fontsize="small",
    )
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    buf = io.StringIO()
    fig.tight_layout()
    fig.savefig(buf, format="svg")
    plt.close(fig)
    return buf.getvalue()
