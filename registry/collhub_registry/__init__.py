"""collhub-registry: the plugin registry service (static site builder and read-only server).

A separate distribution so that users who only install plugins never install a web server.
It adds ``collhub registry build|serve|check`` through the ``collhub_commands`` hook, the same
mechanism any third-party plugin uses (see :mod:`collhub_registry.plugin`). The index models
and the wheel reader it builds on are shared with the client and live in :mod:`hub.registry`.
"""

from ._builder import BuildReport, build_site
from ._server import RegistryServer, make_server

__all__ = ["BuildReport", "RegistryServer", "build_site", "make_server"]
