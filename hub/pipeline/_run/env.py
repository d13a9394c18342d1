"""Which plugin manager a run uses, rebuilt identically in every worker process.

A worker cannot receive a live plugin manager (it holds modules and pluggy state), so a run
describes its manager as data, :class:`ManagerSpec`: whether to load installed entry points,
plus extra plugin modules to register (importable names, or ``.py`` file paths). Each process
builds the manager for a spec once and caches it.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["ManagerSpec", "manager_for", "component_id", "component_ids"]


@dataclass(frozen=True)
class ManagerSpec:
    """``autoload``: load installed plugins (entry points); ``plugins``: extra modules to register.

    Each entry of ``plugins`` is ``"module.name"``, ``"path/to/file.py"``, or either prefixed by
    ``"name="`` to choose the plugin name its component ids start with.
    """

    autoload: bool = True
    plugins: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"autoload": self.autoload, "plugins": list(self.plugins)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ManagerSpec:
        return cls(bool(data.get("autoload", True)), tuple(data.get("plugins", ())))


_CACHE: dict[ManagerSpec, Any] = {}


def _import_plugin(ref: str) -> Any:
    if ref.endswith(".py"):
        path = Path(ref).resolve()
        name = "_collhub_pipeline_plugin_" + hashlib.sha256(str(path).encode()).hexdigest()[:12]
        if name in sys.modules:
            return sys.modules[name]
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import plugin file {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module
    return importlib.import_module(ref)


def manager_for(spec: ManagerSpec) -> Any:
    """The plugin manager described by ``spec`` (process-wide one for the default spec)."""
    cached = _CACHE.get(spec)
    if cached is not None:
        return cached
    from ...errors import PluginLoadError
    from ...plugins import create_manager, get_manager

    if spec == ManagerSpec():
        mgr = get_manager()
    else:
        mgr = create_manager(autoload=spec.autoload)
        for entry in spec.plugins:
            # "name=ref" registers under an explicit plugin name (ids become name.<component>).
            name, sep, ref = entry.partition("=")
            if not sep:
                name, ref = "", entry
            try:
                module = _import_plugin(ref)
            except Exception as exc:  # noqa: BLE001 - any import failure is the plugin's
                raise PluginLoadError(
                    f"cannot import plugin {ref!r}: {type(exc).__name__}: {exc}",
                    hint="check the module name or file path",
                ) from exc
            mgr.register(module, name=name or None)
    _CACHE[spec] = mgr
    return mgr


def component_id(spec: Any) -> str:
    """The qualified id of a component descriptor returned by the manager."""
    ident = getattr(spec, "id", None)
    return str(ident) if ident else str(getattr(spec, "name", ""))


def component_ids(manager: Any) -> dict[str, str]:
    """Map every installed component id to its kind."""
    return {component_id(c): str(getattr(c, "kind", "component")) for c in manager.components()}
