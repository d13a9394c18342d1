"""Numbers checked where they enter: the rules every component's params pass, once.

A params model states types and bounds of its own; these rules hold for every model, core or
plugin, so that no value the code cannot represent or the physics does not allow reaches a
component (``--set``, a pipeline file, the Python API). They are applied by the plugin manager
(a :class:`~hub.errors.UsageError`, exit 2) and by ``pipeline validate`` (an issue, exit 3):

==============================  =======================================================
value                           rule
==============================  =======================================================
a boolean for a number field    refused: ``ranks: true`` is not 1 (pydantic's lax mode
                                would read it as 1)
an integer                      within int64, -2^63..2^63-1 (a 31-digit count is not a
                                count; C code and numpy arrays hold int64)
a float                         finite (``1e400`` reads as inf)
a size field (``size``,         the size grammar, :func:`hub.parse_size`: 0..1 TiB
``*_size``, ``*_bytes``, ...)
==============================  =======================================================
"""

from __future__ import annotations

import math
import types
import typing
from collections.abc import Iterator, Mapping
from typing import Any

from .._units import SIZE_NAMES

__all__ = ["NumberProblem", "number_problems"]

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
#: Field names whose values are byte counts (what ``hub.parse_size`` reads).
_SIZE_NAMES = frozenset({*SIZE_NAMES, "sizes"})  # a params field may hold a list of sizes


class NumberProblem(typing.NamedTuple):
    """One refused value: the field's path (``("size",)``, ``("size", 2)``), message and hint."""

    loc: tuple[str | int, ...]
    message: str
    hint: str


def _leaves(annotation: Any) -> Iterator[Any]:
    """The leaf types of an annotation (``int | list[str] | None`` gives int, str, NoneType)."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            yield from _leaves(arg)
    elif origin in (list, tuple, set, frozenset):
        for arg in typing.get_args(annotation):
            if arg is not Ellipsis:
                yield from _leaves(arg)
    elif origin is typing.Annotated:
        yield from _leaves(typing.get_args(annotation)[0])
    else:
        yield annotation


def _numeric_not_bool(annotation: Any) -> str | None:
    """ "an integer" / "a number" when the field takes numbers but not booleans, else None."""
    leaves = set(_leaves(annotation))
    if bool in leaves or Any in leaves:
        return None
    if int in leaves:
        return "an integer"
    if float in leaves:
        return "a number"
    return None


def _items(value: Any, loc: tuple[str | int, ...]) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    """``value`` itself, or the items of a list/tuple value, with their paths."""
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield loc + (i,), item
    else:
        yield loc, value


def _is_size_name(name: str) -> bool:
    low = name.lower()
    return low in _SIZE_NAMES or low.endswith(("_size", "_bytes"))


def _size_problem(value: Any) -> str | None:
    from .._units import parse_size
    from ..errors import UsageError

    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    if isinstance(value, str) and not value.strip()[:1].isdigit():
        return None  # a word (a component may take "auto"): the model decides
    try:
        parse_size(value)
    except UsageError as exc:
        return exc.message
    return None


def number_problems(model_cls: Any, raw: Mapping[str, Any] | None, validated: Any) -> list[NumberProblem]:
    """Every value of ``raw`` (what was given) and ``validated`` (the model built from it) that
    breaks a rule of the module docstring."""
    problems: list[NumberProblem] = []
    fields = getattr(model_cls, "model_fields", {}) or {}
    raw = raw if isinstance(raw, Mapping) else {}
    for name, field in fields.items():
        key = field.alias or name
        want = _numeric_not_bool(field.annotation)
        if want is not None and key in raw:
            for loc, item in _items(raw[key], (name,)):
                if isinstance(item, bool):
                    problems.append(
                        NumberProblem(loc, f"expects {want}, got the boolean {str(item).lower()}", f"give {want}")
                    )
        if problems and problems[-1].loc[0] == name:
            continue
        value = getattr(validated, name, None)
        for loc, item in _items(value, (name,)):
            if isinstance(item, bool):
                continue
            if isinstance(item, int) and not INT64_MIN <= item <= INT64_MAX:
                text = str(item) if len(str(item)) <= 24 else f"{str(item)[:21]}..."
                problems.append(NumberProblem(loc, f"{text} is out of range", f"integers are {INT64_MIN}..{INT64_MAX}"))
            elif isinstance(item, float) and not math.isfinite(item):
                problems.append(NumberProblem(loc, f"{item} is not a finite number", "give a finite number"))
            elif _is_size_name(name) and (message := _size_problem(item)) is not None:
                from .._units import SIZE_GRAMMAR

                problems.append(NumberProblem(loc, message, f"give {SIZE_GRAMMAR}"))
    return problems
