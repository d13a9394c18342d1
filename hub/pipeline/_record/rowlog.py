"""``rows.jsonl``: result rows appended as they come, read back in file order.

Each row is one JSON line (:meth:`hub.pipeline._record.row.Row.as_dict`, with its content ``key``).
The log remembers only the byte offset of each row's line, indexed by the row's position in
file order, so a run's memory stays flat in the number of rows; the final results files are
written by reading the lines back in order. A line is written whole or, when the process is
killed in the middle of one, is a torn last line that :func:`read_log` drops.
"""

from __future__ import annotations

import json
import os
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["LOG_NAME", "RowLog", "read_log"]

LOG_NAME = "rows.jsonl"


class RowLog:
    """An append-only row file with one slot per planned row (``total`` of them)."""

    def __init__(self, path: Path, total: int) -> None:
        self.path = path
        self._fh = open(path, "ab")  # noqa: SIM115 - held for the run, closed by close()
        self._offsets = array("q", [-1]) * total
        self.count = 0
        #: metric key -> (pos, index) of its first appearance in file order
        self._first: dict[str, tuple[int, int]] = {}
        self.consumers: set[str | None] = set()

    def append(self, pos: int, row: dict[str, Any]) -> None:
        """Write ``row`` as the row at position ``pos`` (a later write of ``pos`` wins)."""
        line = (json.dumps(row, default=str, separators=(",", ":")) + "\n").encode()
        if self._offsets[pos] < 0:
            self.count += 1
        self._offsets[pos] = self._fh.tell()
        self._fh.write(line)
        self.consumers.add(row.get("consumer"))
        first = self._first
        for i, k in enumerate(row.get("metrics") or ()):
            if k not in first or (pos, i) < first[k]:
                first[k] = (pos, i)

    def metric_keys(self) -> list[str]:
        """Every metric key in first-seen order over the rows in file order (whatever order they came in)."""
        return sorted(self._first, key=self._first.__getitem__)

    def lines(self) -> Iterator[bytes]:
        """The rows' JSON lines, in position (file) order."""
        self.flush()
        with open(self.path, "rb") as fh:
            for off in self._offsets:
                if off >= 0:
                    fh.seek(off)
                    yield fh.readline()

    def has(self, pos: int) -> bool:
        return self._offsets[pos] >= 0

    def flush(self) -> None:
        """Hand what was written to the OS: it survives the process being killed from here on."""
        self._fh.flush()

    def rows(self) -> Iterator[dict[str, Any]]:
        """The rows written so far, in position (file) order."""
        self.flush()
        with open(self.path, "rb") as fh:
            for off in self._offsets:
                if off >= 0:
                    fh.seek(off)
                    yield json.loads(fh.readline())

    def replace(self, target: Path) -> None:
        """Rename the log to ``target`` (atomically); later appends go on into the same file."""
        self.flush()
        os.replace(self.path, target)
        self.path = target

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()


def read_log(path: Path) -> Iterator[dict[str, Any]]:
    """Every whole row of an existing log, in the order written; a torn or unreadable line is skipped."""
    try:
        fh = open(path, "rb")  # noqa: SIM115
    except FileNotFoundError:
        return
    with fh:
        for line in fh:
            if not line.endswith(b"\n"):
                break  # the process was killed while writing it
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if isinstance(row, dict) and isinstance(row.get("key"), str):
                yield row
