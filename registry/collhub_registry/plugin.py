"""pluggy registration of ``collhub-registry`` (entry point ``collhub: registry``).

It registers no components, only the ``collhub registry`` command group. The group's module
is imported when the hook is called (listing plugin commands), not when the plugin loads, so
``collhub run`` never imports Typer apps it does not use.
"""

from __future__ import annotations

from typing import Any

from hub.plugins import hookimpl

__all__ = ["COLLHUB_PLUGIN_API", "collhub_commands"]

COLLHUB_PLUGIN_API = "1.0"


@hookimpl
def collhub_commands() -> list[tuple[str, Any]]:
    from ._cli import app

    return [("registry", app)]
