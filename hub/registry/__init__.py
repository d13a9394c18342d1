"""The plugin registry: index format (shared models), site builder, read-only server and client."""

from ._builder import BuildReport, build_site
from ._client import InstallPlan, RegistryClient, default_registry_url, prune_unknown, uninstall
from ._models import (
    API_VERSION,
    ComponentEntry,
    ComponentsDoc,
    ErrorsDoc,
    FileEntry,
    IndexDoc,
    Manifest,
    ManifestComponent,
    PluginDoc,
    PluginSummary,
    VersionEntry,
    normalize_name,
)
from ._server import RegistryServer, make_server
from ._wheel import MANIFEST_GROUP, WheelInfo, read_manifest_text, read_wheel

__all__ = [
    "API_VERSION",
    "MANIFEST_GROUP",
    "BuildReport",
    "ComponentEntry",
    "ComponentsDoc",
    "ErrorsDoc",
    "FileEntry",
    "IndexDoc",
    "InstallPlan",
    "Manifest",
    "ManifestComponent",
    "PluginDoc",
    "PluginSummary",
    "RegistryClient",
    "RegistryServer",
    "VersionEntry",
    "WheelInfo",
    "build_site",
    "default_registry_url",
    "make_server",
    "normalize_name",
    "prune_unknown",
    "read_manifest_text",
    "read_wheel",
    "uninstall",
]
