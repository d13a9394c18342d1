"""The run directory: built in a temporary sibling, then renamed into place.

Layout::

    <run>/pipeline.yaml                       the pipeline file as it was run
    <run>/algorithms/<source>-<hash>/<name>.<rank>.et   each distinct algorithm, written once
    <run>/artifacts/<source>/<point>/<consumer>/...     what consumers wrote
    <run>/results.json  results.csv  results.md

An existing target is never overwritten unless ``force``: the run goes to ``<name>-2``,
``<name>-3``, ... instead. With ``force`` the old directory is swapped out after the new one is
complete, so an interrupted run never leaves a half-written directory under the target name.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["RunDir", "choose_target", "write_results"]

#: metric key -> (column header, scale) for the Markdown table; time is shown in microseconds.
_MD_METRICS = (("time_ns", "time_us", 1e-3), ("algbw_GBps", "algbw GB/s", 1.0), ("busbw_GBps", "busbw GB/s", 1.0))


def choose_target(target: Path, *, force: bool) -> Path:
    """``target`` itself, or with ``force`` too; else the first free ``target-N`` (N >= 2)."""
    if force or not target.exists():
        return target
    n = 2
    while True:
        candidate = target.with_name(f"{target.name}-{n}")
        if not candidate.exists():
            return candidate
        n += 1


class RunDir:
    """A run directory under construction at :attr:`tmp`, published to :attr:`final` by :meth:`commit`."""

    def __init__(self, target: Path, *, force: bool = False) -> None:
        self.final = choose_target(Path(target).absolute(), force=force)
        self.force = force
        if self.final.is_symlink() or (self.final.exists() and not self.final.is_dir()):
            from ..errors import UsageError  # --force replaces run directories only, never a user's file

            raise UsageError(f"{self.final} exists and is not a directory",
                             hint="choose another --out; a file is never moved aside or replaced")
        self.final.parent.mkdir(parents=True, exist_ok=True)
        self.tmp = self.final.parent / f".{self.final.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.tmp.mkdir()

    def commit(self) -> Path:
        """Rename the finished directory into place (swapping out an old one with ``force``)."""
        old: Path | None = None
        if self.final.exists():
            if not self.force:  # appeared while we ran: take the next free name
                self.final = choose_target(self.final, force=False)
            else:
                old = self.final.parent / f".{self.final.name}.old-{uuid.uuid4().hex[:8]}"
                os.replace(self.final, old)
        os.replace(self.tmp, self.final)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        return self.final

    def discard(self) -> None:
        """Remove the temporary directory (after a failure)."""
        shutil.rmtree(self.tmp, ignore_errors=True)


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


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


def csv_text(rows: list[dict[str, Any]], variables: list[str]) -> str:
    """One line per row: source, consumer, each matrix variable, status, algorithm, metrics, error."""
    metrics = metric_keys(rows)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["source", "consumer", *variables, "status", "algorithm", *metrics, "error"])
    for r in rows:
        point = r["point"]
        w.writerow([r["source"], r["consumer"] or "", *(_csv_cell(point.get(v)) for v in variables), r["status"],
                    (r.get("algorithm") or {}).get("hash", ""), *(_csv_cell(r["metrics"].get(m)) for m in metrics),
                    r.get("error") or ""])
    return buf.getvalue()


def table_columns(rows: list[dict[str, Any]]) -> list[tuple[str, str, float]]:
    """Metric columns of the human tables: time/algbw/busbw when reported, else every metric."""
    present = set(metric_keys(rows))
    cols = [c for c in _MD_METRICS if c[0] in present]
    if cols:
        return cols
    return [(k, k, 1.0) for k in metric_keys(rows)]


def table_rows(rows: list[dict[str, Any]], variables: list[str]) -> tuple[list[str], list[list[str]]]:
    """Header and cells of the human results table (shared by results.md and the CLI)."""
    cols = table_columns(rows)
    show_consumer = len({r["consumer"] for r in rows}) > 1
    header = ["source", *(["consumer"] if show_consumer else []), *variables, *(c[1] for c in cols), "status"]
    body = []
    for r in rows:
        cells = [r["source"], *([r["consumer"] or "-"] if show_consumer else [])]
        cells += [_cell(r["point"].get(v)) for v in variables]
        for key, _, scale in cols:
            v = r["metrics"].get(key)
            cells.append(_cell(v * scale) if isinstance(v, (int, float)) and not isinstance(v, bool) else _cell(v))
        cells.append(_status(r))
        body.append(cells)
    return header, body


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


def markdown_text(rows: list[dict[str, Any]], variables: list[str], title: str) -> str:
    header, body = table_rows(rows, variables)

    def esc(s: str) -> str:
        return s.replace("|", "\\|").replace("\n", " ")

    lines = [f"# {title}", "", "| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(esc(c) for c in cells) + " |" for cells in body]
    warned = warning_lines(rows)
    if warned:
        lines += ["", "Warnings:", ""] + [f"- {esc(w)}" for w in warned]
    return "\n".join(lines) + "\n"


def warning_lines(rows: list[dict[str, Any]]) -> list[str]:
    """``source · consumer (point): warning`` for every warning of every row."""
    out = []
    for r in rows:
        point = ", ".join(f"{k}={v}" for k, v in (r.get("point") or {}).items())
        where = f"{r['source']}" + (f" · {r['consumer']}" if r.get("consumer") else "")
        where += f" ({point})" if point else ""
        out += [f"{where}: {w}" for w in r.get("warnings") or []]
    return out


def write_results(run_dir: Path, document: dict[str, Any], variables: list[str], title: str) -> None:
    """Write results.json, results.csv and results.md into ``run_dir``."""
    rows = document["rows"]
    _atomic_write(run_dir / "results.json", json.dumps(document, indent=2, sort_keys=False, default=str) + "\n")
    _atomic_write(run_dir / "results.csv", csv_text(rows, variables))
    _atomic_write(run_dir / "results.md", markdown_text(rows, variables, title))
