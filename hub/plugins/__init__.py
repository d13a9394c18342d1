"""Plugin contract: descriptors, hook specifications and the plugin manager.

Plugins import from here only::

    from hub.plugins import ProducerSpec, hookimpl
"""

from ._guard import PluginTimeout
from ._lazy import lazy_namespace
from ._loader import ENTRY_POINT_GROUP, BrokenPlugin, PluginApiWarning
from ._manager import PluginInfo, PluginManager, create_manager, get_manager
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
    "resolve_ref",
]
