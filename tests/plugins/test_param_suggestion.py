"""An unknown parameter close to a real one is answered with the real one (`rank` -> `ranks`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_unknown_param_suggests_the_close_one(tmp_path: Path) -> None:
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "hub.cli",
            "produce",
            "hub.ring",
            "--set",
            "collective=allreduce",
            "--set",
            "rank=8",
            "--out",
            "x",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert p.returncode == 2
    assert "rank: unknown parameter (did you mean ranks?)" in p.stderr.splitlines()[0]
    far = subprocess.run(
        [
            sys.executable,
            "-m",
            "hub.cli",
            "produce",
            "hub.ring",
            "--set",
            "collective=allreduce",
            "--set",
            "ranks=8",
            "--set",
            "zzz=1",
            "--out",
            "x",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert far.returncode == 2 and far.stderr.splitlines()[0].endswith("zzz: unknown parameter")
    assert "did you mean" not in far.stderr
