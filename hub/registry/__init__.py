"""The plugin registry, as a user who installs plugins needs it: the index format and the client.

Shared by both sides: the pydantic models of the index documents (``docs/spec/registry.md``)
and the wheel/manifest reader (``collhub plugins check WHEEL`` and the site builder must agree
on what a valid plugin wheel is). The site builder and the server are the separate
distribution ``collhub-registry`` (``registry/`` in the repository), which adds
``collhub registry build|serve|check`` through the ``collhub_commands`` hook.
"""

from .._names import normalize_name
from ._client import InstallPlan, RegistryClient, default_registry_url, prune_unknown, uninstall
from ._models import (
    API_VERSION,
    ComponentEntry,
    ComponentsDoc,
    ErrorEntry,
    ErrorsDoc,
    FileEntry,
    IndexDoc,
    Manifest,
    ManifestComponent,
    Meta,
    PluginDoc,
    PluginSummary,
    VersionEntry,
    valid_filename,
    valid_name,
)
from ._wheel import MANIFEST_GROUP, WheelInfo, read_manifest_text, read_wheel

__all__ = [
    "API_VERSION",
    "MANIFEST_GROUP",
    "ComponentEntry",
    "ComponentsDoc",
    "ErrorEntry",
    "ErrorsDoc",
    "FileEntry",
    "IndexDoc",
    "InstallPlan",
    "Manifest",
    "ManifestComponent",
    "Meta",
    "PluginDoc",
    "PluginSummary",
    "RegistryClient",
    "VersionEntry",
    "WheelInfo",
    "default_registry_url",
    "normalize_name",
    "prune_unknown",
    "read_manifest_text",
    "read_wheel",
    "uninstall",
    "valid_filename",
    "valid_name",
]
