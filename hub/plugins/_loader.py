"""Entry-point discovery and the loading policy (allow/block lists, strict mode, API versions).

Nothing here imports a plugin's heavy code: loading a plugin imports only the module its entry
point names, whose registration hooks return descriptors holding ``"module:attr"`` strings.
"""

from __future__ import annotations

import os
import re
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._env import env_flag
from .._names import normalize_name
from ..errors import IncompatiblePluginError
from ._index import entry_rows, load_value

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

__all__ = [
    "CORE_DISTRIBUTION",
    "ENTRY_POINT_GROUP",
    "BrokenPlugin",
    "Candidate",
    "PluginApiWarning",
    "check_api_version",
    "discover",
    "normalize_name",
    "strict_mode",
]

#: The entry-point group plugins register in (``[project.entry-points.collhub]``).
ENTRY_POINT_GROUP = "collhub"
#: The distribution of the core; it is always loaded, whatever the allow/block lists say.
CORE_DISTRIBUTION = "collhub"

ENV_STRICT = "COLLHUB_STRICT_PLUGINS"
ENV_LOAD = "COLLHUB_LOAD_PLUGINS"
ENV_DISABLE = "COLLHUB_DISABLE_PLUGINS"

_API_RE = re.compile(r"^(\d+)\.(\d+)$")


class PluginApiWarning(UserWarning):
    """A plugin declares a newer minor plugin API than this collhub implements."""


@dataclass(frozen=True)
class BrokenPlugin:
    """A plugin that could not be loaded; the CLI lists it instead of crashing.

    ``error`` is the exception, already a :class:`hub.errors.PluginError` subclass
    (``PluginLoadError``, ``IncompatiblePluginError`` or ``ComponentConflictError``) whose
    ``__cause__`` is the original exception when there was one.
    """

    distribution: str
    version: str
    entry_point: str
    error: BaseException

    @property
    def message(self) -> str:
        return str(getattr(self.error, "message", self.error))

    def as_dict(self) -> dict[str, Any]:
        return {
            "distribution": self.distribution,
            "version": self.version,
            "entry_point": self.entry_point,
            "error_type": type(self.error).__name__,
            "error": self.message,
        }


@dataclass(frozen=True)
class Candidate:
    """One discovered entry point with the distribution that declares it."""

    name: str
    value: str
    distribution: str
    version: str
    entry_point: EntryPoint | None = None

    @property
    def label(self) -> str:
        return f"{self.name} = {self.value}"

    def load(self) -> Any:
        """Import the entry point's object (``EntryPoint.load`` when one was given)."""
        if self.entry_point is not None:
            return self.entry_point.load()
        return load_value(self.value)


def _env_list(var: str) -> set[str] | None:
    raw = os.environ.get(var)
    if raw is None:
        return None
    return {normalize_name(part) for part in raw.replace(";", ",").split(",") if part.strip()}


def strict_mode() -> bool:
    """True when ``COLLHUB_STRICT_PLUGINS`` asks to re-raise plugin load errors."""
    return env_flag(ENV_STRICT)


def discover(group: str = ENTRY_POINT_GROUP) -> tuple[list[Candidate], list[Candidate]]:
    """Return ``(to_load, skipped)`` entry points of ``group``, core first, then by name.

    ``COLLHUB_LOAD_PLUGINS`` (comma-separated distribution names) loads only those third-party
    distributions (empty: none); ``COLLHUB_DISABLE_PLUGINS`` never loads those listed. The entry
    points come from the index (:mod:`._index`): the metadata is scanned again only once it changed.
    """
    allow = _env_list(ENV_LOAD)
    block = _env_list(ENV_DISABLE) or set()
    seen: set[tuple[str, str, str]] = set()
    load: list[Candidate] = []
    skipped: list[Candidate] = []
    for row in entry_rows(group)[0]:
        dist_name, version = row.dist, row.version
        # The same distribution may be visible twice on sys.path (editable + build dir).
        key = (normalize_name(dist_name), row.name, row.value)
        if key in seen:
            continue
        seen.add(key)
        cand = Candidate(row.name, row.value, dist_name, version)
        norm = normalize_name(dist_name)
        if norm != CORE_DISTRIBUTION and (norm in block or (allow is not None and norm not in allow)):
            skipped.append(cand)
        else:
            load.append(cand)
    load.sort(key=lambda c: (normalize_name(c.distribution) != CORE_DISTRIBUTION, c.name, c.distribution))
    return load, skipped


def check_api_version(module: Any, plugin: str, host: str) -> str | None:
    """Check a module's ``COLLHUB_PLUGIN_API`` against the host's ``major.minor``.

    Returns the declared version (``None`` when absent, meaning "any 1.x"); raises
    :class:`IncompatiblePluginError` for a newer major or a malformed value and warns with
    :class:`PluginApiWarning` for a newer minor.
    """
    declared = getattr(module, "COLLHUB_PLUGIN_API", None)
    if declared is None:
        return None
    match = _API_RE.match(str(declared).strip())
    if not match:
        raise IncompatiblePluginError(
            f"plugin {plugin!r} declares COLLHUB_PLUGIN_API = {declared!r}, expected 'MAJOR.MINOR'",
            hint="set COLLHUB_PLUGIN_API to a string such as '1.0'",
        )
    host_major, host_minor = (int(x) for x in host.split("."))
    major, minor = int(match.group(1)), int(match.group(2))
    if major > host_major:
        raise IncompatiblePluginError(
            f"plugin {plugin!r} needs plugin API {declared}, this collhub implements {host}",
            hint="upgrade collhub, or install an older release of the plugin",
        )
    if major < host_major:
        raise IncompatiblePluginError(
            f"plugin {plugin!r} was written for plugin API {declared}, this collhub implements {host}",
            hint="upgrade the plugin",
        )
    if minor > host_minor:
        warnings.warn(
            f"plugin {plugin!r} declares plugin API {declared}, newer than {host}; "
            "features it relies on may be missing",
            PluginApiWarning,
            stacklevel=2,
        )
    return str(declared)
