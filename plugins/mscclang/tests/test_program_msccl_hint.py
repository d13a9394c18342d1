"""An msccl-tools program (`from msccl.language import *`) on collhub's engine, without the
`msccl` package: one usage error that tells the two languages apart and how to run it."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

PROGRAM = """\
from msccl.language import *
from msccl.topologies import fully_connected
from msccl.language.collectives import AllReduce

with MSCCLProgram("allreduce_ring", fully_connected(4), AllReduce(4, 4, True), 1):
    pass
"""


@pytest.mark.skipif(importlib.util.find_spec("msccl") is not None, reason="msccl-tools is installed here")
def test_msccl_tools_program_explains_the_engines(tmp_path: Path) -> None:
    (tmp_path / "ring.py").write_text(PROGRAM)
    p = subprocess.run(
        [sys.executable, "-m", "hub.cli", "produce", "mscclang.program", "--set", "path=ring.py", "--out", "out"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert p.returncode == 2, p.stderr
    first, hint = p.stderr.splitlines()[:2]
    assert first.startswith("error: ring.py:1: this is an msccl-tools program") and "collhub_mscclang.lang" in first
    assert hint.startswith("hint:") and "engine=msccl" in hint and "msccl-tools" in hint
    assert not list(tmp_path.glob("out*")) and "Traceback" not in p.stderr
