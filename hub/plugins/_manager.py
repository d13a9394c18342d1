"""The plugin manager: isolated entry-point loading, the component table, running components.

A typed facade over :class:`pluggy.PluginManager`. Each plugin is loaded in isolation: one that
fails to import, to register, or to return valid descriptors becomes a :class:`BrokenPlugin`
and the rest keep working (``COLLHUB_STRICT_PLUGINS=1`` re-raises instead).

Every call into plugin code runs under :func:`._guard.guarded`: ``SystemExit``, a
``KeyboardInterrupt`` the plugin raised itself and any other ``BaseException`` become a
:class:`PluginError` naming the plugin and its distribution; stdout is sent to stderr; imports
are bounded by ``COLLHUB_PLUGIN_IMPORT_TIMEOUT`` seconds (default 30) and component calls by an
optional ``timeout``. What a producer returns is checked against what was asked (rank count,
collective). The plugin name ``hub`` and the core's command names are reserved.
"""

from __future__ import annotations

import difflib
import functools
import re
import reprlib
import threading
import warnings
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from types import ModuleType
from typing import TYPE_CHECKING, Any

import pluggy

from .._names import normalize_name
from ..errors import (
    ComponentConflictError,
    ComponentNotFoundError,
    HubError,
    PluginError,
    PluginLoadError,
    UsageError,
)
from . import hookspecs
from ._checks import _check_asked, _check_capabilities, _check_output
from ._guard import PluginTimeout, guarded, import_timeout as _import_timeout, run_within
from ._identity import FIRST_PARTY, claim_problem, load_rank
from ._loader import (
    CORE_DISTRIBUTION,
    BrokenPlugin,
    Candidate,
    check_api_version,
    discover,
    strict_mode,
)
from ._spec import PLUGIN_API_VERSION, ComponentSpec, ConsumerSpec, ProducerSpec, RunContext, TransformSpec

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = ["PluginInfo", "PluginManager", "create_manager", "get_manager", "manager_for"]

#: registration hook -> the descriptor class it must return
REGISTRATION_HOOKS: dict[str, type[ComponentSpec]] = {
    "collhub_producers": ProducerSpec,
    "collhub_transforms": TransformSpec,
    "collhub_consumers": ConsumerSpec,
}
KINDS = ("producer", "transform", "consumer")
_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")
_COMMAND_RE = re.compile(r"^[a-z][a-z0-9-]*$")
#: The core's plugin name: a third-party entry point of this name would shadow every hub.* id.
CORE_PLUGIN = "hub"
#: Command names of the core CLI (hub.cli._app.COMMANDS, plus click's own); a plugin may not take them.
RESERVED_COMMANDS = frozenset(
    {
        "produce",
        "transform",
        "consume",
        "run",
        "pipeline",
        "trace",
        "plugins",
        "search",
        "install",
        "uninstall",
        "registry",
        "report",
        "astra-sim",
        "help",
        "version",
    }
)
#: Reserved names that one first-party distribution provides as a plugin command group: only it may.
RESERVED_FOR = {"registry": "collhub-registry"}


@dataclass
class PluginInfo:
    """A loaded plugin: its entry-point name, distribution, module and what it provides."""

    name: str
    distribution: str
    version: str
    module: str
    location: str | None
    api_version: str | None = None
    components: list[str] = field(default_factory=list)
    hooks: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def builtin(self) -> bool:
        return normalize_name(self.distribution) == CORE_DISTRIBUTION

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "distribution": self.distribution,
            "version": self.version,
            "module": self.module,
            "location": self.location,
            "api_version": self.api_version,
            "builtin": self.builtin,
            "components": list(self.components),
            "hooks": list(self.hooks),
            "commands": list(self.commands),
            "warnings": list(self.warnings),
        }


@dataclass(frozen=True)
class _Provided:
    spec: ComponentSpec
    id: str
    plugin: str
    distribution: str


