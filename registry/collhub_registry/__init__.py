"""collhub-registry: the plugin registry service (static site builder and read-only server).

A separate distribution so that users who only install plugins never install a web server.
It adds ``collhub registry build|serve|check`` through the ``collhub_commands`` hook, the same
mechanism any third-party plugin uses (see :mod:`collhub_registry.plugin`). The index models
and the wheel reader it builds on are shared with the client and live in :mod:`hub.registry`.

Names are resolved lazily (PEP 562): every ``collhub`` command loads the entry point
``collhub_registry.plugin``, which imports this package, and must not pay for the builder
(packaging, the index models, httpx through :mod:`hub.registry`) or the server.
"""

from __future__ import annotations

import typing as _typing
from importlib import import_module as _import_module

#: public name -> the private module defining it
_LAZY: dict[str, str] = {
    "BuildReport": "._builder",
    "build_site": "._builder",
    "RegistryServer": "._server",
    "make_server": "._server",
}

__all__ = ["BuildReport", "RegistryServer", "build_site", "make_server"]


def __getattr__(name: str) -> _typing.Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_import_module(module, __name__), name)
    globals()[name] = value  # resolved once
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])


if _typing.TYPE_CHECKING:
    from ._builder import BuildReport, build_site
    from ._server import RegistryServer, make_server
