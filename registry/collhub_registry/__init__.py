"""collhub-registry: the plugin registry service (static site builder and read-only server).

A separate distribution so that users who only install plugins never install a web server.
It adds ``collhub registry build|serve|check`` through the ``collhub_commands`` hook, the same
mechanism any third-party plugin uses (see :mod:`collhub_registry.plugin`). The index models
and the wheel reader it builds on are shared with the client and live in :mod:`hub.registry`.

Names are resolved on first use (PEP 562, as ``docs/plugins.md`` asks of plugins): every
``collhub`` command loads the entry point ``collhub_registry.plugin``, which imports this
package, and must not pay for the builder (packaging, the index models) or the server.
"""

from __future__ import annotations

import typing as _typing

from hub.plugins import lazy_namespace as _lazy_namespace

__all__, __getattr__, __dir__ = _lazy_namespace(
    __name__,
    {
        "BuildReport": "._builder",
        "build_site": "._builder",
        "RegistryServer": "._server",
        "make_server": "._server",
    },
    globals(),
)

if _typing.TYPE_CHECKING:  # for type checkers; at run time __getattr__ imports on first use
    from ._builder import BuildReport as BuildReport, build_site as build_site
    from ._server import RegistryServer as RegistryServer, make_server as make_server
