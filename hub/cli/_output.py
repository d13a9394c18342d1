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

__all__ = ["OutputFormat", "FORMAT_OPTION", "dumps_json", "emit_json", "err", "out", "table"]


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
    typer.echo(dumps_json(obj))


#: what a JSON writer emits as a plain value (no line of its own for its parts)
_SCALARS = (str, int, float, bool, type(None))


def dumps_json(obj: Any, indent: int = 0, *, record: bool = False) -> str:
    """``obj`` as JSON indented by two spaces, with lists of scalars and records on one line.

    A list of scalars (a per-rank finish time, ...) is one line, and so is a record: an object of
    scalars inside a list (one link, one step of a critical path); other objects (the metrics)
    keep a line per key. Those lines are written by the json module's C encoder: a 256-rank result
    reads as a few hundred lines instead of tens of thousands, and is written several times
    faster than ``json.dumps(indent=2)``, whose pure-Python encoder runs per value. Parsed, the
    text equals ``json.dumps``'s: only the whitespace differs."""
    if not isinstance(obj, (dict, list, tuple, *_SCALARS)):
        obj = _default(obj)
    if isinstance(obj, dict):
        if not obj or (record and all(isinstance(v, _SCALARS) for v in obj.values())):
            return json.dumps(obj, default=_default)
        inner = " " * (indent + 2)
        body = ",\n".join(f"{inner}{_key(k)}: {dumps_json(v, indent + 2)}" for k, v in obj.items())
        return "{\n" + body + "\n" + " " * indent + "}"
    if isinstance(obj, (list, tuple)):
        if all(isinstance(v, _SCALARS) for v in obj):
            return json.dumps(obj, default=_default)
        inner = " " * (indent + 2)
        body = ",\n".join(inner + dumps_json(v, indent + 2, record=True) for v in obj)
        return "[\n" + body + "\n" + " " * indent + "]"
    return json.dumps(obj, default=_default)


def _key(key: Any) -> str:
    """An object key as ``json.dumps`` writes it (ints, floats, booleans and None become text)."""
    text = json.dumps({key: 0})
    return text[1 : text.rindex(":")]


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
