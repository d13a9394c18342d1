"""Lazy package namespaces for plugins (PEP 562), so registering a plugin imports no heavy code."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Any

__all__ = ["lazy_namespace"]


def lazy_namespace(
    package: str, names: dict[str, str], namespace: dict[str, Any]
) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """``__all__``, ``__getattr__`` and ``__dir__`` for a package whose public names live in
    private submodules, imported on first use.

    ``names`` maps a public name to its (relative) module; ``namespace`` is the package's
    ``globals()``, where resolved names are cached. Usage in ``mypkg/__init__.py``::

        from hub.plugins import lazy_namespace
        __all__, __getattr__, __dir__ = lazy_namespace(__name__, {"read": "._reader"}, globals())
    """
    public = sorted(names)

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module, package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return public

    return public, __getattr__, __dir__
