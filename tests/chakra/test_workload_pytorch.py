"""Reading real Chakra traces converted from PyTorch runs (../shared/data/chakra-pytorch).

Expected values come from the traces' NOTES.md (written from the files by their converter's
user, not by this code): node counts and collectives of dlrm8, the METADATA node and the
dangling dependency on node 0 of coll4/ddp2.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from hub.chakra import DanglingDependencyWarning, NodeType, read_workload, write_workload
from hub.chakra._workload_summary import workload_summary

TRACES = {"dlrm8": "dlrm8/dlrm", "coll4": "coll4/coll4", "ddp2": "ddp2/ddp2"}
RANKS = {"dlrm8": 8, "coll4": 4, "ddp2": 2}


def _prefix(shared_data: Path, name: str) -> Path:
    p = shared_data / "chakra-pytorch" / TRACES[name]
    if not Path(f"{p}.0.et").is_file():
        pytest.skip(f"{p}.0.et not in the shared data")
    return p


def _read(prefix: Path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        wl = read_workload(prefix)
    return wl, [w for w in caught if issubclass(w.category, DanglingDependencyWarning)]


@pytest.mark.parametrize("name", sorted(TRACES))
def test_reads_with_one_warning_for_dangling_deps(shared_data: Path, name: str) -> None:
    wl, caught = _read(_prefix(shared_data, name))
    assert wl.rank_count == RANKS[name]
    assert len(caught) == 1, "dangling dependencies are reported once per read"
    # NOTES.md: dlrm8 has two ctrl_deps per file on node 0; coll4/ddp2 at least one
    per_rank = [sum(1 for r, _n, _d in wl.dangling if r == rank) for rank in range(RANKS[name])]
    assert per_rank == [2] * 8 if name == "dlrm8" else min(per_rank) >= 1
    assert {d for _r, _n, d in wl.dangling} == {0}
    assert str(len(wl.dangling)) in str(caught[0].message)
    for nodes in wl.ranks:
        ids = {n.id for n in nodes}
        assert all(d in ids for n in nodes for d in n.deps), "no dependency on an absent node is kept"
    assert wl.metadata.get("schema", "").endswith("chakra.0.0.4")


def test_dlrm8_contents(shared_data: Path) -> None:
    wl, _ = _read(_prefix(shared_data, "dlrm8"))
    for nodes in wl.ranks:
        assert 1935 <= len(nodes) <= 1941
        colls = [n for n in nodes if n.type == NodeType.COLL]
        assert sorted((n.collective.value, n.comm_size) for n in colls) == sorted(
            [("alltoall", s) for s in (24576, 192, 1536, 13568, 24576)]
            + [("allreduce", s) for s in (1576964, 448, 907840)]
        )
        assert all(n.pg_name == "" for n in colls)
        # tensor descriptions are kept
        assert any(n.inputs and n.inputs.get("shapes") for n in nodes)


@pytest.mark.parametrize("name", ["coll4", "ddp2"])
def test_cpu_traces_metadata_and_groups(shared_data: Path, name: str) -> None:
    wl, _ = _read(_prefix(shared_data, name))
    for nodes in wl.ranks:
        meta = [n for n in nodes if n.type == NodeType.METADATA]
        assert len(meta) == 1 and meta[0].name == "## process_group:init ##"
        assert not any(n.type == NodeType.COLL for n in nodes)
    s = workload_summary(wl)
    assert [(g["pg_name"], g["group_size"]) for g in s["process_groups"]] == [("0", RANKS[name])]
    assert "gloo:all_reduce" in s["collectives_as_comp"]
    assert s["ops_by_type"]["METADATA"] == RANKS[name]


def test_rewrite_keeps_nodes_deps_and_tensors(shared_data: Path, tmp_path: Path) -> None:
    wl, _ = _read(_prefix(shared_data, "coll4"))
    write_workload(wl, tmp_path / "c")
    back, caught = _read(tmp_path / "c")
    assert not caught and not back.dangling
    for a, b in zip(wl.ranks, back.ranks, strict=False):
        assert [
            (n.id, n.type, sorted(n.deps), sorted(n.ctrl_deps), n.inputs, n.outputs, n.duration_micros) for n in a
        ] == [(n.id, n.type, sorted(n.deps), sorted(n.ctrl_deps), n.inputs, n.outputs, n.duration_micros) for n in b]


@pytest.mark.parametrize("name", sorted(TRACES))
def test_trace_show_cli(shared_data: Path, name: str) -> None:
    prefix = _prefix(shared_data, name)
    proc = subprocess.run(
        [sys.executable, "-m", "hub.cli", "trace", "show", str(prefix), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLLHUB_LOAD_PLUGINS": ""},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("warning:") == 1 and "Traceback" not in proc.stderr
    s = json.loads(proc.stdout)["summary"]
    assert s["ranks"] == RANKS[name] and s["dangling_dependencies"] > 0
    assert all(r["critical_path_us"] <= r["compute_us_cpu"] + r["compute_us_gpu"] for r in s["per_rank"])
    assert all(r["critical_path_us"] > 0 for r in s["per_rank"])
    if name == "dlrm8":
        assert sum(c["nodes"] for c in s["collectives"]) == 64
    text = subprocess.run(
        [sys.executable, "-m", "hub.cli", "trace", "show", str(prefix)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLLHUB_LOAD_PLUGINS": ""},
    )
    assert text.returncode == 0 and "crit. path" in text.stdout and "collectives" in text.stdout
