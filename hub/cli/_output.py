"""Rendering for the CLI: JSON on stdout, aligned plain tables, diagnostics on stderr.

Plain text tables (no rich) keep ``collhub`` fast to start and its output easy to pipe.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from enum import StrEnum
from typing import Any

import typer

__all__ = ["OutputFormat", "FORMAT_OPTION", "emit_json", "err", "out", "table"]


class OutputFormat(StrEnum):
    """``--format`` choices of every command that lists or reports."""

    table = "table"
    json = "json"


FORMAT_OPTION = typer.Option(
    OutputFormat.table,
    "--format",
    "-f",
    help="Output format: human-readable table or JSON on stdout.",
    case_sensitive=False,
)


def out(text: str = "") -> None:
    """Write a line to stdout."""
    typer.echo(text)


def err(text: str) -> None:
    """Write a diagnostic line to stderr (never mixed into JSON output)."""
    typer.echo(text, err=True)


def emit_json(obj: Any) -> None:
    """Write ``obj`` as indented JSON to stdout. Top-level values are always objects."""
    typer.echo(json.dumps(obj, indent=2, sort_keys=False, default=_default))


def _default(obj: Any) -> Any:
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    if hasattr(obj, "model_dump"):
        return obj.model_dump(mode="json")
    if hasattr(obj, "value"):
        return obj.value
    return str(obj)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], *, indent: int = 0) -> str:
    """An aligned plain-text table; the last column is not padded."""
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    pad = " " * indent
    lines = []
    for n, r in enumerate(cells):
        line = "  ".join(c.ljust(widths[i]) if i < len(r) - 1 else c for i, c in enumerate(r))
        lines.append(pad + line.rstrip())
        if n == 0:
            lines.append(pad + "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def is_tty() -> bool:
    return sys.stdout.isatty()