class PluginManager:
    """collhub's plugin manager. Build one with :func:`create_manager` or :func:`get_manager`."""

    def __init__(self) -> None:
        self._pm = pluggy.PluginManager(hookspecs.PROJECT)
        self._pm.add_hookspecs(hookspecs)
        self._infos: dict[str, PluginInfo] = {}
        self._components: dict[str, _Provided] = {}
        #: id -> every provider ("plugin (distribution)") when two plugins claim one id
        self._conflicts: dict[str, list[str]] = {}
        self._broken: list[BrokenPlugin] = []
        self._skipped: list[Candidate] = []
        self._commands: dict[str, tuple[str, Any]] = {}
        #: plugin commands refused because a core command has the name
        self._refused: list[str] = []

    # ------------------------------------------------------------------ loading
    @property
    def hook(self) -> Any:
        """The pluggy hook relay, for the observer hooks (``manager.hook.collhub_before_step(step=...)``)."""
        return self._pm.hook

    @property
    def pluggy_manager(self) -> pluggy.PluginManager:
        """The underlying pluggy manager (for advanced use and tracing)."""
        return self._pm

    def load_entrypoints(self, progress: Any = None, *, names: Collection[str] | None = None) -> None:
        """Load every allowed entry point of group ``collhub``, each in isolation.

        ``progress(candidate)`` is called before each one is imported (the listing probe of
        :mod:`hub.cli._probe` uses it to tell which plugin killed it). With ``names``, only the
        entry points of those names (the plugin names, the prefixes of component ids) are loaded:
        see :func:`manager_for`."""
        to_load, self._skipped = discover()
        # the owner of a name comes first: the core, then first-party, then by name and distribution
        to_load.sort(key=lambda c: (load_rank(c), c.name, normalize_name(c.distribution)))
        owners: dict[str, str] = {}
        for cand in to_load:
            if names is not None and cand.name not in names:
                continue
            if progress is not None:
                progress(cand)
            where = f"plugin {cand.name!r} from {cand.distribution} {cand.version}"
            hint = (
                f"reinstall or upgrade {cand.distribution}, "
                f"or disable it with COLLHUB_DISABLE_PLUGINS={cand.distribution}"
            )
            if cand.name == CORE_PLUGIN and normalize_name(cand.distribution) != CORE_DISTRIBUTION:
                self._record_broken(
                    cand.distribution,
                    cand.version,
                    cand.label,
                    PluginLoadError(
                        f"{where}: the entry-point name {CORE_PLUGIN!r} is reserved for collhub's core; refused",
                        hint=f"rename the entry point in {cand.distribution}'s [project.entry-points.collhub]",
                    ),
                )
                continue
            claim = claim_problem(cand, owners.get(cand.name))
            if claim is not None:
                self._record_broken(cand.distribution, cand.version, cand.label, claim)
                continue
            owners.setdefault(cand.name, cand.distribution)
            try:
                load = functools.partial(run_within, cand.load, timeout=_import_timeout(), what=f"{where}: import")
                module = guarded(load, what=f"{where}: import", hint=hint)
            except PluginError as exc:
                cause = exc.__cause__ or exc
                text = exc.message.split(": import ", 1)[-1].removeprefix("failed: ")
                err = PluginLoadError(f"{where} failed to import: {text}", hint=hint)
                err.__cause__ = cause
                self._record_broken(cand.distribution, cand.version, cand.label, err)
                continue
            try:
                register = functools.partial(
                    self.register,
                    module,
                    name=cand.name,
                    distribution=cand.distribution,
                    version=cand.version,
                    call=None if load_rank(cand) == 0 else functools.partial(_call_hook, where=where),
                )
                guarded(register, what=f"{where}: registration", hint=hint)
            except PluginError as exc:
                self._record_broken(cand.distribution, cand.version, cand.label, exc)

    def _record_broken(self, dist: str, version: str, ep: str, error: PluginError) -> None:
        if strict_mode():
            raise error
        self._broken.append(BrokenPlugin(dist, version, ep, error))

    def register(
        self,
        plugin: ModuleType | object,
        *,
        name: str | None = None,
        distribution: str | None = None,
        version: str = "0",
        call: Any = None,
    ) -> PluginInfo:
        """Register ``plugin`` (a module or object with ``@hookimpl`` functions) under ``name``.

        Validates its API version and descriptors and adds its components as ``<name>.<comp>``.
        On failure nothing of the plugin stays registered and a :class:`PluginError` is raised.
        ``call(hook)`` runs each registration hook (default: ``hook()``); entry points are
        registered with one that bounds each hook by the import deadline.
        """
        name = name or getattr(plugin, "__name__", None) or type(plugin).__name__
        dist = distribution or name
        label = f"{name} ({dist})"
        if name in self._infos:
            self._raise_name_clash(plugin, name, dist)
        api = check_api_version(plugin, name, PLUGIN_API_VERSION) if _is_module_like(plugin) else None
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                self._pm.register(plugin, name=name)
        except Exception as exc:  # pluggy.PluginValidationError, ValueError (duplicate), ...
            err = PluginLoadError(f"plugin {label} failed to register: {exc}", hint=_hooks_hint())
            raise err from exc
        try:
            provided, commands = self._collect(plugin, name, dist, call)
        except PluginError:
            self._pm.unregister(name=name)
            raise
        module_name = getattr(plugin, "__name__", type(plugin).__module__)
        info = PluginInfo(
            name=name,
            distribution=dist,
            version=version,
            module=str(module_name),
            location=getattr(plugin, "__file__", None),
            api_version=api,
            components=[p.id for p in provided],
            hooks=sorted(h.name for h in self._pm.get_hookcallers(plugin) or []),
            commands=[c for c, _ in commands],
            warnings=[str(w.message) for w in caught],
        )
        for p in provided:
            self._components[p.id] = p
        for cname, app in commands:
            if cname in RESERVED_COMMANDS and RESERVED_FOR.get(cname) != dist:
                info.warnings.append(f"command {cname!r} is a core collhub command; refused")
                self._refused.append(
                    f"plugin {name!r} ({dist}) provides command {cname!r}, which is a core collhub command; refused"
                )
                continue
            if cname in self._commands:
                info.warnings.append(f"command {cname!r} already provided by {self._commands[cname][0]}")
                continue
            self._commands[cname] = (name, app)
        self._infos[name] = info
        return info

    def _raise_name_clash(self, plugin: object, name: str, dist: str) -> None:
        existing = self._infos[name]
        first = f"{existing.name} ({existing.distribution})"
        try:
            ids = {p.id for p in self._collect(plugin, name, dist)[0]} & set(existing.components)
        except PluginError:
            ids = set()
        # Using an id both claim must fail loudly rather than silently pick the first provider.
        for cid in ids:
            self._conflicts[cid] = [first, f"{name} ({dist})"]
        clash = ", ".join(sorted(ids)) or f"{name}.*"
        raise ComponentConflictError(
            f"component id(s) {clash} provided by both {existing.distribution} and {dist} "
            f"(both register plugin name {name!r})",
            hint=f"uninstall one of them, or set COLLHUB_DISABLE_PLUGINS={dist}",
        )

    def unregister(self, name: str) -> None:
        """Remove a registered plugin and its components (used by the testing kit)."""
        info = self._infos.pop(name, None)
        if info is None:
            raise PluginError(f"no plugin named {name!r} is registered")
        self._pm.unregister(name=name)
        for cid in info.components:
            self._components.pop(cid, None)
        self._commands = {k: v for k, v in self._commands.items() if v[0] != name}

    def _collect(
        self, plugin: object, name: str, dist: str, call: Any = None
    ) -> tuple[list[_Provided], list[tuple[str, Any]]]:
        call = call or (lambda hook: hook())
        provided: list[_Provided] = []
        seen: set[str] = set()
        for hook_name, spec_cls in REGISTRATION_HOOKS.items():
            impl = _impl_of(plugin, hook_name)
            if impl is None:
                continue
            try:
                result = call(impl)
                items = list(result or [])
            except PluginError:
                raise
            except Exception as exc:  # noqa: BLE001
                raise PluginLoadError(
                    f"plugin {name!r} ({dist}): {hook_name}() raised {type(exc).__name__}: {exc}",
                    hint=f"fix or disable {dist} (COLLHUB_DISABLE_PLUGINS={dist})",
                ) from exc
            for i, item in enumerate(items):
                problem = _descriptor_problem(item, spec_cls)
                if problem:
                    raise PluginLoadError(
                        f"plugin {name!r} ({dist}): {hook_name}() item {i}: {problem}",
                        hint=f"return {spec_cls.__name__}(name=..., summary=..., factory='module:attr')",
                    )
                cid = f"{name}.{item.name}"
                if cid in seen:
                    raise ComponentConflictError(
                        f"plugin {name!r} ({dist}) registers component {cid!r} twice",
                        hint="give each component a distinct name",
                    )
                seen.add(cid)
                provided.append(_Provided(item, cid, name, dist))
        commands: list[tuple[str, Any]] = []
        impl = _impl_of(plugin, "collhub_commands")
        if impl is not None:
            try:
                for pair in call(impl) or []:
                    cname, app = pair
                    if not isinstance(cname, str) or not _COMMAND_RE.match(cname):
                        raise ValueError(f"command name {cname!r} must match {_COMMAND_RE.pattern}")
                    commands.append((cname, app))
            except PluginError:
                raise
            except Exception as exc:  # noqa: BLE001
                raise PluginLoadError(
                    f"plugin {name!r} ({dist}): collhub_commands() is invalid: {type(exc).__name__}: {exc}",
                    hint="return a list of (name, typer.Typer) pairs",
                ) from exc
        return sorted(provided, key=lambda p: p.id), commands

    # ------------------------------------------------------------------ queries
    def plugins(self) -> list[PluginInfo]:
        """Loaded plugins, the core first, then by name."""
        return sorted(self._infos.values(), key=lambda p: (not p.builtin, p.name))

    def broken(self) -> list[BrokenPlugin]:
        """Plugins that failed to load, with their errors."""
        return list(self._broken)

    def skipped(self) -> list[Candidate]:
        """Entry points not loaded because of ``COLLHUB_LOAD_PLUGINS`` / ``COLLHUB_DISABLE_PLUGINS``."""
        return list(self._skipped)

    def components(self, kind: str | None = None) -> list[ComponentSpec]:
        """Component descriptors sorted by id, optionally of one ``kind`` (producer/transform/consumer).

        The returned descriptors carry their qualified id as ``.id`` and the providing plugin
        as ``.plugin``.
        """
        if kind is not None and kind not in KINDS:
            raise UsageError(f"unknown component kind {kind!r}", hint=f"use one of {', '.join(KINDS)}")
        return [_with_id(p) for cid, p in sorted(self._components.items()) if kind is None or p.spec.kind == kind]

    def component(self, id: str) -> ComponentSpec:  # noqa: A002 - the contract's name
        """The descriptor of component ``id``; raises ComponentNotFoundError with "did you mean"."""
        if id in self._conflicts:
            raise ComponentConflictError(
                f"component {id!r} is provided by several plugins: {', '.join(self._conflicts[id])}",
                hint="uninstall or disable (COLLHUB_DISABLE_PLUGINS) all but one of them",
            )
        provided = self._components.get(id)
        if provided is not None:
            return _with_id(provided)
        known = sorted(self._components)
        close = difflib.get_close_matches(id, known, n=3, cutoff=0.7)
        if not close and "." not in id:  # a bare name: suggest the qualified ids ending in it
            close = [k for k in known if k.rsplit(".", 1)[-1] == id]
        hint = f"did you mean {' or '.join(close)}?" if close else _not_installed_hint(id)
        prefix = id.split(".", 1)[0]
        broken = [b for b in self._broken if prefix == b.entry_point.split(" ", 1)[0]]
        if broken and isinstance(broken[0].error, ComponentConflictError) and prefix in FIRST_PARTY:
            hint = f"{prefix}.* belongs to {FIRST_PARTY[prefix]} (`collhub install {FIRST_PARTY[prefix]}`); "
            hint += f"{broken[0].distribution}'s claim to it was refused"
        elif broken:
            hint = f"plugin {broken[0].distribution} provides it but failed to load; run `collhub plugins doctor`"
        raise ComponentNotFoundError(f"unknown component {id!r}", hint=hint)

    def commands(self) -> dict[str, Any]:
        """Command groups from ``collhub_commands``: name -> ``typer.Typer``."""
        return {name: app for name, (_, app) in sorted(self._commands.items())}

    def refused_commands(self) -> list[str]:
        """One message per plugin command refused because it is named like a core command."""
        return list(self._refused)

    def command_owner(self, name: str) -> str | None:
        """The plugin providing command group ``name``."""
        entry = self._commands.get(name)
        return entry[0] if entry else None

    # ------------------------------------------------------------------ running
    def validate_params(self, id: str, params: dict[str, Any] | BaseModel | None) -> BaseModel:  # noqa: A002
        """Validate ``params`` against component ``id``'s model; UsageError lists every bad field."""
        spec = self.component(id)
        return _validate(spec, id, params)

    def run_producer(
        self,
        id: str,
        params: dict[str, Any] | BaseModel | None = None,
        ctx: RunContext | None = None,  # noqa: A002
        *,
        timeout: float | None = None,
    ) -> Any:
        """Run producer ``id``; returns an ``Algorithm`` or a ``Workload``, checked against ``params``
        (rank count, collective). ``timeout``: seconds before the call is stopped (PluginTimeout)."""
        spec, model = self._prepare(id, "producer", params)
        out = self._call(spec, id, (model, self._context(ctx)), timeout)
        out = _check_output(
            id, out, "algorithm" if getattr(spec, "output", "algorithm") == "algorithm" else "workload", self._who(id)
        )
        _check_asked(id, out, model, self._who(id))
        return out

    def run_transform(
        self,
        id: str,
        alg: Any,
        params: dict[str, Any] | BaseModel | None = None,  # noqa: A002
        ctx: RunContext | None = None,
        *,
        timeout: float | None = None,
    ) -> Any:
        """Run transform ``id`` on ``alg``; returns the new ``Algorithm`` (a ``Workload`` for a
        workload: hub.inline and hub.overlap map workloads to workloads)."""
        from ..chakra import Workload

        spec, model = self._prepare(id, "transform", params)
        expected = "workload" if isinstance(alg, Workload) else "algorithm"
        return _check_output(
            id, self._call(spec, id, (alg, model, self._context(ctx)), timeout), expected, self._who(id)
        )

    def run_consumer(
        self,
        id: str,
        obj: Any,
        params: dict[str, Any] | BaseModel | None = None,  # noqa: A002
        ctx: RunContext | None = None,
        *,
        timeout: float | None = None,
    ) -> Any:
        """Run consumer ``id`` on an ``Algorithm`` or ``Workload``; returns a ``hub.Result``."""
        spec, model = self._prepare(id, "consumer", params)
        return _check_output(
            id, self._call(spec, id, (obj, model, self._context(ctx)), timeout), "result", self._who(id)
        )

    def _who(self, id: str) -> str:  # noqa: A002
        """``component 'x.y' (plugin x, distribution collhub-x 1.0)``: how errors name plugin code."""
        provided = self._components.get(id)
        if provided is None:
            return f"component {id!r}"
        info = self._infos.get(provided.plugin)
        version = f" {info.version}" if info is not None and info.version not in ("", "0") else ""
        return f"component {id!r} (plugin {provided.plugin}, distribution {provided.distribution}{version})"

    def produce_algorithm(self, component: str, collective: Any, ranks: int) -> Any:
        """The algorithm producer ``component`` makes for ``collective`` on ``ranks`` ranks: how a
        workload's ``algorithm_for`` runs a producer id (:func:`hub.workload.algorithm_chooser`).
        Refuses a component that is not a producer, or a producer whose output is not an algorithm."""
        from ..chakra import Algorithm, Collective

        coll = Collective.parse(collective)
        spec = self.component(component)  # ComponentNotFoundError with a "did you mean"
        if spec.kind != "producer":
            raise UsageError(
                f"algorithm_for: {component!r} is a {spec.kind}, not a producer",
                hint="name a producer id such as hub.ring, a built-in name such as ring, or an ET prefix",
            )
        out = self.run_producer(component, {"collective": coll.value, "ranks": ranks})
        if not isinstance(out, Algorithm):
            raise UsageError(
                f"algorithm_for: producer {component!r} makes a {type(out).__name__}, not an algorithm",
                hint="a workload's collectives need algorithm producers",
            )
        return out

    def _context(self, ctx: RunContext | None) -> RunContext:
        """``ctx`` (a default one if None) able to run producers (:attr:`RunContext.produce_algorithm`)."""
        ctx = ctx or RunContext()
        return ctx if ctx.produce_algorithm is not None else replace(ctx, produce_algorithm=self.produce_algorithm)

    def _call(self, spec: ComponentSpec, id: str, args: tuple[Any, ...], timeout: float | None) -> Any:  # noqa: A002
        factory = _load_factory(spec, id)
        provided = self._components.get(id)
        core = provided is not None and normalize_name(provided.distribution) == CORE_DISTRIBUTION
        dist = provided.distribution if provided is not None else "the plugin"
        return guarded(
            factory,
            *args,
            what=self._who(id),
            timeout=timeout,
            wrap_errors=not core,
            hint=f"this is a bug in {dist}; report it to its authors, or disable it with "
            f"COLLHUB_DISABLE_PLUGINS={dist}",
        )

    def _prepare(self, id: str, kind: str, params: Any) -> tuple[ComponentSpec, BaseModel]:  # noqa: A002
        spec = self.component(id)
        if spec.kind != kind:
            raise UsageError(
                f"component {id!r} is a {spec.kind}, not a {kind}",
                hint=f"use `collhub {_VERB[spec.kind]} {id}`",
            )
        model = _validate(spec, id, params)
        _check_capabilities(spec, id, model)
        return spec, model


