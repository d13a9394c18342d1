"""The results table of ``collhub run``: drawn line by line, fitted to the terminal.

Rich's ``Table`` measures every cell several times; for a 10,000-row sweep that took longer
than the sweep. This draws the same heavy-headed box, one pass to measure and one to print,
straight from the rows (an iterable read back from the run directory, never held whole).

In a terminal narrower than the table the ``status`` column stays visible: metric columns
beyond time/algbw/busbw are left out first (named on a note line below the table), then the
status text is cut with an ellipsis.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable, Iterable
from typing import Any, TextIO

from ..results._tables import columns_for, table_cells, table_header

__all__ = ["print_run_table"]

_CORE_HEADERS = ("time_us", "algbw GB/s", "busbw GB/s")


def _fit(header: list[str], widths: list[int], fixed: set[int], limit: int) -> tuple[list[int], list[str]]:
    """Indices of the columns to show within ``limit`` characters, and the headers left out."""
    keep = list(range(len(header)))
    dropped: list[str] = []

    def total() -> int:
        return sum(widths[i] + 3 for i in keep) + 1

    # A consumer's own metrics go first (rightmost first), then the standard figures.
    for i in reversed(range(len(header))):
        if total() <= limit:
            break
        if i not in fixed and header[i] not in _CORE_HEADERS:
            keep.remove(i)
            dropped.append(header[i])
    for name in ("algbw GB/s", "time_us"):
        if total() <= limit or name not in header:
            continue
        i = header.index(name)
        if i in keep:
            keep.remove(i)
            dropped.append(name)
    return keep, dropped


def print_run_table(
    rows: Callable[[], Iterable[dict[str, Any]]],
    variables: list[str],
    title: str,
    file: TextIO | None = None,
    width: int | None = None,
) -> None:
    """Print the table of ``rows()`` (called twice: measure, then print) to ``file`` (stdout)."""
    file = file or sys.stdout
    metrics: dict[str, None] = {}
    consumers: set[Any] = set()
    for r in rows():
        consumers.add(r.get("consumer"))
        for k in r.get("metrics", {}):
            metrics.setdefault(k, None)
    cols = columns_for(list(metrics))
    show_consumer = len(consumers) > 1
    header = table_header(cols, variables, show_consumer)
    widths = [len(h) for h in header]
    for r in rows():
        for i, c in enumerate(table_cells(r, cols, variables, show_consumer)):
            widths[i] = max(widths[i], len(c))
    status = len(header) - 1
    text_cols = {0, status, *range(1, 1 + int(show_consumer) + len(variables))}
    if width is None and file.isatty():
        width = shutil.get_terminal_size((80, 24)).columns
    keep: list[int] = list(range(len(header)))
    dropped: list[str] = []
    if width is not None:
        # Fit with the status at up to 20 characters: long failure messages are cut, not worth a column.
        fitting = widths[:status] + [min(widths[status], 20)]
        keep, dropped = _fit(header, fitting, text_cols, width)
        others = sum(widths[i] + 3 for i in keep if i != status) + 1
        widths[status] = max(len("status"), min(widths[status], width - others - 3))

    def cut(i: int, s: str) -> str:
        w = widths[i]
        if len(s) > w:
            s = s[: max(0, w - 1)] + "…"
        return s.ljust(w) if i in text_cols else s.rjust(w)

    def rule(left: str, mid: str, right: str, fill: str) -> str:
        return left + mid.join(fill * (widths[i] + 2) for i in keep) + right

    line_w = sum(widths[i] + 3 for i in keep) + 1
    out = [
        title.center(line_w).rstrip(),
        rule("┏", "┳", "┓", "━"),
        "┃"
        + "┃".join(f" {header[i].ljust(widths[i]) if i in text_cols else header[i].rjust(widths[i])} " for i in keep)
        + "┃",
        rule("┡", "╇", "┩", "━"),
    ]
    file.write("\n".join(out) + "\n")
    for r in rows():
        cells = table_cells(r, cols, variables, show_consumer)
        file.write("│" + "│".join(f" {cut(i, cells[i])} " for i in keep) + "│\n")
    file.write(rule("└", "┴", "┘", "─") + "\n")
    if dropped:
        file.write(
            f"({len(dropped)} column(s) left out to fit {width} columns: {', '.join(dropped)}; see results.md)\n"
        )
