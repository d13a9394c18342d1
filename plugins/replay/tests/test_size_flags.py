"""`collhub consume replay.run -b/-e/-f`: nccl-tests' size flags become one launch over the sizes
(the consumer sweeps itself), with one table row per size, on real gloo processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from hub.algorithms import make
from hub.chakra import write_algorithm


def test_size_flags_sweep_in_one_launch(tmp_path: Path) -> None:
    write_algorithm(make("ring", "allreduce", 2), str(tmp_path / "ring"))
    cmd = [
        sys.executable,
        "-m",
        "hub.cli",
        "consume",
        "replay.run",
        str(tmp_path / "ring"),
        "--set",
        "backend=gloo",
        "--set",
        "iters=2",
        "--set",
        "native=false",
        "--set",
        "inplace=algorithm",
        "-b",
        "4K",
        "-e",
        "16K",
        "-f",
        "2",
        "--workdir",
        str(tmp_path / "w"),
        "--format",
        "json",
    ]
    p = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=180,
        env={k: v for k, v in os.environ.items() if k != "COLLHUB_DEBUG"},
    )
    assert p.returncode == 0, p.stderr
    res = json.loads(p.stdout)
    assert [row["size"] for row in res["details"]["rows"]] == [4096, 8192, 16384]
    assert [row["ip_wrong"] for row in res["details"]["rows"]] == [0, 0, 0]  # checked, and right


def test_size_takes_a_range_as_the_pipeline_matrix_does() -> None:
    import pytest
    from pydantic import ValidationError

    from collhub_replay._params import ReplayParams, sizes_of

    assert sizes_of(ReplayParams(size={"from": "1K", "to": "8K", "factor": 2})) == [1024, 2048, 4096, 8192]
    assert sizes_of(ReplayParams(size={"from": 1000, "to": 3000, "step": 1000})) == [1000, 2000, 3000]
    with pytest.raises(ValidationError, match=r"from \(8K\) is greater than to \(1K\)"):
        ReplayParams(size={"from": "8K", "to": "1K", "factor": 2})
