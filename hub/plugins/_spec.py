"""Typed, frozen descriptors that registration hooks return (conda style).

A component's qualified id is ``<plugin>.<name>`` where ``<plugin>`` is the entry-point name of
the plugin that registered it (the core's is ``hub``).

Call signatures of a component's ``factory`` (resolved lazily when given as ``"module:attr"``)::

    producer:  factory(params, ctx) -> Algorithm | Workload
    transform: factory(algorithm, params, ctx) -> Algorithm
    consumer:  factory(obj, params, ctx) -> Result        # obj: Algorithm or Workload

``params`` is an instance of the component's pydantic ``params`` model; ``ctx`` a
:class:`RunContext`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

__all__ = [
    "ComponentSpec",
    "ConsumerSpec",
    "EmptyParams",
    "ProducerSpec",
    "RunContext",
    "TransformSpec",
    "resolve_ref",
]

#: The plugin API version (major.minor). A plugin built for a newer major is refused.
PLUGIN_API_VERSION = "1.0"

DataKind = Literal["algorithm", "workload", "result"]


class EmptyParams(BaseModel):
    """Params model for components that take no parameters."""

    # built on first validation: every plugin registration imports this module, few runs use it
    model_config = ConfigDict(extra="forbid", defer_build=True)


def _import(module_name: str) -> Any:
    """Import a component's module; a plugin's, not yet imported, within the import deadline
    (:func:`._guard.run_within`), so a factory module that blocks at import cannot hold a command."""
    import sys

    if module_name in sys.modules or module_name == "hub" or module_name.startswith("hub."):
        return importlib.import_module(module_name)
    from ._guard import import_timeout, run_within

    return run_within(
        importlib.import_module, module_name, timeout=import_timeout(), what=f"importing module {module_name!r}"
    )


def resolve_ref(ref: Any) -> Any:
    """Resolve a ``"package.module:attr"`` string lazily; pass other objects through."""
    if not isinstance(ref, str):
        return ref
    module_name, _, attr = ref.partition(":")
    obj: Any = _import(module_name)
    for part in attr.split(".") if attr else []:
        obj = getattr(obj, part)
    return obj


@dataclass(frozen=True)
class RunContext:
    """What a component may use while running: a directory for its artifacts, and flags.

    ``progress``, when set, takes a short line about the step now running (``"size 1MiB:
    timing"``); the CLI sets it only where a person watches a terminal and the output is not
    JSON, so a component calls it freely and never prints progress itself."""

    workdir: Path = field(default_factory=Path.cwd)
    debug: bool = False
    quiet: bool = True
    options: dict[str, Any] = field(default_factory=dict)
    progress: Callable[[str], None] | None = None
    #: (producer id, collective, ranks) -> that producer's algorithm: the plugin manager's
    #: :meth:`~hub.plugins.PluginManager.produce_algorithm`, filled in by the manager when it runs a
    #: component, so a consumer or transform below ``hub.plugins`` can run the producers a
    #: workload's ``algorithm_for`` names without importing the manager
    produce_algorithm: Callable[[str, Any, int], Any] | None = None


@dataclass(frozen=True)
class ComponentSpec:
    """Base descriptor. ``factory`` and ``params`` may be ``"module:attr"`` strings (lazy import)."""

    kind: ClassVar[str] = "component"

    name: str
    summary: str
    factory: Callable[..., Any] | str
    params: type[BaseModel] | str = EmptyParams
    #: Collectives the component supports; empty means any.
    collectives: frozenset[str] = frozenset()
    min_ranks: int = 1
    max_ranks: int | None = None
    #: Free-form capability tags, e.g. {"congestion-aware", "link-graphs"}.
    capabilities: frozenset[str] = frozenset()
    since: str = PLUGIN_API_VERSION

    def load_factory(self) -> Callable[..., Any]:
        return resolve_ref(self.factory)

    def load_params(self) -> type[BaseModel]:
        return resolve_ref(self.params)


@dataclass(frozen=True)
class ProducerSpec(ComponentSpec):
    kind: ClassVar[str] = "producer"
    output: DataKind = "algorithm"


@dataclass(frozen=True)
class TransformSpec(ComponentSpec):
    kind: ClassVar[str] = "transform"
    #: what it transforms (into the same kind): "algorithm" (default) or "workload" (hub.inline)
    inputs: frozenset[str] = frozenset({"algorithm"})


@dataclass(frozen=True)
class ConsumerSpec(ComponentSpec):
    kind: ClassVar[str] = "consumer"
    inputs: frozenset[str] = frozenset({"algorithm"})
