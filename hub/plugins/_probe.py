"""The child side of ``collhub plugins list``: load the plugins, describe them as JSON.

Run as ``python -m hub.plugins._probe OUT`` by :mod:`hub.cli._probe`, which explains why. It
imports no Typer (the CLI is not needed to describe plugins), so the child starts quickly.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["MARK", "component_dict", "describe"]

#: Prefix of the stderr lines that say which entry point is being imported.
MARK = "collhub-probe: loading "


def component_dict(spec: Any, *, schema: bool = False) -> dict[str, Any]:
    """A component descriptor as ``plugins list --format json`` / ``plugins info`` show it."""
    d: dict[str, Any] = {
        "id": spec.id,
        "kind": spec.kind,
        "plugin": spec.plugin,
        "distribution": spec.distribution,
        "summary": spec.summary,
        "collectives": sorted(spec.collectives),
        "capabilities": sorted(spec.capabilities),
        "min_ranks": spec.min_ranks,
        "max_ranks": spec.max_ranks,
        "factory": spec.factory if isinstance(spec.factory, str) else _qualname(spec.factory),
        "params": spec.params if isinstance(spec.params, str) else _qualname(spec.params),
        "since": spec.since,
    }
    if spec.kind == "consumer":
        d["inputs"] = sorted(getattr(spec, "inputs", ()))
    if spec.kind == "producer":
        d["output"] = getattr(spec, "output", "algorithm")
    if schema:
        from pydantic import BaseModel

        from ..errors import PluginError

        who = f"component {spec.id!r} (plugin {spec.plugin}, distribution {spec.distribution})"
        try:
            model = spec.load_params()
        except PluginError as exc:  # its module blocked past the import deadline
            raise type(exc)(f"{who}: {exc.message}", hint=exc.hint) from None
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise PluginError(
                f"{who}: its params model {spec.params!r} is not a pydantic model class",
                hint=f"this is a bug in {spec.distribution}; report it to its authors",
            )
        d["params_schema"] = model.model_json_schema()
    return d


def _qualname(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '?')}:{getattr(obj, '__qualname__', repr(obj))}"


def describe(manager: Any) -> dict[str, Any]:
    """The ``plugins list --format json`` document of ``manager`` plus refused and command rows."""
    commands = []
    for name, sub in manager.commands().items():
        text = getattr(getattr(sub, "info", None), "help", None) or ""
        commands.append([name, str(text).strip().splitlines()[0] if text else f"Commands of plugin {name}."])
    return {
        "plugins": [p.as_dict() for p in manager.plugins()],
        "components": [component_dict(c) for c in manager.components()],
        "broken": [b.as_dict() for b in manager.broken()],
        "skipped": [
            {"distribution": s.distribution, "version": s.version, "entry_point": s.label} for s in manager.skipped()
        ],
        "refused": manager.refused_commands(),
        "commands": commands,
    }


def _child(out: str) -> int:
    from ..errors import HubError
    from ._manager import create_manager

    def progress(cand: Any) -> None:
        sys.stderr.write(f"{MARK}{cand.distribution}\t{cand.version}\t{cand.label}\n")
        sys.stderr.flush()

    manager = create_manager(autoload=False)
    try:
        manager.load_entrypoints(progress=progress)
        doc: dict[str, Any] = describe(manager)
    except HubError as exc:  # strict mode re-raises a load error: hand it to the parent
        doc = {"error": {"type": type(exc).__name__, "message": exc.message, "hint": exc.hint}}
    Path(out).write_text(json.dumps(doc))
    return 0


if __name__ == "__main__":
    raise SystemExit(_child(sys.argv[1]))
