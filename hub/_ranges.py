"""nccl-tests-style ranges: ``{from: 1KiB, to: 1GiB, factor: 2}`` and ``{from: 8, to: 64, step: 8}``.

A matrix variable (and the CLI's ``-b/-e/-f/-i``) may give a range instead of a list. Geometric
ranges multiply by an integer ``factor`` > 1 and linear ones add ``step`` > 0, from ``from`` while
the value stays <= ``to``, as nccl-tests' size loop does (``to`` is included when it is reached).

A range is a *size* range when the variable has a size name (``size``, ``bytes``, ...) or ``from``
or ``to`` carries a unit; its bounds and step go through the one size grammar
(:func:`hub.parse_size`) and its values are written back as exact size strings (``64KiB``,
``1MB``, ``1536B``), so results, plots and reports read them as bytes. Otherwise the values are
plain integers (``ranks: {from: 2, to: 64, factor: 2}``).

The number of values is computed from the bounds before any list is built, so a range of a
trillion points is refused by the point limit instead of filling memory.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._units import SIZE_GRAMMAR, SIZE_NAMES, format_size, parse_size
from .errors import UsageError

__all__ = [
    "RANGE_KEYS",
    "RangeIssue",
    "is_range",
    "range_count",
    "range_issues",
    "range_values",
]

#: The keys a range mapping may have.
RANGE_KEYS = ("from", "to", "factor", "step")


@dataclass(frozen=True)
class RangeIssue:
    """A problem with a range: the key it is at (None: the range as a whole), a message, a hint."""

    key: str | None
    message: str
    hint: str | None = None


@dataclass(frozen=True)
class _Range:
    start: int
    stop: int
    factor: int | None
    step: int | None
    sized: bool


def is_range(value: Any) -> bool:
    """Whether a matrix value is a range mapping (rather than a list of values)."""
    return isinstance(value, Mapping)


def _sized(name: str, spec: Mapping[str, Any]) -> bool:
    if name.lower() in SIZE_NAMES:
        return True
    return any(isinstance(spec.get(k), str) for k in ("from", "to"))


def _integer(value: Any, key: str, sized: bool) -> tuple[int | None, RangeIssue | None]:
    """``value`` as an integer (bytes for a size range), or the issue that says why not."""
    if sized:
        try:
            return parse_size(value), None
        except UsageError as exc:
            return None, RangeIssue(key, f"{key}: {exc.message}", exc.hint or f"give {SIZE_GRAMMAR}")
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or (isinstance(value, float) and not value.is_integer())
    ):
        return None, RangeIssue(
            key,
            f"{key}: {value!r} is not an integer",
            "ranges of plain numbers take integers (name the variable size for bytes)",
        )
    return int(value), None


def _parse(name: str, spec: Mapping[str, Any]) -> tuple[_Range | None, list[RangeIssue]]:
    issues: list[RangeIssue] = []
    unknown = [k for k in spec if k not in RANGE_KEYS]
    for k in unknown:
        issues.append(
            RangeIssue(
                str(k),
                f"unknown key {k!r} in the range of {name}",
                "a range has from, to and one of factor (geometric) or step (linear)",
            )
        )
    for k in ("from", "to"):
        if k not in spec:
            issues.append(
                RangeIssue(
                    None, f"the range of {name} has no {k!r}", f"write e.g. {name}: {{from: 1KiB, to: 1GiB, factor: 2}}"
                )
            )
    has_factor, has_step = "factor" in spec, "step" in spec
    if has_factor == has_step:
        issues.append(
            RangeIssue(
                None,
                f"the range of {name} needs exactly one of 'factor' or 'step'"
                + (" (it has both)" if has_factor else ""),
                "factor: multiply (nccl-tests -f); step: add (nccl-tests -i)",
            )
        )
    if issues:
        return None, issues
    sized = _sized(name, spec)
    start, bad_start = _integer(spec["from"], "from", sized)
    stop, bad_stop = _integer(spec["to"], "to", sized)
    factor = step = None
    found = [i for i in (bad_start, bad_stop) if i is not None]
    if has_factor:
        raw = spec["factor"]
        if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not float(raw).is_integer() or raw <= 1:
            found.append(
                RangeIssue(
                    "factor",
                    f"factor must be an integer > 1, got {raw!r}",
                    "nccl-tests multiplies by an integer factor (-f 2; collhub consume: --factor 2)",
                )
            )
        else:
            factor = int(raw)
        if start is not None and start < 1:
            found.append(
                RangeIssue(
                    "from",
                    f"a geometric range starts above 0, got from={spec['from']!r}",
                    "start at 1 byte or more, or use step: for a linear range",
                )
            )
    else:
        step, bad_step = _integer(spec["step"], "step", sized)
        if bad_step is not None:
            found.append(bad_step)
        elif step is not None and step <= 0:
            found.append(RangeIssue("step", f"step must be > 0, got {spec['step']!r}"))
    if start is not None and stop is not None and start > stop:
        found.append(
            RangeIssue("from", f"from ({spec['from']}) is greater than to ({spec['to']})", "swap them: ranges go up")
        )
    if found or start is None or stop is None:
        return None, found
    return _Range(start, stop, factor, step, sized), []


def _count(r: _Range) -> int:
    if r.step is not None:
        return (r.stop - r.start) // r.step + 1
    n, v = 0, r.start
    assert r.factor is not None
    while v <= r.stop:  # at most log2(stop) rounds: the factor is >= 2
        n, v = n + 1, v * r.factor
    return n


def range_issues(name: str, spec: Mapping[str, Any], limit: int | None = None) -> list[RangeIssue]:
    """Everything wrong with range ``spec`` of variable ``name`` (empty when it is usable),
    including more values than ``limit``."""
    r, issues = _parse(name, spec)
    if r is None:
        return issues
    n = _count(r)
    if limit is not None and n > limit:
        return [
            RangeIssue(
                None,
                f"the range of {name} has {n} values, more than the limit of {limit}",
                "use a larger factor/step or a narrower from..to",
            )
        ]
    return []


def range_count(name: str, spec: Mapping[str, Any]) -> int:
    """How many values range ``spec`` has, without listing them (raises UsageError when it is bad)."""
    r, issues = _parse(name, spec)
    if r is None:
        raise UsageError(issues[0].message, hint=issues[0].hint)
    return _count(r)


def range_values(name: str, spec: Mapping[str, Any], limit: int | None = None) -> list[Any]:
    """The values of range ``spec`` in increasing order: exact size strings for a size range,
    integers otherwise. Raises :class:`~hub.errors.UsageError` for a bad range or one with
    more than ``limit`` values (checked before the list is built)."""
    r, issues = _parse(name, spec)
    if r is None:
        raise UsageError(issues[0].message, hint=issues[0].hint)
    n = _count(r)
    if limit is not None and n > limit:
        raise UsageError(
            f"the range of {name} has {n} values, more than the limit of {limit}",
            hint="use a larger factor/step or a narrower from..to",
        )
    out: list[int] = []
    v = r.start
    while v <= r.stop:
        out.append(v)
        v = v + r.step if r.step is not None else v * r.factor  # type: ignore[operator]
    return [format_size(v) for v in out] if r.sized else out
