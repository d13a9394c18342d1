"""What a run writes from its rows: results.json, results.csv, results.md and the human tables.

Rows are streamed (an iterable read from ``rows.jsonl`` in file order), never held whole: each
file is written to a temporary name and renamed into place. The metric columns are those the
rows report, in first-seen order.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from .._units import percent_of_bound
from ..atomic import write_file

__all__ = [
    "STANDARD_METRICS",
    "csv_text",
    "markdown_text",
    "metric_keys",
    "percent_of_bound",
    "table_columns",
    "table_rows",
    "warning_lines",
    "write_from_log",
    "write_results",
]

#: metric key -> (column header, scale) for the Markdown table; time is shown in microseconds.
_MD_METRICS = (("time_ns", "time_us", 1e-3), ("algbw_GBps", "algbw GB/s", 1.0), ("busbw_GBps", "busbw GB/s", 1.0))
#: How close a row is to the collective's lower bound, shown after time/algbw/busbw wherever a
#: row reports a bound: ``time_over_bound`` as a percentage (``112%``) and the term that binds
#: (``bandwidth|latency|both``). Rows without a bound leave the cells empty.
_BOUND_COLUMNS = (("time_over_bound", "% of bound", 100.0), ("bound_term", "bound term", 1.0))
#: What the built-in simulator (and the ASTRA-sim consumers) report besides time/algbw/busbw:
#: descriptive figures that stay out of the tables. Any other metric a consumer reports is its
#: own and gets a column.
STANDARD_METRICS = frozenset(
    {
        "time_ns",
        "time_us",
        "algbw_GBps",
        "busbw_GBps",
        "size_bytes",
        "ranks",
        "collective",
        "mode",
        "topology",
        "messages",
        "bytes",
        "bound_ns",
        "time_over_bound",
        "bound_term",
        "bound_slack_ns",
        "link_bound_ns",
        "time_over_link_bound",
    }
)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        # Three decimals keep µs exact to the ns and GB/s to the MB/s; tiny values keep 3 digits.
        return f"{value:.3f}" if value == 0 or abs(value) >= 0.01 else f"{value:.3g}"
    return str(value)


def _csv_cell(value: Any) -> str:
    # Full precision in CSV (repr of a float round-trips); the tables round for reading.
    if isinstance(value, float):
        return repr(value)
    return _cell(value)


def metric_keys(rows: Iterable[dict[str, Any]]) -> list[str]:
    """Every metric key in first-seen order."""
    keys: dict[str, None] = {}
    for row in rows:
        for k in row.get("metrics", {}):
            keys.setdefault(k, None)
    return list(keys)


def _csv_lines(rows: Iterable[dict[str, Any]], variables: list[str], metrics: list[str]) -> Iterator[str]:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["source", "consumer", *variables, "status", "algorithm", *metrics, "error"])
    for r in rows:
        point = r["point"]
        w.writerow(
            [
                r["source"],
                r["consumer"] or "",
                *(_csv_cell(point.get(v)) for v in variables),
                r["status"],
                (r.get("algorithm") or {}).get("hash", ""),
                *(_csv_cell(r["metrics"].get(m)) for m in metrics),
                r.get("error") or "",
            ]
        )
        yield buf.getvalue()
        buf.seek(0)
        buf.truncate()
    if buf.tell():  # the header when there is no row
        yield buf.getvalue()


def csv_text(rows: list[dict[str, Any]], variables: list[str]) -> str:
    """One line per row: source, consumer, each matrix variable, status, algorithm, metrics, error."""
    return "".join(_csv_lines(rows, variables, metric_keys(rows)))


def columns_for(metrics: list[str]) -> list[tuple[str, str, float]]:
    """Metric columns of the human tables from the metric keys present (first-seen order):
    time/algbw/busbw when reported, ``% of bound`` and ``bound term`` when a row reports a bound,
    then every metric that is a consumer's own (not in :data:`STANDARD_METRICS`); without
    time/algbw/busbw, every metric."""
    present = set(metrics)
    cols = [c for c in _MD_METRICS if c[0] in present]
    if not cols:
        return [(k, k, 1.0) for k in metrics]
    if "time_over_bound" in present:
        cols += [c for c in _BOUND_COLUMNS if c[0] in present]
    return cols + [(k, k, 1.0) for k in metrics if k not in STANDARD_METRICS]


def table_columns(rows: list[dict[str, Any]]) -> list[tuple[str, str, float]]:
    """Metric columns of the human tables (see :func:`columns_for`)."""
    return columns_for(metric_keys(rows))


def table_header(cols: list[tuple[str, str, float]], variables: list[str], show_consumer: bool) -> list[str]:
    return ["source", *(["consumer"] if show_consumer else []), *variables, *(c[1] for c in cols), "status"]


def table_cells(
    r: dict[str, Any], cols: list[tuple[str, str, float]], variables: list[str], show_consumer: bool
) -> list[str]:
    """One row of the human results table (shared by results.md and the CLI)."""
    cells = [r["source"], *([r["consumer"] or "-"] if show_consumer else [])]
    cells += [_cell(r["point"].get(v)) for v in variables]
    metrics = r["metrics"]
    for key, head, scale in cols:
        v = metrics.get(key)
        if (key, head, scale) == _BOUND_COLUMNS[0]:
            cells.append(percent_of_bound(v))
            continue
        numeric = isinstance(v, (int, float)) and not isinstance(v, bool) and scale != 1.0
        cells.append(_cell(v * scale) if numeric else _cell(v))
    cells.append(_status(r))
    return cells


def table_rows(rows: list[dict[str, Any]], variables: list[str]) -> tuple[list[str], list[list[str]]]:
    """Header and cells of the human results table (shared by results.md and the CLI)."""
    cols = table_columns(rows)
    show_consumer = len({r["consumer"] for r in rows}) > 1
    header = table_header(cols, variables, show_consumer)
    return header, [table_cells(r, cols, variables, show_consumer) for r in rows]


def _status(row: dict[str, Any]) -> str:
    """``ok``, ``ok (below bound)`` / ``ok (N warnings)`` when the consumer doubts a figure, or
    ``failed: ...``."""
    if row["status"] != "ok":
        return f"failed: {row.get('error') or ''}".strip()
    warns = row.get("warnings") or []
    if not warns:
        return "ok"
    if len(warns) == 1:
        return "ok (below bound)" if "below the" in warns[0] and "lower bound" in warns[0] else "ok (1 warning)"
    return f"ok ({len(warns)} warnings)"


def _esc(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def _markdown_lines(
    rows: Callable[[], Iterable[dict[str, Any]]],
    variables: list[str],
    title: str,
    cols: list[tuple[str, str, float]],
    show_consumer: bool,
) -> Iterator[str]:
    header = table_header(cols, variables, show_consumer)
    yield f"# {title}\n\n"
    yield "| " + " | ".join(header) + " |\n"
    yield "|" + "|".join("---" for _ in header) + "|\n"
    warned = False
    for r in rows():
        warned = warned or bool(r.get("warnings"))
        yield "| " + " | ".join(_esc(c) for c in table_cells(r, cols, variables, show_consumer)) + " |\n"
    if warned:
        yield "\nWarnings:\n\n"
        for r in rows():
            for w in _row_warnings(r):
                yield f"- {_esc(w)}\n"


def markdown_text(rows: list[dict[str, Any]], variables: list[str], title: str) -> str:
    show_consumer = len({r["consumer"] for r in rows}) > 1
    return "".join(_markdown_lines(lambda: rows, variables, title, table_columns(rows), show_consumer))


def _row_warnings(r: dict[str, Any]) -> list[str]:
    point = ", ".join(f"{k}={v}" for k, v in (r.get("point") or {}).items())
    where = f"{r['source']}" + (f" · {r['consumer']}" if r.get("consumer") else "") + (f" ({point})" if point else "")
    return [f"{where}: {w}" for w in r.get("warnings") or []]


def warning_lines(rows: Iterable[dict[str, Any]]) -> list[str]:
    """``source · consumer (point): warning`` for every warning of every row."""
    out: list[str] = []
    for r in rows:
        out += _row_warnings(r)
    return out


def _write_lines(path: Path, lines: Iterable[str]) -> None:
    write_file(path, lines)  # streamed: a large run's table is never one string


def _json_lines(document: dict[str, Any], rows: Iterable[dict[str, Any]], seen: dict[str, Any]) -> Iterator[str]:
    """``results.json``: the metadata indented, then one row per line; records what the tables need."""
    head = json.dumps({k: v for k, v in document.items() if k != "rows"}, indent=2, default=str)
    yield head[:-2] + ',\n  "rows": [' if len(head) > 2 else '{\n  "rows": ['
    first = True
    consumers: set[Any] = set()
    metrics: dict[str, None] = seen.setdefault("metrics", {})
    for r in rows:
        consumers.add(r.get("consumer"))
        for k in r.get("metrics", {}):
            metrics.setdefault(k, None)
        yield ("\n    " if first else ",\n    ") + json.dumps(r, default=str)
        first = False
    seen["consumers"] = consumers
    yield "\n  ]\n}\n" if not first else "]\n}\n"


def write_results(
    run_dir: Path,
    document: dict[str, Any],
    variables: list[str],
    title: str,
    rows: Callable[[], Iterable[dict[str, Any]]] | None = None,
) -> None:
    """Write results.json, results.csv and results.md into ``run_dir``.

    ``rows()`` gives the rows in file order, anew on each call (it is called three times); by
    default the document's own ``rows``."""
    if rows is None:
        held = document["rows"]
        rows = lambda: held  # noqa: E731
    seen: dict[str, Any] = {}
    _write_lines(run_dir / "results.json", _json_lines(document, rows(), seen))
    metrics = list(seen["metrics"])
    show_consumer = len(seen["consumers"]) > 1
    _write_lines(run_dir / "results.csv", _csv_lines(rows(), variables, metrics))
    _write_lines(run_dir / "results.md", _markdown_lines(rows, variables, title, columns_for(metrics), show_consumer))


