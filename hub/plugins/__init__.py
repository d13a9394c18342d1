"""Plugin contract: descriptors, hook specifications and the plugin manager.

Plugins import from here only::

    from hub.plugins import ProducerSpec, hookimpl

Names resolve on first use (PEP 562): a plugin's registration imports the descriptors and pluggy's
marker, not the manager, and ``collhub --help`` reads the entry-point index (``._index``) without
importing pluggy or pydantic.
"""

from __future__ import annotations

import typing as _typing

from .._lazy import lazy_exports as _lazy_exports

#: public name -> the private module defining it
_LAZY: dict[str, str] = {
    "PluginTimeout": "._guard",
    "lazy_namespace": "hub._lazy",
    "ENTRY_POINT_GROUP": "._loader",
    "BrokenPlugin": "._loader",
    "PluginApiWarning": "._loader",
    "PluginInfo": "._manager",
    "PluginManager": "._manager",
    "create_manager": "._manager",
    "get_manager": "._manager",
    "manager_for": "._manager",
    "PLUGIN_API_VERSION": "._spec",
    "ComponentSpec": "._spec",
    "ConsumerSpec": "._spec",
    "EmptyParams": "._spec",
    "ProducerSpec": "._spec",
    "RunContext": "._spec",
    "TransformSpec": "._spec",
    "resolve_ref": "._spec",
    "hookimpl": ".hookspecs",
    "hookspec": ".hookspecs",
}

if _typing.TYPE_CHECKING:  # for type checkers; at run time __getattr__ imports on first use
    from .._lazy import lazy_namespace
    from ._guard import PluginTimeout
    from ._loader import ENTRY_POINT_GROUP, BrokenPlugin, PluginApiWarning
    from ._manager import PluginInfo, PluginManager, create_manager, get_manager, manager_for
    from ._spec import (
        PLUGIN_API_VERSION,
        ComponentSpec,
        ConsumerSpec,
        EmptyParams,
        ProducerSpec,
        RunContext,
        TransformSpec,
        resolve_ref,
    )
    from .hookspecs import hookimpl, hookspec

__all__ = [
    "ENTRY_POINT_GROUP",
    "PLUGIN_API_VERSION",
    "BrokenPlugin",
    "ComponentSpec",
    "ConsumerSpec",
    "EmptyParams",
    "PluginApiWarning",
    "PluginInfo",
    "PluginManager",
    "PluginTimeout",
    "ProducerSpec",
    "RunContext",
    "TransformSpec",
    "create_manager",
    "get_manager",
    "hookimpl",
    "hookspec",
    "lazy_namespace",
    "manager_for",
    "resolve_ref",
]


__getattr__, __dir__ = _lazy_exports(__name__, _LAZY, globals())
