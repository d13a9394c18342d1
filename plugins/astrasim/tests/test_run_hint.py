"""The missing-binary hint of `astrasim.run` names the binary of the backend asked for."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hub.algorithms import ring
from hub.chakra import write_algorithm


@pytest.mark.parametrize(
    ("backend", "named", "not_named"),
    [
        ("aware", "AstraSim_Analytical_Congestion_Aware", "Congestion_Unaware"),
        ("unaware", "AstraSim_Analytical_Congestion_Unaware", "Congestion_Aware "),
        ("auto", "AstraSim_Analytical_Congestion_Aware or /path/to/AstraSim_Analytical_Congestion_Unaware", None),
    ],
)
def test_missing_binary_hint_names_the_backend(tmp_path: Path, backend: str, named: str, not_named: str | None) -> None:
    write_algorithm(ring("allreduce", 4), tmp_path / "ring")
    env = {k: v for k, v in os.environ.items() if k != "COLLHUB_ASTRASIM_BIN"}
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "hub.cli",
            "consume",
            "astrasim.run",
            "ring",
            "--set",
            "network=ring:4",
            "--set",
            "size=1MiB",
            "--set",
            f"backend={backend}",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert p.returncode == 1 and p.stderr.startswith("error: no ASTRA-sim binary given"), p.stderr
    hint = p.stderr.splitlines()[1]
    assert named in hint and (not_named is None or not_named not in hint + " ")
