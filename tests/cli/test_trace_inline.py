"""`collhub trace inline` as a real subprocess: inlining, and every bad-input problem at once (exit 3)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from hub.chakra import COMM_TYPE_OF, Collective, NodeType, Workload, WorkloadNode, read_trace, write_workload

AR, A2A = COMM_TYPE_OF[Collective.ALLREDUCE], COMM_TYPE_OF[Collective.ALLTOALL]


def _collhub(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hub.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env={**os.environ, "COLLHUB_LOAD_PLUGINS": ""},
    )


def test_inline_writes_a_plain_workload(tmp_path: Path) -> None:
    wl = Workload(
        ranks=[
            [
                WorkloadNode(id=0, name="c", type=NodeType.COMP, duration_micros=3),
                WorkloadNode(id=1, name="ar", type=NodeType.COLL, deps=[0], comm_type=AR, comm_size=4096),
            ]
            for _ in range(4)
        ]
    )
    write_workload(wl, tmp_path / "w")
    proc = _collhub("trace", "inline", "w", "out/w", "-a", "allreduce=direct", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "4 COMM_COLL nodes inlined" in proc.stdout
    back = read_trace(tmp_path / "out" / "w")
    assert isinstance(back, Workload)
    kinds = {nd.type for r in back.ranks for nd in r}
    assert NodeType.COLL not in kinds and {NodeType.SEND, NodeType.RECV} <= kinds


def test_a_producer_id_runs_through_the_plugin_manager(tmp_path: Path) -> None:
    # hub.workload never imports hub.plugins: the CLI hands it the manager's lookup, so a
    # registered producer id inlines the same nodes as the built-in name it registers
    wl = Workload(
        ranks=[[WorkloadNode(id=1, name="ar", type=NodeType.COLL, comm_type=AR, comm_size=4096)] for _ in range(4)]
    )
    write_workload(wl, tmp_path / "w")
    for alg, out in (("hub.direct", "by_id"), ("direct", "by_name")):
        proc = _collhub("trace", "inline", "w", f"out/{out}", "-a", f"allreduce={alg}", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
    by_id, by_name = (read_trace(tmp_path / "out" / n) for n in ("by_id", "by_name"))
    assert isinstance(by_id, Workload) and isinstance(by_name, Workload)
    assert [[(n.type, n.comm_size) for n in r] for r in by_id.ranks] == [
        [(n.type, n.comm_size) for n in r] for r in by_name.ranks
    ]
    assert any(n.type == NodeType.SEND for r in by_id.ranks for n in r)


def test_inline_with_overlap_cuts_the_producer(tmp_path: Path) -> None:
    wl = Workload(
        ranks=[
            [
                WorkloadNode(id=0, name="grad", type=NodeType.COMP, duration_micros=8),
                WorkloadNode(id=1, name="ar", type=NodeType.COLL, deps=[0], comm_type=AR, comm_size=4096),
            ]
            for _ in range(4)
        ]
    )
    write_workload(wl, tmp_path / "w")
    proc = _collhub("trace", "inline", "w", "out/w", "--overlap", "4", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    back = read_trace(tmp_path / "out" / "w")
    assert isinstance(back, Workload)
    pieces = [nd for nd in back.ranks[0] if nd.name.startswith("grad/piece")]
    assert [nd.duration_micros for nd in pieces] == [2, 2, 2, 2]
    proc = _collhub("trace", "inline", "w", "out/w", "--overlap", "0", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_inline_bad_input_lists_every_problem_exit_3(tmp_path: Path) -> None:
    ranks = [
        [
            WorkloadNode(id=5, name="a", type=NodeType.COLL, comm_type=AR, comm_size=64),
            WorkloadNode(id=6, name="b", type=NodeType.COLL, comm_type=AR),
        ],
        [WorkloadNode(id=7, name="a", type=NodeType.COLL, comm_type=A2A, comm_size=64)],
    ]
    write_workload(Workload(ranks=ranks, name="bad"), tmp_path / "bad")
    proc = _collhub("trace", "inline", "bad", "out/bad", cwd=tmp_path)
    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.startswith("error: ")
    assert "rank 0, node 6" in proc.stderr and "without comm_size" in proc.stderr
    assert "rank 1, node 7" in proc.stderr and "alltoall" in proc.stderr
    assert not (tmp_path / "out").exists(), "no half-written output"
