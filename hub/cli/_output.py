"""Rendering for the CLI: JSON on stdout, aligned plain tables, diagnostics on stderr.

Plain text tables (no rich) keep ``collhub`` fast to start and its output easy to pipe.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Collection, Sequence
from enum import StrEnum
from itertools import repeat
from typing import Any

import typer

__all__ = ["OutputFormat", "FORMAT_OPTION", "dumps_json", "emit_json", "err", "out", "table", "terminal_width"]


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
    return _layout(obj, indent, record, _compact_encoder())


def _layout(obj: Any, indent: int, record: bool, compact: Callable[[Any], str]) -> str:
    """:func:`dumps_json`'s recursion; ``compact`` writes each one-line value."""
    if not isinstance(obj, (dict, list, tuple, *_SCALARS)):
        obj = _default(obj)
    if isinstance(obj, dict):
        if not obj or (record and _all_scalars(obj.values())):
            return compact(obj)
        inner = " " * (indent + 2)
        body = ",\n".join(
            f"{inner}{_key(k, compact)}: {_layout(v, indent + 2, False, compact)}" for k, v in obj.items()
        )
        return "{\n" + body + "\n" + " " * indent + "}"
    if isinstance(obj, (list, tuple)):
        if _all_scalars(obj):
            return compact(obj)
        inner = " " * (indent + 2)
        body = ",\n".join(inner + _layout(v, indent + 2, True, compact) for v in obj)
        return "[\n" + body + "\n" + " " * indent + "]"
    return compact(obj)


def _all_scalars(values: Collection[Any]) -> bool:
    # map over the C isinstance: a generator expression costs a Python frame step per value, and a
    # 256-rank result checks about 7,000 of them
    return all(map(isinstance, values, repeat(_SCALARS, len(values))))


def _compact_encoder() -> Callable[[Any], str]:
    """What ``json.dumps(obj, default=_default)`` writes, from one encoder made once per document.

    ``json.dumps`` with ``default`` builds a new ``JSONEncoder`` (and its C encoder) on every call,
    which for the thousand-odd records of a 256-rank result cost more than encoding them. The C
    encoder is made here with ``json.dumps``'s settings (circular check, ASCII, NaN allowed, ``", "``
    and ``": "``); fresh per document, so an error in one cannot leave marks in the next."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # an interpreter without the _json accelerator: json's own Python encoder
        return json.JSONEncoder(default=_default).encode
    encode = make({}, _default, json.encoder.encode_basestring_ascii, None, ": ", ", ", False, False, True)
    return lambda obj: "".join(encode(obj, 0))


def _key(key: Any, compact: Callable[[Any], str]) -> str:
    """An object key as ``json.dumps`` writes it (ints, floats, booleans and None become text)."""
    if isinstance(key, str):
        return compact(key)
    text = compact({key: 0})
    return text[1 : text.rindex(":")]


def _default(obj: Any) -> Any:
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    if hasattr(obj, "model_dump"):
        return obj.model_dump(mode="json")
    if hasattr(obj, "value"):
        return obj.value
    return str(obj)


#: the fewest characters the last column keeps when a table is fitted to a width
_MIN_LAST = 20


def table(
    headers: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    indent: int = 0,
    width: int | None = None,
    wrap: Collection[int] = (),
) -> str:
    """An aligned plain-text table; the last column is not padded.

    With ``width``, a table wider than ``width`` is fitted: the ``wrap`` columns (comma-separated
    lists) break after a comma onto continuation lines, down to their longest item, leaving the
    last column (free text) ``_MIN_LAST`` characters; then the last column is cut with an
    ellipsis. Other columns (ids, kinds) stay whole, so a line whose unbreakable columns alone are
    wider than ``width`` stays longer than ``width``."""
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    pad = " " * indent
    if width is not None and headers and sum(w + 2 for w in widths) - 2 + indent > width:
        last = len(headers) - 1
        for i in wrap:
            others = sum(w + 2 for j, w in enumerate(widths[:last]) if j != i)
            longest = max((len(item) + 1 for r in cells for item in r[i].split(",")), default=0)
            widths[i] = min(widths[i], max(longest, width - indent - others - 2 - _MIN_LAST))
        room = max(_MIN_LAST, width - indent - sum(w + 2 for w in widths[:last]))
        for r in cells[1:]:
            if len(r[last]) > room:
                r[last] = r[last][: room - 1].rstrip() + "…"
        widths[last] = min(widths[last], room)
    lines = []
    for n, r in enumerate(cells):
        parts = [_wrap_list(c, widths[i]) if i in wrap else [c] for i, c in enumerate(r)]
        for k in range(max(len(p) for p in parts)):
            row = [p[k] if k < len(p) else "" for p in parts]
            line = "  ".join(c.ljust(widths[i]) if i < len(row) - 1 else c for i, c in enumerate(row))
            lines.append(pad + line.rstrip())
        if n == 0:
            lines.append(pad + "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _wrap_list(text: str, width: int) -> list[str]:
    """A comma-separated list broken after commas into lines of at most ``width`` characters."""
    if len(text) <= width:
        return [text]
    lines = [""]
    items = text.split(",")
    for n, item in enumerate(items):
        piece = item + ("," if n < len(items) - 1 else "")
        if lines[-1] and len(lines[-1]) + len(piece) > width:
            lines.append("")
        lines[-1] += piece
    return lines


def is_tty() -> bool:
    return sys.stdout.isatty()


def terminal_width() -> int | None:
    """The width text tables fit: ``$COLUMNS`` when set, else the terminal's, else None (piped
    output is left whole, for grep and files)."""
    import shutil

    if os.environ.get("COLUMNS", "").strip().isdigit() or sys.stdout.isatty():
        return shutil.get_terminal_size((80, 24)).columns
    return None
