"""``collhub trace show PREFIX --graph dot|graphml|svg``: the drawing behind the option.

Kept apart from ``trace.py`` so the CLI module stays small and matplotlib (SVG only) is
imported only when a picture is asked for."""

from __future__ import annotations

import enum
from pathlib import Path

from ..errors import UsageError
from ..topology._base import atomic_write_text
from ._output import emit_json, err, out

__all__ = ["GraphFormat", "show_graph"]


class GraphFormat(enum.StrEnum):
    dot = "dot"
    graphml = "graphml"
    svg = "svg"


def show_graph(
    obj: object, fmt: GraphFormat, rank: int | None, dest: Path | None, *, prefix: str = "", as_json: bool = False
) -> None:
    """Write the DAG of ``obj`` (an Algorithm) to ``dest``, or to stdout.

    With ``as_json`` (``--format json``) stdout gets one object instead: the drawing itself as
    ``document`` when it has no file, else the path ``written``."""
    from ..chakra import Algorithm
    from ..drawing import to_dot, to_graphml, to_svg

    if not isinstance(obj, Algorithm):
        raise UsageError("--graph draws algorithm traces; this is a workload trace")
    if fmt == GraphFormat.svg:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise UsageError(
                "--graph svg needs matplotlib",
                hint="pip install 'collhub[plot]', or use --graph dot and Graphviz: dot -Tsvg",
            ) from None
    text = {GraphFormat.dot: to_dot, GraphFormat.graphml: to_graphml, GraphFormat.svg: to_svg}[fmt](obj, rank)
    if dest is not None:
        atomic_write_text(dest, text)
    if as_json:
        doc: dict[str, object] = {"prefix": prefix, "format": fmt.value, "rank": rank}
        emit_json({**doc, "written": str(dest)} if dest is not None else {**doc, "document": text})
    elif dest is None:
        out(text.rstrip("\n"))
    else:
        err(f"wrote {dest}")
