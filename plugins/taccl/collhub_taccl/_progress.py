"""Progress of a long solve on a terminal: stage, incumbent, bound (rich, on stderr, TTY only)."""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import Any

__all__ = ["Progress"]


class Progress:
    """A one-line live status; a no-op unless stderr is a terminal."""

    def __init__(self, label: str, *, enabled: bool | None = None) -> None:
        self.label = label
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self._live: Any = None
        self._t0 = time.perf_counter()
        self._last = 0.0

    def __enter__(self) -> Progress:
        if self.enabled:
            from rich.console import Console
            from rich.live import Live

            self._live = Live("", console=Console(stderr=True), refresh_per_second=4, transient=True)
            self._live.__enter__()
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        if self._live is not None:
            self._live.__exit__(et, ev, tb)
            self._live = None

    def __call__(self, stage: str, incumbent: float | None = None, bound: float | None = None) -> None:
        if self._live is None:
            return
        now = time.perf_counter()
        if now - self._last < 0.2:
            return
        self._last = now

        def fmt(v: float | None) -> str:
            return "-" if v is None or abs(v) == float("inf") or v > 1e300 else f"{v:,.0f} ns"

        self._live.update(
            f"[bold]{self.label}[/bold]  {stage}  incumbent {fmt(incumbent)}  bound {fmt(bound)}"
            f"  {now - self._t0:.1f} s"
        )
