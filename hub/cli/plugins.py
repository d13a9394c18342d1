"""``collhub plugins list | info | doctor | validate | new`` and the ``--version`` report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from ..errors import ComponentNotFoundError, ExitCode, UsageError
from ._output import FORMAT_OPTION, OutputFormat, emit_json, err, out, table, terminal_width

__all__ = ["app", "print_versions"]

app = typer.Typer(help="List, inspect, check and create plugins.", no_args_is_help=True, rich_markup_mode=None)


def _manager() -> Any:
    from ..plugins import get_manager

    return get_manager()


def _component_dict(spec: Any, *, schema: bool = False) -> dict[str, Any]:
    from ..plugins._probe import component_dict

    return component_dict(spec, schema=schema)


def print_versions() -> None:
    """``collhub --version``: the core and every plugin with version and location.

    The plugins are loaded in a child process (hub.cli._probe), so a plugin that hangs or ends
    the process at import cannot take ``--version`` with it."""
    import hub

    from ._probe import probe

    out(f"collhub {hub.__version__} at {Path(hub.__file__).parent}")
    try:
        doc = probe()
    except Exception as exc:  # noqa: BLE001 - --version must always answer
        err(f"error: cannot load plugins: {exc}")
        return
    for p in doc["plugins"]:
        if p["builtin"]:
            continue
        where = Path(p["location"]).parent if p["location"] else p["module"]
        out(f"  {p['name']}: {p['distribution']} {p['version']} at {where}")
    for b in doc["broken"]:
        out(f"  [broken] {b['entry_point']}: {b['distribution']} {b['version']}")


@app.command("list")
def list_plugins(
    kind: str | None = typer.Option(None, "--kind", "-k", help="Only producer, transform or consumer components."),
    fmt: OutputFormat = FORMAT_OPTION,
) -> None:
    """List plugins, their components, and plugins that failed to load.

    The plugins are loaded in a child process (see hub.cli._probe): nothing a plugin does at
    import (exit, sleep, crash, print) reaches this one.

    Example: collhub plugins list --kind producer
    """
    from ..errors import UsageError
    from ._app import store_command_cache
    from ._probe import probe

    kinds = ("producer", "transform", "consumer")
    if kind is not None and kind not in kinds:
        raise UsageError(f"unknown component kind {kind!r}", hint=f"use one of {', '.join(kinds)}")
    doc = probe()
    store_command_cache([(str(n), str(h)) for n, h in doc.get("commands", [])])
    comps = [c for c in doc["components"] if kind is None or c["kind"] == kind]
    if fmt == OutputFormat.json:
        emit_json({"plugins": doc["plugins"], "components": comps, "broken": doc["broken"], "skipped": doc["skipped"]})
    else:
        width = terminal_width()  # summaries are cut to fit; `plugins info ID` shows one whole
        out(
            table(
                ["plugin", "distribution", "version", "components", "commands"],
                [
                    (p["name"], p["distribution"], p["version"], len(p["components"]), ", ".join(p["commands"]) or "-")
                    for p in doc["plugins"]
                ],
                width=width,
            )
        )
        out()
        out(
            table(
                ["component", "kind", "collectives", "summary"],
                [(c["id"], c["kind"], ",".join(c["collectives"]) or "any", c["summary"]) for c in comps],
                width=width,
                wrap=(2,),
            )
        )
        if doc["broken"]:
            out()
            out(f"broken plugins ({len(doc['broken'])}):")
            for b in doc["broken"]:
                out(f"  {b['distribution']} {b['version']} [{b['entry_point']}]: {b['error']}")
    for s in doc["skipped"]:
        err(f"note: {s['distribution']} not loaded (COLLHUB_LOAD_PLUGINS / COLLHUB_DISABLE_PLUGINS)")
    for message in doc.get("refused", []):
        err(f"warning: {message}")


@app.command("info")
def info(
    target: str = typer.Argument(..., metavar="ID_OR_NAME", help="A component id (hub.ring) or a plugin name."),
    remote: bool = typer.Option(False, "--remote", help="Show the registry's entry for plugin NAME instead."),
    registry: str | None = typer.Option(
        None, "--registry", "-r", help="Registry URL for --remote (default: $COLLHUB_REGISTRY_URL or config)."
    ),
    fmt: OutputFormat = FORMAT_OPTION,
) -> None:
    """Show a component's summary, collectives and params JSON Schema, or a plugin's details.

    With --remote, show what the plugin registry knows about distribution NAME: every version
    (yanked, requires_hub, plugin API), its files with sha256 and size, and the components of
    the latest version's manifest.

    Example: collhub plugins info hub.simulate
    """
    if remote:
        _remote_info(target, registry, fmt)
        return
    if registry is not None:
        raise UsageError("--registry needs --remote", hint=f"collhub plugins info {target} --remote --registry URL")
    manager = _manager()
    by_name = {p.name: p for p in manager.plugins()}
    by_dist = {p.distribution.lower(): p for p in manager.plugins()}
    plugin = by_name.get(target) or by_dist.get(target.lower())
    if plugin is not None and target not in {c.id for c in manager.components()}:
        if fmt == OutputFormat.json:
            emit_json({"plugin": plugin.as_dict()})
            return
        for key, value in plugin.as_dict().items():
            out(f"{key:13} {', '.join(value) if isinstance(value, list) else value}")
        return
    try:
        spec = manager.component(target)
    except ComponentNotFoundError as exc:
        if "did you mean" not in (exc.hint or ""):
            exc.hint = "give a component id such as hub.ring or a plugin name; see `collhub plugins list`"
        raise
    d = _component_dict(spec, schema=True)
    if fmt == OutputFormat.json:
        emit_json({"component": d})
        return
    out(f"{d['id']} ({d['kind']}, plugin {d['plugin']} from {d['distribution']})")
    out(f"  {d['summary']}")
    out(f"  collectives: {', '.join(d['collectives']) or 'any'}")
    out(f"  ranks: {d['min_ranks']}..{d['max_ranks'] if d['max_ranks'] is not None else ''}")
    if "inputs" in d:
        out(f"  inputs: {', '.join(d['inputs'])}")
    out(f"  factory: {d['factory']}")
    out("  params:")
    schema = d["params_schema"]
    required = set(schema.get("required", []))
    rows = []
    for pname, prop in schema.get("properties", {}).items():
        typ = prop.get("type") or "|".join(x.get("type", "?") for x in prop.get("anyOf", [])) or prop.get("$ref", "?")
        default = "(required)" if pname in required else repr(prop.get("default"))
        rows.append((pname, typ, default, prop.get("description", "")))
    out(table(["name", "type", "default", "description"], rows, indent=4) if rows else "    (none)")


@app.command("doctor")
def doctor(fmt: OutputFormat = FORMAT_OPTION) -> None:
    """Re-validate every plugin: import each component's factory and params model (exit 4 on problems).

    Example: collhub plugins doctor
    """
    from pydantic import BaseModel

    manager = _manager()
    problems: list[dict[str, str]] = []
    for b in manager.broken():
        problems.append({"where": f"{b.distribution} {b.version} [{b.entry_point}]", "problem": b.message})
    for message in manager.refused_commands():
        problems.append({"where": "commands", "problem": message})
    checked = 0
    for spec in manager.components():
        checked += 1
        try:
            factory = spec.load_factory()
            if not callable(factory):
                raise TypeError(f"factory {spec.factory!r} is not callable")
            model = spec.load_params()
            if not (isinstance(model, type) and issubclass(model, BaseModel)):
                raise TypeError(f"params {spec.params!r} is not a pydantic model")
            if model.model_config.get("extra") != "forbid":
                raise TypeError(f"params model {model.__name__} must set extra='forbid' (typos must fail)")
            model.model_json_schema()
        except Exception as exc:  # noqa: BLE001 - report every component, keep going
            problems.append({"where": spec.id, "problem": f"{type(exc).__name__}: {exc}"})
    # Hook implementations without a spec (typos such as collhub_producer) never run.
    try:
        manager.pluggy_manager.check_pending()
    except Exception as exc:  # noqa: BLE001 - pluggy.PluginValidationError
        problems.append({"where": "hooks", "problem": str(exc)})
    if fmt == OutputFormat.json:
        emit_json(
            {"ok": not problems, "plugins": len(manager.plugins()), "components_checked": checked, "problems": problems}
        )
    else:
        out(f"{len(manager.plugins())} plugin(s), {checked} component(s) checked")
        for p in problems:
            out(f"  problem: {p['where']}: {p['problem']}")
    if problems:
        err(f"error: {len(problems)} plugin problem(s)")
        raise typer.Exit(ExitCode.PLUGIN)
    if fmt != OutputFormat.json:
        out("ok")


@app.command("new")
def new(
    name: str = typer.Argument(..., help="Plugin name: the prefix of its component ids (lowercase, _)."),
    directory: Path = typer.Option(Path("."), "--dir", "-d", help="Where to create collhub-<name>/."),
    fmt: OutputFormat = FORMAT_OPTION,
) -> None:
    """Create a new plugin package (pyproject with the collhub entry point, a producer, a test).

    Example: collhub plugins new myplugin --dir /tmp
    """
    from ..plugins._scaffold import scaffold_plugin

    files = scaffold_plugin(name, directory)
    root = files[0].parent
    if fmt == OutputFormat.json:
        emit_json({"created": str(root), "written": [str(f) for f in files]})
        return
    out(f"created {root}")
    for f in files:
        out(f"  {f.relative_to(root)}")
    out(f"next: cd {root} && pip install -e '.[test]' && pytest")
    out(f"publish: collhub plugins validate {root} --imports && collhub registry build {root} --out site")


def _remote_info(name: str, registry: str | None, fmt: OutputFormat) -> None:
    """``plugins info NAME --remote``: the registry's plugin document (``v1/plugins/<name>.json``)."""
    from ..registry import RegistryClient

    with RegistryClient(registry) as client:
        doc = client.plugin(name)
        base = client.base_url
    latest = doc.versions[doc.latest]
    plugin = latest.manifest.plugin
    components = [
        {"id": f"{plugin}.{c.name}", "kind": c.kind, "summary": c.summary, "collectives": list(c.collectives)}
        for c in latest.manifest.components
    ]
    if fmt == OutputFormat.json:
        emit_json(
            {
                "registry": base,
                "name": doc.name,
                "latest": doc.latest,
                "plugin": doc.model_dump(mode="json", by_alias=True),
                "components": components,
            }
        )
        return
    m = latest.manifest
    out(f"{doc.name} {doc.latest}" + (f" ({m.display_name})" if m.display_name else "") + f"  [{base}]")
    if latest.summary:
        out(f"  {latest.summary}")
    out(f"  plugin: {plugin}   lifecycle: {m.lifecycle}   keywords: {', '.join(m.keywords) or '-'}")
    out()
    rows = [
        (
            v,
            "yes" if e.yanked else "no",
            e.requires_hub or "any",
            e.api_version,
            e.requires_python or "any",
            len(e.files),
        )
        for v, e in _by_version(doc.versions)
    ]
    out(table(["version", "yanked", "requires_hub", "api", "python", "files"], rows))
    out()
    out(
        table(
            ["version", "file", "sha256", "size"],
            [
                (v, f.filename, f.hashes.get("sha256", "-"), f.size)
                for v, e in _by_version(doc.versions)
                for f in e.files
            ],
        )
    )
    out()
    out(f"components of {doc.latest}:")
    out(
        table(
            ["component", "kind", "collectives", "summary"],
            [(c["id"], c["kind"], ",".join(c["collectives"]) or "any", c["summary"]) for c in components],
            indent=2,
        )
    )


