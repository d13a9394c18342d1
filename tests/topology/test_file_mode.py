"""Atomically written artifacts get the mode open() would give (0666 less the umask), not
mkstemp's 0600: traces, plots and exported files are shared like results are."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from hub.topology._base import atomic_write_text


def _open_mode() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def test_atomic_write_uses_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        assert stat.S_IMODE(atomic_write_text(tmp_path / "a.txt", "x").stat().st_mode) == 0o640
    finally:
        os.umask(old)
    assert stat.S_IMODE(atomic_write_text(tmp_path / "b.txt", "x").stat().st_mode) == 0o666 & ~old


def test_simulation_artifacts_are_readable(tmp_path: Path) -> None:
    from hub.algorithms import ring
    from hub.sim import simulate
    from hub.sim._views.trace import write_plot, write_trace

    res = simulate(ring("allreduce", 4), "ring:4", mode="aware", size="64KiB")
    want = _open_mode()
    assert stat.S_IMODE(write_trace(res, tmp_path / "t.json").stat().st_mode) == want
    assert stat.S_IMODE(write_plot(res, tmp_path / "t.png").stat().st_mode) == want
