"""One result row of a run: a typed, frozen record and the one function that builds it.

A row is planned before anything runs (a :class:`RowSlot`: where it sits in the sweep and its
content key) and filled in by :func:`build_row` once its step finished or failed. Rows travel
between processes and into ``rows.jsonl`` as plain dicts (:meth:`Row.as_dict`), whose key order
is the order of ``results.json`` rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Row", "RowSlot", "build_row"]


@dataclass(frozen=True)
class RowSlot:
    """A planned row: its place in file order (``pos``), identity and content key."""

    pos: int
    source: str
    consumer: str | None
    component: str | None
    point: dict[str, Any]
    point_index: int
    key: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "pos": self.pos,
            "source": self.source,
            "consumer": self.consumer,
            "component": self.component,
            "point": self.point,
            "point_index": self.point_index,
            "key": self.key,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RowSlot:
        return cls(
            data["pos"],
            data["source"],
            data["consumer"],
            data["component"],
            data["point"],
            data["point_index"],
            data["key"],
        )

    @property
    def identity(self) -> tuple[str, str | None, str]:
        """What names a row across edits of the pipeline: source, consumer and point."""
        return identity(self.source, self.consumer, self.point)


def identity(source: str, consumer: str | None, point: dict[str, Any]) -> tuple[str, str | None, str]:
    from .._file.matrix import _text

    return source, consumer, ", ".join(f"{k}={_text(v)}" for k, v in point.items())


@dataclass(frozen=True)
class Row:
    """A result row (see ``docs/pipeline.md``, "The run directory")."""

    source: str
    consumer: str | None
    component: str | None
    point: dict[str, Any]
    point_index: int
    algorithm: dict[str, Any] | None
    status: str  # "ok" | "failed"
    metrics: dict[str, Any] = field(default_factory=dict)
    artifacts: dict[str, str] = field(default_factory=dict)
    #: The consumer's ``Result.details``, written to this file (relative to the run directory).
    details_file: str | None = None
    warnings: tuple[str, ...] = ()
    error: str | None = None
    wall_s: float = 0.0
    key: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "consumer": self.consumer,
            "component": self.component,
            "point": self.point,
            "point_index": self.point_index,
            "algorithm": self.algorithm,
            "status": self.status,
            "metrics": self.metrics,
            "artifacts": self.artifacts,
            "details_file": self.details_file,
            "warnings": list(self.warnings),
            "error": self.error,
            "wall_s": self.wall_s,
            "key": self.key,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Row:
        return cls(
            data["source"],
            data.get("consumer"),
            data.get("component"),
            data.get("point") or {},
            int(data.get("point_index", 0)),
            data.get("algorithm"),
            data["status"],
            dict(data.get("metrics") or {}),
            dict(data.get("artifacts") or {}),
            data.get("details_file"),
            tuple(data.get("warnings") or ()),
            data.get("error"),
            float(data.get("wall_s") or 0.0),
            str(data.get("key") or ""),
        )


def build_row(
    slot: RowSlot,
    algorithm: dict[str, Any] | None,
    *,
    error: str | None = None,
    metrics: dict[str, Any] | None = None,
    artifacts: dict[str, str] | None = None,
    details_file: str | None = None,
    warnings: Any = (),
    wall_s: float = 0.0,
) -> dict[str, Any]:
    """The row of ``slot`` as a plain dict: ``status`` is ``failed`` exactly when ``error`` is given."""
    return Row(
        slot.source,
        slot.consumer,
        slot.component,
        slot.point,
        slot.point_index,
        algorithm,
        "ok" if error is None else "failed",
        dict(metrics or {}),
        dict(artifacts or {}),
        details_file,
        tuple(str(w) for w in warnings),
        error,
        round(float(wall_s), 6),
        slot.key,
    ).as_dict()
