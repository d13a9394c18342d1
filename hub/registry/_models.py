"""The registry's documents, as pydantic models shared by the builder, the server and the client.

Format rules (PEP 691 style, see ``docs/spec/registry.md``): every document is a top-level
object with ``meta.api-version`` ("major.minor"); clients refuse a newer major, warn on a newer
minor and ignore unknown keys. The *builder* validates strictly (``extra="forbid"``); the
*client* parses leniently (unknown keys ignored) so newer minor versions keep working.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from .._names import normalize_name

__all__ = [
    "API_VERSION",
    "ComponentEntry",
    "ComponentsDoc",
    "ErrorEntry",
    "ErrorsDoc",
    "FileEntry",
    "IndexDoc",
    "Manifest",
    "ManifestComponent",
    "Meta",
    "PluginDoc",
    "PluginSummary",
    "VersionEntry",
    "normalize_name",
    "valid_filename",
    "valid_name",
]

#: Version of the index format this code writes and reads.
API_VERSION = "1.0"

_NAME_RE = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]{0,98}[A-Za-z0-9])?$")
_FILENAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,200}\.whl$")

Kind = Literal["producer", "transform", "consumer"]
Lifecycle = Literal["active", "beta", "deprecated", "inactive"]


def valid_name(name: str) -> bool:
    """A distribution name that is safe to use in URLs and file names (no traversal, no odd chars)."""
    return bool(_NAME_RE.match(name)) and ".." not in name


def valid_filename(filename: str) -> bool:
    return bool(_FILENAME_RE.match(filename)) and ".." not in filename and "/" not in filename


def _check_specifier(value: str) -> str:
    # parsed here, by the builder and the client alike, so a bad string is a format error of
    # the document that holds it rather than an InvalidSpecifier deep inside resolution
    try:
        SpecifierSet(value)
    except InvalidSpecifier:
        raise ValueError(f"{value!r} is not a PEP 440 version specifier (e.g. '>=0.1,<2')") from None
    return value


#: A PEP 440 specifier set such as ``>=0.1,<2`` ("" = any version).
SpecifierText = Annotated[str, Field(max_length=1000), AfterValidator(_check_specifier)]
#: A "major.minor" API version.
ApiVersionText = Annotated[str, Field(pattern=r"^\d{1,6}\.\d{1,6}$")]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


class Meta(_Strict):
    api_version: ApiVersionText = Field(API_VERSION, alias="api-version")
    generated_at: str | None = Field(None, alias="generated-at")


class ManifestParam(_Strict):
    """One parameter of a component, as the manifest declares it for the registry's pages."""

    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    type: str = ""
    default: str | int | float | bool | None = None
    required: bool = False
    description: str = ""


class ManifestComponent(_Strict):
    """One component as a plugin declares it statically (no plugin code is run to read it)."""

    kind: Kind
    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    summary: str = ""
    collectives: list[str] = Field(default_factory=list)
    inputs: list[str] = Field(default_factory=list)
    outputs: list[str] = Field(default_factory=list)
    capabilities: list[str] = Field(default_factory=list)
    params: list[ManifestParam] = Field(default_factory=list)


class Manifest(_Strict):
    """A plugin's static manifest (``collhub-plugin.toml``), advertised by the entry point group
    ``collhub.manifest`` as ``<plugin> = "<package>"`` (the file ``<package>/collhub-plugin.toml``)."""

    name: str
    plugin: str = Field(description="entry-point name; component ids are <plugin>.<component>")
    display_name: str | None = None
    api_version: ApiVersionText
    requires_hub: SpecifierText = ""
    components: list[ManifestComponent]
    keywords: list[str] = Field(default_factory=list)
    lifecycle: Lifecycle = "active"
    urls: dict[str, str] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        if not valid_name(value):
            raise ValueError(f"invalid plugin name {value!r}")
        return value


class ComponentEntry(_Strict):
    id: str
    kind: Kind
    summary: str = ""
    collectives: list[str] = Field(default_factory=list)


class PluginSummary(_Strict):
    name: str
    display_name: str | None = None
    summary: str = ""
    latest: str
    lifecycle: Lifecycle = "active"
    keywords: list[str] = Field(default_factory=list)
    components: list[ComponentEntry] = Field(default_factory=list)
    requires_hub: SpecifierText = ""


class IndexDoc(_Strict):
    meta: Meta
    plugins: list[PluginSummary]


class FileEntry(_Strict):
    filename: str
    url: str
    hashes: dict[str, str]
    size: int = Field(ge=0)
    upload_time: str | None = Field(None, alias="upload-time")

    @field_validator("filename")
    @classmethod
    def _check_filename(cls, value: str) -> str:
        if not valid_filename(value):
            raise ValueError(f"invalid wheel file name {value!r}")
        return value


class VersionEntry(_Strict):
    requires_hub: SpecifierText = ""
    requires_python: SpecifierText = ""
    api_version: ApiVersionText
    yanked: bool = False
    upload_time: str | None = Field(None, alias="upload-time")
    summary: str = ""
    manifest: Manifest
    files: list[FileEntry]


class PluginDoc(_Strict):
    meta: Meta
    name: str
    latest: str
    versions: dict[str, VersionEntry]

    @model_validator(mode="after")
    def _latest_known(self) -> PluginDoc:
        if self.latest not in self.versions:
            raise ValueError(f"latest {self.latest!r} is not one of the versions")
        return self


class ComponentsDoc(_Strict):
    """Reverse index: component id / collective / kind -> plugin names."""

    meta: Meta
    by_id: dict[str, list[str]]
    by_collective: dict[str, list[str]]
    by_kind: dict[str, list[str]]


class ErrorEntry(_Strict):
    file: str
    error: str


class ErrorsDoc(_Strict):
    meta: Meta
    errors: list[ErrorEntry]
