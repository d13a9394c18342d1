"""A rich progress bar on stderr, shown only on a terminal (never in logs or pipes)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["progress_bar"]

Update = Callable[[int, int], None]


@contextmanager
def progress_bar(label: str, enabled: bool | None, big: bool) -> Iterator[Callable[[str], Update] | None]:
    """Yield ``phase(name) -> update(done, total)`` while a bar is shown, else None.

    ``enabled`` None means: on a TTY and for a ``big`` problem.
    """
    show = (sys.stderr.isatty() and big) if enabled is None else (enabled and sys.stderr.isatty())
    if not show:
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as bar:

        def phase(name: str) -> Update:
            task = bar.add_task(f"{label}: {name}", total=1)

            def update(done: int, total: int) -> None:
                bar.update(task, completed=done, total=max(total, 1))

            return update

        yield phase
