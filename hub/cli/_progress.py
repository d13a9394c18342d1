"""Progress for single long commands: what runs and for how long, on a terminal only.

Rules (docs/cli.md, "Progress"): shown when both stdout and stderr are terminals (a person is
watching), never with ``--format json`` or when output is piped or redirected, and never with
``TERM=dumb``. It is one transient line on stderr (a spinner, the step, the seconds so far),
erased when the step ends, so what a command prints is the same with or without it.
``collhub run`` has its own bar over the points (hub/pipeline/_run/runner.py).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["progress_enabled", "working"]


def progress_enabled(json_output: bool = False) -> bool:
    """True when a person watches a terminal and the output is not JSON."""
    if json_output or os.environ.get("TERM") == "dumb":
        return False
    try:
        return sys.stdout.isatty() and sys.stderr.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False


@contextmanager
def working(what: str, *, json_output: bool = False) -> Iterator[Callable[[str], None]]:
    """Show ``what`` with a spinner and the elapsed time while the block runs (terminal only).
    Yields a function that adds a detail to the text (``update("size 3 of 8")``)."""
    if not progress_enabled(json_output):
        yield lambda _text: None
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task(what, total=None)

        def update(text: str) -> None:
            bar.update(task, description=f"{what}: {text}", refresh=True)  # a short step is seen too

        yield update
