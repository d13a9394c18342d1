"""The verification report and a capped problem collector."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..errors import Problem, UsageError

__all__ = ["LEVELS", "ProblemSink", "VerificationReport", "parse_level"]

T = TypeVar("T")

#: Verification levels, weakest first; each level includes the ones before it.
LEVELS: tuple[str, ...] = ("structure", "progress", "semantics")

#: Problems kept per report; the rest are only counted (a broken 1024-rank algorithm can have
#: millions of findings, and nobody reads past the first few dozen).
DEFAULT_MAX_PROBLEMS = 50


def parse_level(level: str) -> int:
    """Index of ``level`` in :data:`LEVELS`, or a :class:`UsageError` naming the valid ones."""
    try:
        return LEVELS.index(str(level).strip().lower())
    except ValueError:
        raise UsageError(f"unknown verification level {level!r}", hint="one of: " + ", ".join(LEVELS)) from None


class ProblemSink:
    """Collects problems of one level, keeping the first ``limit`` and counting the rest."""

    def __init__(self, level: str, limit: int = DEFAULT_MAX_PROBLEMS) -> None:
        self.level = level
        self.limit = limit
        self.kept: list[Problem] = []
        self.total = 0

    def add(self, message: str, rank: int | None = None, node: int | None = None) -> None:
        self.total += 1
        if len(self.kept) < self.limit:
            self.kept.append(Problem(self.level, message, rank, node))

    def add_each(self, items: Iterable[T], describe: Callable[[T], tuple[str, int | None, int | None]]) -> None:
        """Add one problem per item; ``describe`` (message, rank, node) runs only for the items
        that will be kept, so a million bad nodes cost a count, not a million messages."""
        for item in items:
            if self.full:
                self.total += 1
            else:
                self.add(*describe(item))

    def merged(self, other: ProblemSink) -> ProblemSink:
        """This sink's problems, then ``other``'s, within this sink's limit."""
        out = ProblemSink(self.level, self.limit)
        out.kept = (self.kept + other.kept)[: self.limit]
        out.total = self.total + other.total
        return out

    @property
    def full(self) -> bool:
        """True once nothing more would be kept (callers may stop searching for more)."""
        return len(self.kept) >= self.limit

    def __bool__(self) -> bool:
        return self.total > 0


@dataclass
class VerificationReport:
    """What :func:`hub.verify.verify` found.

    ``problems`` holds the first findings (at most ``max_problems``, default 50) of the first
    level that failed; ``problem_count`` counts all of them. ``levels_checked`` lists the levels
    that ran to completion or failed; a level after a failed one is not run, because its
    premises (valid dependencies, matched messages, progress) do not hold. ``not_checked`` maps
    each requested level that could not be checked to the reason (``{"semantics": "collective
    is CUSTOM ..."}``): such a report can be ``ok`` without proving what was asked, and says so in
    :meth:`summary`. ``notes`` explains further limits (e.g. assumptions that were made).
    """

    algorithm: str
    level: str
    levels_checked: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    problem_count: int = 0
    notes: list[str] = field(default_factory=list)
    not_checked: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.problem_count == 0

    @property
    def complete(self) -> bool:
        """True when every requested level was checked and passed."""
        return self.ok and not self.not_checked

    def checked_text(self) -> str:
        """``structure, progress, semantics`` or ``structure, progress; semantics not checked: <reason>``."""
        text = ", ".join(self.levels_checked)
        for lvl, why in self.not_checked.items():
            text += f"; {lvl} not checked: {why}"
        return text

    @property
    def failed_level(self) -> str | None:
        """The level whose problems are listed, or None when everything passed."""
        return self.problems[0].level if self.problems else None

    def summary(self) -> str:
        """One line: ``ok (structure, progress, semantics)``, ``ok (structure, progress; semantics
        not checked: <reason>)`` or the first problem and a count."""
        if self.ok:
            return f"{self.algorithm or 'algorithm'}: ok ({self.checked_text()})"
        first = str(self.problems[0])
        more = self.problem_count - 1
        tail = f" (and {more} more problem{'s' if more != 1 else ''})" if more else ""
        return f"{self.algorithm or 'algorithm'}: {first}{tail}"

    def __str__(self) -> str:
        return self.summary()

    def to_dict(self) -> dict[str, Any]:
        return {
            "algorithm": self.algorithm,
            "level": self.level,
            "ok": self.ok,
            "levels_checked": list(self.levels_checked),
            "not_checked": dict(self.not_checked),
            "problem_count": self.problem_count,
            "problems": [
                {"level": p.level, "rank": p.rank, "node": p.node, "origin": p.origin, "message": p.message}
                for p in self.problems
            ],
            "truncated": max(0, self.problem_count - len(self.problems)),
            "notes": list(self.notes),
        }
