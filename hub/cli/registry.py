"""``collhub search | install | uninstall``: the client side of the plugin registry.

``collhub registry build|serve|check`` are not here: they come from the ``collhub-registry``
distribution (``registry/``) through the ``collhub_commands`` hook.
"""

from __future__ import annotations

import sys
from typing import Any

import typer

from ..errors import UsageError
from ._output import FORMAT_OPTION, OutputFormat, emit_json, err, out, table

__all__ = ["install_command", "search_command", "uninstall_command"]

REGISTRY_OPTION = typer.Option(
    None, "--registry", "-r", help="Registry URL (default: $COLLHUB_REGISTRY_URL or config)."
)


def _client(registry: str | None, offline: bool = False) -> Any:
    from ..registry import RegistryClient

    return RegistryClient(registry, offline=offline)


def search_command(
    query: str = typer.Argument("", help="Words to look for in names, summaries, keywords and components."),
    kind: str | None = typer.Option(None, "--kind", "-k", help="producer, transform or consumer."),
    collective: str | None = typer.Option(None, "--collective", "-c", help="e.g. allreduce, alltoall."),
    registry: str | None = REGISTRY_OPTION,
    offline: bool = typer.Option(False, "--offline", help="Use the cached index only."),
    fmt: OutputFormat = FORMAT_OPTION,
) -> None:
    """Search the plugin registry.

    Example: collhub search alltoall --kind producer
    """
    if kind and kind not in ("producer", "transform", "consumer"):
        raise UsageError(f"unknown kind {kind!r}", hint="one of producer, transform, consumer")
    with _client(registry, offline) as client:
        found = client.search(query, kind=kind, collective=collective)
    if fmt == OutputFormat.json:
        emit_json({"query": query, "results": [p.model_dump(mode="json") for p in found]})
        return
    rows = [(p.name, p.latest, ", ".join(c.id for c in p.components), p.summary) for p in found]
    out(table(["plugin", "latest", "components", "summary"], rows) if rows else "no plugin matches")


def install_command(
    requirements: list[str] = typer.Argument(..., help="NAME or NAME<spec>, e.g. collhub-mscclang>=0.1."),
    registry: str | None = REGISTRY_OPTION,
    upgrade: bool = typer.Option(False, "--upgrade", "-U", help="Upgrade already installed plugins."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Resolve and show what would be installed."),
    force: bool = typer.Option(False, "--force", help="Replace an editable (development) install without asking."),
    fmt: OutputFormat = FORMAT_OPTION,
) -> None:
    """Install plugins from the registry (sha256 and size verified before pip runs).

    A plugin installed here in editable mode (pip install -e) is replaced only after a yes on a
    terminal, or with --force.

    Example: collhub install collhub-mscclang
    """
    from ._output import is_tty

    def ask(question: str) -> bool:
        return sys.stdin.isatty() and is_tty() and typer.confirm(question, default=False, err=True)

    with _client(registry) as client:
        plans = client.install(requirements, upgrade=upgrade, dry_run=dry_run, force=force, confirm=ask)
    if dry_run:
        from ..registry._editable import editable_location

        for p in plans:
            if (loc := editable_location(p.name)) is not None:
                err(
                    f"warning: {p.name} is installed here in editable mode from {loc}; installing would ask "
                    "first (or need --force)"
                )
    rows = [
        {
            "name": p.name,
            "version": p.version,
            "file": p.file.filename,
            "sha256": p.file.hashes.get("sha256"),
            "requires_hub": p.requires_hub,
        }
        for p in plans
    ]
    if fmt == OutputFormat.json:
        emit_json({"dry_run": dry_run, "plugins": rows})
        return
    out(table(["plugin", "version", "file"], [(r["name"], r["version"], r["file"]) for r in rows]))
    out("would install (dry run)" if dry_run else f"installed {len(rows)} plugin(s)")


def uninstall_command(
    names: list[str] = typer.Argument(..., help="Plugin distributions to remove."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation (regular installs)."),
    force: bool = typer.Option(False, "--force", help="Remove an editable (development) install without asking."),
    fmt: OutputFormat = FORMAT_OPTION,
) -> None:
    """Uninstall plugins (pip uninstall in this environment) and say what was removed.

    A name that is not installed here is refused (exit 3) before anything is removed. A plugin
    installed in editable mode (pip install -e) is removed only after a yes on a terminal, or
    with --force, as install does.

    Example: collhub uninstall collhub-mscclang
    """
    from importlib import metadata

    from ..errors import NotInstalledError
    from ..registry import uninstall
    from ..registry._editable import editable_location
    from ._output import is_tty

    if any(n.lower() == "collhub" for n in names):
        raise UsageError("refusing to uninstall collhub itself", hint="use pip uninstall collhub")
    found: list[tuple[str, str, str | None]] = []  # (name, version, editable source)
    missing = []
    for n in dict.fromkeys(names):
        try:
            found.append((n, metadata.version(n), editable_location(n)))
        except metadata.PackageNotFoundError:
            missing.append(n)
    if missing:
        installed = sorted(
            {
                d.metadata["Name"]
                for d in metadata.distributions()
                if str(d.metadata["Name"] or "").startswith("collhub-")
            }
        )
        from .._suggest import did_you_mean

        # compared without the shared "collhub-" prefix, which would make any two names look alike
        bare = {n.removeprefix("collhub-"): n for n in installed}
        near = did_you_mean(missing[0].removeprefix("collhub-"), list(bare))
        guess = bare[near] if near else None
        raise NotInstalledError(
            f"not installed here: {', '.join(missing)} (nothing was removed)",
            hint=(f"did you mean {guess}? " if guess else "")
            + ("installed plugins: " + ", ".join(installed) if installed else "no collhub plugin is installed"),
        )
    interactive = sys.stdin.isatty() and is_tty()
    editable = [(n, loc) for n, _v, loc in found if loc is not None]
    if editable and not force:
        where = "; ".join(f"{n} from {loc}" for n, loc in editable)
        if not interactive or not typer.confirm(
            f"{where} is installed in editable mode; uninstall anyway?", default=False, err=True
        ):
            raise UsageError(
                f"{where} is installed in editable mode (a checkout someone may be working in); nothing was removed",
                hint="pass --force to remove it anyway",
            )
    elif not yes and not force and interactive:
        typer.confirm(f"Uninstall {', '.join(n for n, _v, _l in found)}?", abort=True)
    uninstall([n for n, _v, _l in found])
    if fmt == OutputFormat.json:
        emit_json({"uninstalled": [{"name": n, "version": v, "editable": loc} for n, v, loc in found]})
        return
    for n, v, loc in found:
        out(
            f"uninstalled {n} {v}"
            + (f" (editable install from {loc}; the source directory is left alone)" if loc else "")
        )