def _by_version(versions: dict[str, Any]) -> list[tuple[str, Any]]:
    """Newest first by PEP 440 ordering; unparsable versions last, as given."""
    from packaging.version import InvalidVersion, Version

    def key(item: tuple[str, Any]) -> tuple[int, Any]:
        try:
            return (0, Version(item[0]))
        except InvalidVersion:
            return (-1, item[0])

    return sorted(versions.items(), key=key, reverse=True)


@app.command("validate")
def validate(
    target: str = typer.Argument(
        ..., metavar="PATH|DIST", help="Plugin project directory, wheel file, or installed distribution name."
    ),
    imports: bool = typer.Option(
        False, "--imports", help="Also import the registration hooks and compare them with the manifest."
    ),
    fmt: OutputFormat = FORMAT_OPTION,
) -> None:
    """Check a plugin's collhub-plugin.toml (exit 3 on problems).

    Without --imports no plugin code runs. With --imports the plugin's entry-point module is
    registered in an isolated manager and every component it registers must appear in the
    manifest with the same kind, name and collectives, and vice versa.

    Example: collhub plugins validate plugins/astrasim --imports
    """
    from ..plugins._manifest import validate_plugin

    check = validate_plugin(target, imports=imports)
    if fmt == OutputFormat.json:
        emit_json(check.as_dict())
    else:
        what = f"{check.distribution or '?'} {check.version or ''}".rstrip()
        out(f"{what} ({check.source}: {check.target})")
        if check.manifest_file:
            out(f"  manifest: {check.manifest_file}")
        if check.manifest is not None:
            comps = check.manifest.components
            rows = [(f"{check.manifest.plugin}.{c.name}", c.kind, ",".join(c.collectives) or "any") for c in comps]
            out(
                f"  declares {len(comps)} component(s)"
                + (f"; the code registers {len(check.registered)}" if check.imports_checked else "")
            )
            if rows:
                out(table(["component", "kind", "collectives"], rows, indent=4))
        for p in check.problems:
            out(f"  problem: {p}")
    for w in check.warnings:
        err(f"warning: {w}")
    if not check.ok:
        err(f"error: {check.target}: {len(check.problems)} manifest problem(s)")
        raise typer.Exit(ExitCode.VALIDATION)
    if fmt != OutputFormat.json:
        out("ok" + (" (manifest matches the registered components)" if check.imports_checked else ""))
