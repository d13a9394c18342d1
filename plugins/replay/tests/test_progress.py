"""Progress of ``collhub consume replay.run`` (issue 30): the launch, each size and each timing
round on the CLI's transient line when a person watches a terminal (a real pseudo-terminal);
nothing of it with ``--format json`` or when the output is piped."""

from __future__ import annotations

import os
import select
import subprocess
import sys
from pathlib import Path

import pytest

from hub.algorithms import make
from hub.chakra import write_algorithm

pty = pytest.importorskip("pty")

# a short real replay: 2 gloo ranks, one small size, two iterations, two timing rounds
CONSUME = ["consume", "replay.run", "ring", "-s", "size=4KiB", "-s", "iters=2", "-s", "repeat=2"]
CONSUME += ["-s", "backend=gloo"]
STEPS = ("launching 2 gloo ranks", "size 4KiB (1/1)", "timing round 2/2")


def _on_terminal(args: list[str], cwd: Path) -> tuple[int, str]:
    master, slave = pty.openpty()
    env = {**os.environ, "TERM": "xterm", "COLUMNS": "400"}  # a pty has no size: no truncated line
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


@pytest.fixture
def ring(tmp_path: Path) -> Path:
    write_algorithm(make("ring", "allreduce", 2), str(tmp_path / "ring"))
    return tmp_path


def test_a_terminal_sees_the_launch_and_each_size(ring: Path) -> None:
    code, text = _on_terminal([*CONSUME, "--workdir", "w"], ring)
    assert code == 0, text
    for step in STEPS:
        assert step in text, (step, text)
    assert "replay.run: ring" in text and "busbw_GBps" in text  # the result is printed as before


def test_nothing_extra_in_json_or_piped_output(ring: Path) -> None:
    code, text = _on_terminal([*CONSUME, "--workdir", "j", "--format", "json"], ring)
    assert code == 0, text
    assert not any(step in text for step in ("launching", "timing round", "size 4KiB")), text
    piped = subprocess.run(
        [sys.executable, "-m", "hub.cli", *CONSUME, "--workdir", "p"],
        capture_output=True,
        text=True,
        cwd=ring,
        timeout=120,
    )
    assert piped.returncode == 0, piped.stderr
    assert piped.stderr == ""  # no progress, no control characters
    assert not any(step in piped.stdout for step in ("launching", "timing round", "(1/1)")), piped.stdout
