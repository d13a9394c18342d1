"""Sweep points and ``${var}`` interpolation.

A point is one combination of matrix values (cartesian product, in the key order of the file,
last key varying fastest) merged over ``vars``. Interpolation rules:

* a string that is exactly ``${name}`` becomes the variable's value with its type
  (``ranks: "${ranks}"`` gives the integer 8);
* ``${name}`` inside a longer string is replaced by the value formatted as text
  (``"ring:${ranks}"`` gives ``"ring:8"``);
* ``${name.key}`` reads a key of a mapping value (matrix entries may be mappings, to sweep
  values that belong together, e.g. ``shape: [{ranks: 8, groups: 2}, {ranks: 16, groups: 4}]``);
* ``$${`` writes a literal ``${``.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Point", "UnknownVariable", "count_points", "expand", "interpolate", "references", "resolvable"]

_REF = re.compile(r"\$(\$?)\{([^}]*)\}")
_WHOLE = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*)\}$")


class UnknownVariable(KeyError):
    """A ``${name}`` that neither ``vars`` nor ``matrix`` defines (``.name``, ``.path``)."""

    def __init__(self, name: str, path: tuple[Any, ...]) -> None:
        super().__init__(name)
        self.name = name
        self.path = path


@dataclass(frozen=True)
class Point:
    """One sweep point: its index and the matrix values that define it."""

    index: int
    values: tuple[tuple[str, Any], ...]

    def as_dict(self) -> dict[str, Any]:
        return dict(self.values)

    @property
    def label(self) -> str:
        """``size=1MiB, network=ring:8`` (empty matrix: ``-``)."""
        return ", ".join(f"{k}={_text(v)}" for k, v in self.values) or "-"

    @property
    def slug(self) -> str:
        """A directory-safe name: ``003-size-1MiB_network-ring-8``."""
        body = "_".join(f"{k}-{_text(v)}" for k, v in self.values)
        body = re.sub(r"[^A-Za-z0-9_.-]+", "-", body).strip("-")[:80]
        return f"{self.index:03d}" + (f"-{body}" if body else "")


def resolvable(env: Mapping[str, Any], ref: str) -> bool:
    """Whether reference ``name`` / ``name.key...`` has a value in ``env``."""
    return _lookup(env, ref) is not _MISSING


def _text(value: Any) -> str:
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return str(value)


def count_points(matrix: Mapping[str, Collection[Any]]) -> int:
    """How many points ``matrix`` has, without expanding it."""
    return math.prod(len(v) for v in matrix.values())


def expand(matrix: Mapping[str, Collection[Any]], limit: int | None = None) -> list[Point]:
    """All points of ``matrix`` (one empty point when there is no matrix).

    With ``limit``, a matrix of more points raises ``ValueError`` before anything is built.
    """
    if limit is not None and count_points(matrix) > limit:
        raise ValueError(f"the matrix has {count_points(matrix)} points, more than {limit}")
    keys = list(matrix)
    combos = itertools.product(*(matrix[k] for k in keys))
    return [Point(i, tuple(zip(keys, combo, strict=False))) for i, combo in enumerate(combos)]


_MISSING = object()


def _lookup(env: Mapping[str, Any], ref: str) -> Any:
    """The value of ``name`` or ``name.key.key`` in ``env``, or ``_MISSING``."""
    name, *keys = ref.split(".")
    value = env.get(name, _MISSING)
    for key in keys:
        if not isinstance(value, Mapping) or key not in value:
            return _MISSING
        value = value[key]
    return value


def references(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[str, tuple[Any, ...]]]:
    """Every ``(reference, YAML path)`` in ``value``; a reference is ``name`` or ``name.key...``."""
    if isinstance(value, str):
        for m in _REF.finditer(value):
            if not m.group(1):
                yield m.group(2), path
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from references(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from references(v, path + (i,))


def interpolate(value: Any, env: Mapping[str, Any], path: tuple[Any, ...] = (), *, strict: bool = True) -> Any:
    """Replace ``${name}`` references in ``value`` (recursively) using ``env``.

    An unknown name raises :class:`UnknownVariable`, or with ``strict=False`` stays as written
    (validation uses that to check the rest of a step's params).
    """
    if isinstance(value, str):
        whole = _WHOLE.match(value)
        if whole:
            found = _lookup(env, whole.group(1))
            if found is _MISSING:
                if not strict:
                    return value
                raise UnknownVariable(whole.group(1), path)
            return found

        def sub(m: re.Match[str]) -> str:
            if m.group(1):  # $${...} escapes
                return "${" + m.group(2) + "}"
            found = _lookup(env, m.group(2))
            if found is _MISSING:
                if not strict:
                    return m.group(0)
                raise UnknownVariable(m.group(2), path)
            return _text(found)

        return _REF.sub(sub, value)
    if isinstance(value, Mapping):
        return {k: interpolate(v, env, path + (k,), strict=strict) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, env, path + (i,), strict=strict) for i, v in enumerate(value)]
    return value
