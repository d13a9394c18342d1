"""The ``collhub`` command line (Typer). The library never imports this package.

``main()`` is the console-script entry point; ``app`` is the Typer application (for
``typer.testing.CliRunner``). See ``docs/cli.md``. Plugin command groups (``collhub_commands``)
use the same output conventions through :data:`FORMAT_OPTION`, :class:`OutputFormat`,
:func:`out`, :func:`err`, :func:`emit_json` and :func:`table`, as ``collhub-registry`` does.
"""

from __future__ import annotations

from ._app import COMMANDS, Lazy, app
from ._output import FORMAT_OPTION, OutputFormat, emit_json, err, out, table

__all__ = ["COMMANDS", "FORMAT_OPTION", "Lazy", "OutputFormat", "app", "emit_json", "err", "main", "out", "table"]


def main(argv: list[str] | None = None) -> None:
    """Run ``collhub`` with ``argv`` (default: ``sys.argv[1:]``) and exit with its status."""
    app(args=argv, prog_name="collhub")