def write_from_log(
    run_dir: Path,
    document: dict[str, Any],
    variables: list[str],
    title: str,
    lines: Iterable[bytes],
    metrics: list[str],
    show_consumer: bool,
    log: Path,
) -> None:
    """In one pass over the rows' JSON ``lines`` (file order): ``log`` rewritten in that order,
    results.json, results.csv and results.md; each file renamed into place at the end."""
    cols = columns_for(metrics)
    names = (log, run_dir / "results.json", run_dir / "results.csv", run_dir / "results.md")
    tmps = [p.with_name(f".{p.name}.tmp") for p in names]
    head = json.dumps({k: v for k, v in document.items() if k != "rows"}, indent=2, default=str)
    warned: list[str] = []
    with (
        open(tmps[0], "wb") as lg,
        open(tmps[1], "w", encoding="utf-8") as js,
        open(tmps[2], "w", encoding="utf-8", newline="") as cs,
        open(tmps[3], "w", encoding="utf-8") as md,
    ):
        js.write(head[:-2] + ',\n  "rows": [')
        csv_out = csv.writer(cs, lineterminator="\n")
        csv_out.writerow(["source", "consumer", *variables, "status", "algorithm", *metrics, "error"])
        header = table_header(cols, variables, show_consumer)
        md.write(f"# {title}\n\n| " + " | ".join(header) + " |\n|" + "|".join("---" for _ in header) + "|\n")
        sep = "\n    "
        for line in lines:
            r = json.loads(line)
            lg.write(line)
            js.write(sep + line.decode().rstrip("\n"))
            sep = ",\n    "
            point, m = r["point"], r["metrics"]
            csv_out.writerow(
                [
                    r["source"],
                    r["consumer"] or "",
                    *(_csv_cell(point.get(v)) for v in variables),
                    r["status"],
                    (r.get("algorithm") or {}).get("hash", ""),
                    *(_csv_cell(m.get(k)) for k in metrics),
                    r.get("error") or "",
                ]
            )
            md.write("| " + " | ".join(_esc(c) for c in table_cells(r, cols, variables, show_consumer)) + " |\n")
            if r.get("warnings"):
                warned += _row_warnings(r)
        js.write("\n  ]\n}\n" if sep != "\n    " else "]\n}\n")
        if warned:
            md.write("\nWarnings:\n\n" + "".join(f"- {_esc(w)}\n" for w in warned))
    for tmp, final in zip(tmps, names, strict=True):
        os.replace(tmp, final)
