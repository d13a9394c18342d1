"""Plugin contract: descriptors, hook specifications and the plugin manager."""

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
    "PLUGIN_API_VERSION",
    "ComponentSpec",
    "ConsumerSpec",
    "EmptyParams",
    "ProducerSpec",
    "RunContext",
    "TransformSpec",
    "hookimpl",
    "hookspec",
    "resolve_ref",
]
