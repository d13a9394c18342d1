"""The root ``collhub`` app: global options, lazily loaded command modules, plugin commands.

Start-up speed: ``collhub --help`` imports only Typer and this module. Each command group lives
in its own module, listed in :data:`COMMANDS` with a static one-line help, and is imported only
when invoked. Command groups from plugins (hook ``collhub_commands``) are listed from a small
cache keyed by the installed entry points. ``--help`` never imports plugin code: a plugin that
exits, sleeps or raises at import cannot hang or end it. The cache is written by any command
that loaded the plugins anyway (``plugins list``, ``run``, ...); until then help
says how to index the plugins' commands.

Adding a core command: add a :class:`Lazy` row to :data:`COMMANDS`; ``attr`` names either a
``typer.Typer`` (mounted as a group) or a plain function (mounted as a single command). A row
whose module cannot be found is left out of the listing rather than failing it. Groups shipped
by other first-party distributions (``collhub registry`` from ``collhub-registry``) are plugin
commands like any third party's; :data:`OPTIONAL_COMMANDS` only names the distribution to
install when one is missing.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer
from typer import core as typer_core

from ..errors import HubError
from . import _errors

__all__ = ["COMMANDS", "Lazy", "app"]


@dataclass(frozen=True)
class Lazy:
    """A command (group) imported on first use: ``collhub <name>`` -> ``module:attr``."""

    name: str
    module: str
    attr: str
    help: str


COMMANDS: tuple[Lazy, ...] = (
    Lazy("produce", "hub.cli.components", "produce", "Run a producer and write Chakra ET files."),
    Lazy("transform", "hub.cli.components", "transform", "Run a transform on Chakra ET files."),
    Lazy("consume", "hub.cli.components", "consume", "Run a consumer on Chakra ET files and print its result."),
    Lazy("run", "hub.cli.pipeline", "run_command", "Run a pipeline file."),
    Lazy("pipeline", "hub.cli.pipeline", "app", "Validate, inspect and graph pipeline files."),
    Lazy("report", "hub.cli.report", "report_command", "The best algorithm at each size of a run; MSCCL export."),
    Lazy("trace", "hub.cli.trace", "app", "Show, verify and convert Chakra ET traces."),
    Lazy("astra-sim", "hub.cli.astrasim", "astra_sim_command", "Drop-in for ASTRA-sim's analytical binaries."),
    Lazy("plugins", "hub.cli.plugins", "app", "List, inspect, check and create plugins."),
    Lazy("search", "hub.cli.registry", "search_command", "Search the plugin registry."),
    Lazy("install", "hub.cli.registry", "install_command", "Install plugins from the registry."),
    Lazy("uninstall", "hub.cli.registry", "uninstall_command", "Uninstall plugins."),
)
_BY_NAME = {c.name: c for c in COMMANDS}

#: command groups that first-party distributions outside the core add through ``collhub_commands``:
#: name -> the distribution to install (named in the error when the group is missing)
OPTIONAL_COMMANDS: dict[str, str] = {"registry": "collhub-registry", "nccl": "collhub-nccl"}
#: Their one-line help, shown by ``--help`` from the distribution's metadata alone (no plugin import)
#: until the plugin-command index exists.
_OPTIONAL_HELP: dict[str, str] = {
    "registry": "Build, serve and check a plugin registry.",
    "nccl": "NCCL's own algorithms: what NCCL would pick (explain, compare).",
}


def _installed_optional_commands() -> list[tuple[str, str]]:
    # the distributions come from the entry-point index: no metadata scan, no plugin import
    from ..plugins._index import entry_rows

    installed = {_norm(row.dist) for row in entry_rows("collhub")[0]}
    return [(n, _OPTIONAL_HELP.get(n, f"from {d}")) for n, d in OPTIONAL_COMMANDS.items() if _norm(d) in installed]


def _module_exists(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _to_click(obj: Any, name: str) -> Any:
    """A click command for a Typer app, a plain function or an existing click command."""
    if isinstance(obj, typer.Typer):
        # completion options belong to the top-level command only (Typer adds them to every app
        # it turns into a command unless told otherwise, plugins' apps included)
        if getattr(obj, "_add_completion", False):
            obj._add_completion = False
        cmd = typer.main.get_command(obj)
    elif hasattr(obj, "make_context") and hasattr(obj, "invoke"):
        cmd = obj
    elif callable(obj):
        single = typer.Typer(rich_markup_mode=None, add_completion=False)
        single.command(name=name)(obj)
        cmd = typer.main.get_command(single)
    else:
        raise TypeError(f"cannot mount {obj!r} as a command")
    cmd.name = name
    return cmd


# --------------------------------------------------------------------------- plugin commands
def _cache_file() -> Path:
    from ..plugins._index import cache_dir

    return cache_dir() / "commands-v1.json"


def _fingerprint() -> tuple[str, bool]:
    """A key over the installed ``collhub`` entry points, the stamp of the environment they were
    read from (see :mod:`hub.plugins._index`) and the loading env; and whether any is third-party."""
    from ..plugins._index import entry_rows

    allow_raw = os.environ.get("COLLHUB_LOAD_PLUGINS")
    block_raw = os.environ.get("COLLHUB_DISABLE_PLUGINS", "")
    allow = None if allow_raw is None else {_norm(x) for x in allow_raw.split(",") if x.strip()}
    block = {_norm(x) for x in block_raw.split(",") if x.strip()}
    rows, stamp = entry_rows("collhub")
    third_party = any(
        _norm(r.dist) != "collhub" and _norm(r.dist) not in block and (allow is None or _norm(r.dist) in allow)
        for r in rows
    )
    # the key itself, not a digest of it: equality is all a reader checks (and hashlib costs an import)
    return json.dumps([allow_raw, block_raw, sorted(rows), stamp], separators=(",", ":")), third_party


def _norm(name: str) -> str:
    from .._names import normalize_name  # (hub._names imports only re: the --help path stays light)

    return normalize_name(name.strip())


def plugin_command_summaries() -> list[tuple[str, str]] | None:
    """``(name, help)`` of plugin command groups from the cache; None when the cache does not match
    the installed plugins (help then imports nothing and says how to refresh it)."""
    key, third_party = _fingerprint()
    if not third_party:  # the core registers no commands: nothing to list
        return []
    try:
        data = json.loads(_cache_file().read_text())
        if data.get("key") == key:
            return [(str(n), str(h)) for n, h in data["commands"]]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def refresh_command_cache() -> None:
    """Write the command cache from the process-wide manager, if this process loaded it already."""
    import sys

    manager_module = sys.modules.get("hub.plugins._manager")
    if manager_module is None or getattr(manager_module, "_GLOBAL", None) is None:
        return
    store_command_cache(None)


def store_command_cache(rows: list[tuple[str, str]] | None) -> None:
    """Write ``rows`` (default: those of the process-wide manager) as the command cache, if stale."""
    try:
        key, _ = _fingerprint()
        path = _cache_file()
        try:
            if json.loads(path.read_text()).get("key") == key:
                return
        except (OSError, ValueError, AttributeError):
            pass
        if rows is None:
            rows = _load_plugin_commands()
        path.parent.mkdir(parents=True, exist_ok=True)
        from ..atomic import write_file

        write_file(path, json.dumps({"key": key, "commands": rows}))
    except Exception:  # noqa: BLE001 - best effort: a read-only home must not break the CLI
        pass


def _load_plugin_commands() -> list[tuple[str, str]]:
    from ..plugins import get_manager

    rows = []
    for name, sub in get_manager().commands().items():
        info = getattr(sub, "info", None)
        text = getattr(info, "help", None) or ""
        rows.append((name, str(text).strip().splitlines()[0] if text else f"Commands of plugin {name}."))
    return rows


def _plugin_command(name: str) -> Any:
    from ..plugins import get_manager

    manager = get_manager()
    for message in manager.refused_commands():
        if f"command {name!r}" in message:
            _errors.warn(message)
    sub = manager.commands().get(name)
    return None if sub is None else _to_click(sub, name)


# --------------------------------------------------------------------------- the root group
class CollhubGroup(typer_core.TyperGroup):
    """Root group: lazy built-in modules, plugin commands, and the single error handler."""

    def _lazy_names(self) -> list[str]:
        return [c.name for c in COMMANDS if c.name not in self.commands and _module_exists(c.module)]

    def list_commands(self, ctx: Any) -> list[str]:
        names = list(super().list_commands(ctx)) + self._lazy_names()
        try:
            names += [n for n, _ in plugin_command_summaries() or [] if n not in names]
        except Exception:  # noqa: BLE001 - listing must never fail because of a plugin
            pass
        return names

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        cmd = super().get_command(ctx, cmd_name)
        if cmd is not None:
            return cmd
        lazy = _BY_NAME.get(cmd_name)
        if lazy is not None and _module_exists(lazy.module):
            module = importlib.import_module(lazy.module)
            obj = getattr(module, lazy.attr, None)
            if obj is None:
                return None
            cmd = _to_click(obj, cmd_name)
            self.commands[cmd_name] = cmd
            return cmd
        try:
            return _plugin_command(cmd_name)
        except HubError:
            return None

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        # Static help strings: listing commands imports none of their modules.
        rows = [(n, c.get_short_help_str(60)) for n, c in self.commands.items() if not c.hidden]
        rows += [(c.name, c.help) for c in COMMANDS if c.name in self._lazy_names()]
        summaries: list[tuple[str, str]] | None
        try:
            summaries = plugin_command_summaries()
        except Exception:  # noqa: BLE001
            summaries = []
        plugin_rows = [r for r in summaries or [] if r[0] not in dict(rows)]
        if summaries is None:  # no index yet: first-party optional groups are known from metadata
            plugin_rows = _installed_optional_commands()
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)
        if plugin_rows:
            with formatter.section("Plugin commands"):
                formatter.write_dl(plugin_rows)
        if summaries is None:
            with formatter.section("Plugin commands" if not plugin_rows else "Other plugin commands"):
                formatter.write_text(
                    "not indexed yet: run `collhub plugins list` once to list the commands of "
                    "the installed plugins (help imports no plugin code)"
                )

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        dist = OPTIONAL_COMMANDS.get(args[0]) if args else None
        if dist is not None and self.get_command(ctx, args[0]) is None:
            from ..errors import UsageError

            raise UsageError(
                f"`collhub {args[0]}` comes from the {dist} distribution, which is not installed",
                hint=f"pip install {dist} (from a checkout: pip install -e {args[0]}/)",
            )
        try:
            return self._click_resolve_command(ctx, args)
        except typer_core._click.exceptions.UsageError as e:
            import difflib

            names = self.list_commands(ctx)
            matches = difflib.get_close_matches(args[0], names) if args else []
            if matches:
                e.message = f"{e.message.rstrip('.')}. Did you mean {', '.join(repr(m) for m in matches)}?"
            raise

    def make_context(self, info_name: Any, args: Any, parent: Any = None, **extra: Any) -> Any:
        # `collhub --bogus`: the top level's own usage errors in collhub's form too
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except typer_core._click.exceptions.NoArgsIsHelpError:
            raise
        except typer_core._click.exceptions.UsageError as exc:
            raise typer.Exit(_usage_error(exc)) from None

    def invoke(self, ctx: Any) -> Any:
        try:
            try:
                return super().invoke(ctx)
            finally:
                refresh_command_cache()
        except typer_core._click.exceptions.NoArgsIsHelpError:
            raise  # prints the help, as asked
        except typer_core._click.exceptions.UsageError as exc:
            raise typer.Exit(_usage_error(exc)) from None
        except (typer.Exit, typer.Abort, typer_core._click.exceptions.ClickException):
            raise
        except KeyboardInterrupt as exc:
            raise typer.Exit(_errors.report(exc)) from None
        except HubError as exc:
            raise typer.Exit(_errors.report(exc)) from None
        except Exception as exc:
            if _errors.debug_enabled():
                raise
            raise typer.Exit(_errors.report(exc)) from None


def _usage_error(exc: Any) -> int:
    """A command-line usage error (missing option, bad value, unknown command) in collhub's
    form: ``error: <command>: <message>`` and ``hint: ...`` on stderr, exit 2 (docs/cli.md)."""
    ctx = getattr(exc, "ctx", None)
    path = ctx.command_path if ctx is not None else "collhub"
    message = str(exc.format_message()).strip()
    message = message[:1].lower() + message[1:] if message[:2] != message[:2].upper() else message
    from ..errors import UsageError

    return _errors.report(UsageError(f"{path}: {message.rstrip('.')}", hint=f"see `{path} -h` for its usage"))


app = typer.Typer(
    name="collhub",
    cls=CollhubGroup,
    help="collhub: producers and consumers of collective algorithms meet on Chakra ET.",
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    add_completion=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version_callback(value: bool) -> None:
    if not value:
        return
    from .plugins import print_versions

    print_versions()
    raise typer.Exit()


@app.callback()
def _root(
    version: bool | None = typer.Option(
        None,
        "--version",
        "-V",
        help="Show collhub's and every plugin's version and location.",
        callback=_version_callback,
        is_eager=True,
    ),
    debug: bool = typer.Option(False, "--debug", help="Show full tracebacks on errors."),
) -> None:
    """collhub: producers and consumers of collective algorithms meet on Chakra ET."""
    _errors.STATE.debug = debug
    _one_line_warnings()


def _one_line_warnings() -> None:
    """Library warnings meant for users (e.g. a trace's dangling dependencies) as one
    ``warning: ...`` line on stderr, without Python's file/line decoration."""
    import warnings

    default = warnings.showwarning

    def show(message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
        if getattr(category, "__module__", "").startswith("hub."):
            typer.echo(f"warning: {message}", err=True)
        else:
            default(message, category, filename, lineno, file, line)

    warnings.showwarning = show
