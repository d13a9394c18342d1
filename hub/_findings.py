"""The findings carried by :class:`hub.errors.VerificationError` and :class:`hub.errors.PipelineValidationError`.

Public as ``hub.errors.Problem`` and ``hub.errors.Issue`` (their ``__module__``, for help, docs and
pickle); defined here so that importing :mod:`hub.errors`, which every command does, does not
create the two dataclasses (see ``hub.errors.__getattr__``).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Issue", "Problem"]


@dataclass(frozen=True)
class Problem:
    """One verification finding, located by rank and node id."""

    level: str  # "structure" | "progress" | "semantics"
    message: str
    rank: int | None = None
    node: int | None = None
    origin: str | None = None  # in the producer's terms, e.g. "gpu 0 tb 0 step 5 (re)"

    def __str__(self) -> str:
        where = []
        if self.rank is not None:
            where.append(f"rank {self.rank}")
        if self.node is not None:
            where.append(f"node {self.node}" + (f" ({self.origin})" if self.origin else ""))
        elif self.origin:
            where.append(self.origin)
        prefix = f"[{self.level}] " + (", ".join(where) + ": " if where else "")
        return prefix + self.message


@dataclass(frozen=True)
class Issue:
    """One pipeline-validation finding with its location in the file."""

    message: str
    path: str = ""  # YAML path such as "sources.ring.params.ranks"
    file: str | None = None
    line: int | None = None
    column: int | None = None
    hint: str | None = None

    def __str__(self) -> str:
        loc = self.file or "<pipeline>"
        if self.line is not None:
            loc += f":{self.line}"
            if self.column is not None:
                loc += f":{self.column}"
        text = f"{loc}: {self.path + ': ' if self.path else ''}{self.message}"
        if self.hint:
            text += f" (hint: {self.hint})"
        return text


for _cls in (Problem, Issue):
    _cls.__module__ = "hub.errors"

del _cls