_VERB = {"producer": "produce", "transform": "transform", "consumer": "consume"}


def _call_hook(hook: Any, *, where: str) -> Any:
    """A registration hook of an entry point, bounded by the import deadline (a worker thread)."""
    name = getattr(hook, "__name__", "hook")
    return run_within(hook, timeout=_import_timeout(), what=f"{where}: {name}()")


def _with_id(p: _Provided) -> ComponentSpec:
    # Descriptors are frozen dataclasses: attach the qualified id without mutating the plugin's
    # object by setting attributes on a shallow copy.
    import copy

    spec = copy.copy(p.spec)
    object.__setattr__(spec, "id", p.id)
    object.__setattr__(spec, "plugin", p.plugin)
    object.__setattr__(spec, "distribution", p.distribution)
    return spec


def _impl_of(plugin: object, hook_name: str) -> Any:
    func = getattr(plugin, hook_name, None)
    if func is None or not callable(func):
        return None
    return func if hasattr(func, f"{hookspecs.PROJECT}_impl") else None


def _is_module_like(plugin: object) -> bool:
    return isinstance(plugin, ModuleType) or hasattr(plugin, "COLLHUB_PLUGIN_API")


def _descriptor_problem(item: Any, spec_cls: type[ComponentSpec]) -> str | None:
    if not isinstance(item, spec_cls):
        return f"expected a {spec_cls.__name__}, got {type(item).__name__}"
    if not isinstance(item.name, str) or not _NAME_RE.match(item.name):
        return f"component name {item.name!r} must match {_NAME_RE.pattern} (no dots)"
    if not isinstance(item.summary, str) or not item.summary.strip():
        return f"component {item.name!r} has no summary"
    for label, ref in (("factory", item.factory), ("params", item.params)):
        if isinstance(ref, str):
            if not re.match(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$", ref):
                return f"component {item.name!r}: {label} {ref!r} is not a 'module:attr' reference"
        elif label == "factory" and not callable(ref):
            return f"component {item.name!r}: factory is neither callable nor 'module:attr'"
    return None


def _hooks_hint() -> str:
    names = ", ".join(sorted(n for n in dir(hookspecs) if n.startswith("collhub_")))
    return f"hook functions must be named after a spec ({names}) and take only its arguments"


def _load_ref(spec: ComponentSpec, id: str, label: str, load: Any) -> Any:  # noqa: A002
    """Import a component's factory or params model: the first time plugin code beyond the
    registration module runs, so under the same guard as a call."""

    def attempt() -> Any:
        try:
            return load()
        except PluginTimeout as exc:
            plugin, dist = getattr(spec, "plugin", "?"), getattr(spec, "distribution", "?")
            who = f"component {id!r} (plugin {plugin}, distribution {dist})"
            raise PluginTimeout(f"{who}: {exc.message}", hint=exc.hint) from None
        except (ImportError, AttributeError) as exc:
            raise PluginLoadError(
                f"component {id!r}: cannot load {label} {getattr(spec, label.split()[0])!r}: "
                f"{type(exc).__name__}: {exc}",
                hint="reinstall the plugin that provides it (`collhub plugins doctor` checks every component)",
            ) from exc

    core = normalize_name(str(getattr(spec, "distribution", "") or "")) == CORE_DISTRIBUTION
    return guarded(
        attempt,
        what=f"component {id!r}: importing its {label}",
        wrap_errors=not core,
        hint="reinstall the plugin that provides it (`collhub plugins doctor` checks every component)",
    )


def _load_factory(spec: ComponentSpec, id: str) -> Any:  # noqa: A002
    return _load_ref(spec, id, "factory", spec.load_factory)


def _load_params_model(spec: ComponentSpec, id: str) -> type[BaseModel]:  # noqa: A002
    return _load_ref(spec, id, "params model", spec.load_params)


def _validate(spec: ComponentSpec, id: str, params: Any) -> BaseModel:  # noqa: A002
    from pydantic import BaseModel, ValidationError

    model_cls = _load_params_model(spec, id)
    if not (isinstance(model_cls, type) and issubclass(model_cls, BaseModel)):
        raise _contract_error(
            spec, id, f"its params model is {_short(model_cls, 60)}, not a pydantic model class", "params"
        )
    if isinstance(params, model_cls):
        return _checked_numbers(model_cls, id, params.model_dump(by_alias=True), params)
    if isinstance(params, BaseModel):
        params = params.model_dump()
    try:
        raw = dict(params or {})
        return _checked_numbers(model_cls, id, raw, model_cls.model_validate(raw))
    except ValidationError as exc:
        import difflib

        parts = []
        value_hints = []
        for e in exc.errors():
            loc = ".".join(str(x) for x in e["loc"]) or "<params>"
            msg = e["msg"]
            cause = (e.get("ctx") or {}).get("error")
            if isinstance(cause, HubError):  # our own value check: its words and its hint (the grammar)
                msg = cause.message
                if cause.hint:
                    value_hints.append(f"{loc}: {cause.hint}")
            elif e["type"] == "extra_forbidden":
                close = difflib.get_close_matches(str(e["loc"][-1]), list(model_cls.model_fields), n=1, cutoff=0.6)
                msg = "unknown parameter" + (f" (did you mean {close[0]}?)" if close else "")
            elif "input" in e and e["type"] != "missing":
                msg += f" (got {_short(e['input'])})"
            parts.append(f"{loc}: {msg}")
        fields = sorted(model_cls.model_fields)
        hint = f"valid parameters: {', '.join(fields) or '(none)'}; see `collhub plugins info {id}`"
        if value_hints:
            hint = "; ".join(value_hints) + f"; see `collhub plugins info {id}`"
        raise UsageError(f"invalid params for {id}: " + "; ".join(parts), hint=hint) from None
    except TypeError as exc:
        raise UsageError(f"invalid params for {id}: {exc}", hint="params must be a mapping") from None
    except Exception as exc:  # a validator of the plugin's params model that raises something else
        dist = str(getattr(spec, "distribution", "") or "the plugin")
        if normalize_name(dist) == CORE_DISTRIBUTION:
            raise
        raise PluginError(
            f"component {id!r} (plugin {getattr(spec, 'plugin', '?')}, distribution {dist}): its params "
            f"model failed: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}",
            hint=f"this is a bug in {dist}; report it to its authors",
        ) from exc


def _checked_numbers(model_cls: type[BaseModel], id: str, raw: dict[str, Any], model: BaseModel) -> BaseModel:  # noqa: A002
    """``model``, once every number in it passed the rules of :mod:`._numbers` (UsageError)."""
    from ._numbers import number_problems

    problems = number_problems(model_cls, raw, model)
    if not problems:
        return model
    parts = [f"{'.'.join(map(str, p.loc))}: {p.message}" for p in problems]
    raise UsageError(f"invalid params for {id}: " + "; ".join(parts), hint=problems[0].hint)


def _contract_error(spec: Any, id: str, what: str, label: str) -> PluginError:  # noqa: A002
    """A component that breaks the plugin contract: the plugin's fault (exit 4), naming it."""
    dist = str(getattr(spec, "distribution", "") or "the plugin")
    return PluginError(
        f"component {id!r} (plugin {getattr(spec, 'plugin', '?')}, distribution {dist}): {what}",
        hint=f"this is a bug in {dist} ({label} breaks the plugin contract); report it to its authors, "
        f"or disable it with COLLHUB_DISABLE_PLUGINS={dist}",
    )


def _short(value: Any, width: int = 80) -> str:
    """``repr(value)`` cut to ``width`` characters: an echoed input must stay one short line."""
    text = reprlib.repr(value) if isinstance(value, (list, dict, tuple, set)) else repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def create_manager(autoload: bool = True) -> PluginManager:
    """A new, isolated manager; with ``autoload`` it loads the ``collhub`` entry points."""
    pm = PluginManager()
    if autoload:
        pm.load_entrypoints()
    return pm


_GLOBAL: PluginManager | None = None
_LOCK = threading.Lock()


def get_manager() -> PluginManager:
    """The process-wide manager, loading entry points on first use."""
    global _GLOBAL
    if _GLOBAL is None:
        with _LOCK:
            if _GLOBAL is None:
                _GLOBAL = create_manager(autoload=True)
    return _GLOBAL


def manager_for(component_id: str) -> PluginManager:
    """A manager that can run ``component_id``: only the entry points named like its plugin
    (the part before the first dot) are loaded, so one command does not import every installed
    plugin's registration module.

    That is enough to resolve the id exactly as a full load would: an id is always
    ``<entry-point name>.<name>``, so no other entry point can provide it or clash with it, and
    a third-party entry point named ``hub`` is among those loaded (and refused) for a ``hub.*``
    id. Anything but a clean resolution (an unknown id, a conflict, a broken provider), strict
    mode, or a process-wide manager loaded already, gives :func:`get_manager`'s full one, so
    errors, "did you mean" and hints are the same as ever. Observer hooks are not run by a single
    component's call; :func:`get_manager` is what the pipeline runner uses.
    """
    prefix = component_id.split(".", 1)[0]
    if _GLOBAL is not None or strict_mode() or not prefix:
        return get_manager()
    manager = PluginManager()
    manager.load_entrypoints(names={prefix})
    try:
        manager.component(component_id)
    except PluginError:
        return get_manager()
    if manager.broken():
        return get_manager()
    return manager


def _reset_global_manager() -> None:
    """Forget the process-wide manager (tests, and after installing plugins)."""
    global _GLOBAL
    _GLOBAL = None


def _not_installed_hint(id: str) -> str:  # noqa: A002 - the component id
    """Where to look for a component that is not installed: the registry, when one is configured."""
    try:
        from ..registry._client import default_registry_url  # only on this error path: it imports httpx

        url = default_registry_url()
    except Exception:  # noqa: BLE001 - a broken registry config must not hide the real error
        url = None
    if url:
        return f"not installed; `collhub search {id}` looks for a plugin that provides it (registry {url})"
    return "run `collhub plugins list` to see installed components"
