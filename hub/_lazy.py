"""Package namespaces whose public names are imported on first use (PEP 562).

``hub`` itself, ``hub.chakra``, ``hub.sim``, ``hub.workload``, ``hub.topology``, ``hub.pipeline``
and ``hub.plugins`` list their public names in a table ``name -> submodule`` (relative, or absolute
for names defined elsewhere) and import a submodule only when one of its names is
first looked up, so ``import hub.sim`` does not pay for the workload layer or the plot writers a
command never uses. Type checkers see the names through each package's ``TYPE_CHECKING`` imports.

Usage, at the end of a package ``__init__``::

    __getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any

__all__ = ["lazy_exports", "lazy_namespace"]


def _resolver(package: str, table: Mapping[str, str], namespace: dict[str, Any]) -> Callable[[str], Any]:
    """A module-level ``__getattr__``: a name in ``table`` is imported from its submodule (relative
    to ``package``, or absolute) on first use and kept in ``namespace``."""

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module, package), name)
        namespace[name] = value  # resolved once: later lookups never reach __getattr__
        return value

    return __getattr__


def lazy_exports(
    package: str, table: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The package's module-level ``__getattr__`` and ``__dir__`` (hub's own packages, whose
    ``__all__`` is written out for the type checkers)."""

    def __dir__() -> list[str]:
        return sorted([*namespace, *namespace.get("__all__", ())])

    return _resolver(package, table, namespace), __dir__


def lazy_namespace(
    package: str, names: dict[str, str], namespace: dict[str, Any]
) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """``__all__``, ``__getattr__`` and ``__dir__`` for a plugin package whose public names live in
    private submodules, imported on first use (public as :func:`hub.plugins.lazy_namespace`, so
    registering a plugin imports no heavy code).

    ``names`` maps a public name to its (relative) module; ``namespace`` is the package's
    ``globals()``, where resolved names are cached. Usage in ``mypkg/__init__.py``::

        from hub.plugins import lazy_namespace
        __all__, __getattr__, __dir__ = lazy_namespace(__name__, {"read": "._reader"}, globals())
    """
    public = sorted(names)

    def __dir__() -> list[str]:
        return public

    return public, _resolver(package, names, namespace), __dir__
