"""The ``collhub`` command line (Typer). The library never imports this package.

``main()`` is the console-script entry point; ``app`` is the Typer application (for
``typer.testing.CliRunner``). See ``docs/cli.md``.
"""

from __future__ import annotations

from ._app import COMMANDS, Lazy, app

__all__ = ["COMMANDS", "Lazy", "app", "main"]


def main(argv: list[str] | None = None) -> None:
    """Run ``collhub`` with ``argv`` (default: ``sys.argv[1:]``) and exit with its status."""
    app(args=argv, prog_name="collhub")
