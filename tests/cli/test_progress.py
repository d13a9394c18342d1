"""Progress on single commands (issue 30): one transient line on a terminal, nothing with
``--format json``, nothing when piped. The terminal is a real pseudo-terminal (pty)."""

from __future__ import annotations

import os
import select
import subprocess
import sys
from pathlib import Path

import pytest

pty = pytest.importorskip("pty")

PRODUCE = ["produce", "hub.ring", "-s", "collective=allreduce", "-s", "ranks=8", "--out"]


def _on_terminal(args: list[str], cwd: Path) -> tuple[int, str]:
    master, slave = pty.openpty()
    env = {**os.environ, "TERM": "xterm"}
    p = subprocess.Popen(
        [sys.executable, "-m", "hub.cli", *args], stdout=slave, stderr=slave, stdin=subprocess.DEVNULL, cwd=cwd, env=env
    )
    os.close(slave)
    out = b""
    while select.select([master], [], [], 120)[0]:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    return p.wait(timeout=120), out.decode(errors="replace")


def test_a_terminal_sees_what_runs(tmp_path: Path) -> None:
    code, text = _on_terminal([*PRODUCE, "out/r"], tmp_path)
    assert code == 0
    assert "hub.ring: producing" in text and "writing out/r.<rank>.et" in text
    assert "wrote 8 file(s)" in text


def test_never_in_json_or_piped_output(tmp_path: Path) -> None:
    code, text = _on_terminal([*PRODUCE, "out/j", "--format", "json"], tmp_path)
    assert code == 0 and "producing" not in text
    piped = subprocess.run(
        [sys.executable, "-m", "hub.cli", *PRODUCE, "out/p"], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert piped.returncode == 0 and "producing" not in piped.stdout + piped.stderr
