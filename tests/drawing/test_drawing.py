"""DAG pictures: DOT, GraphML (read back by networkx, the library chakra_visualizer uses) and
SVG, from the library and from `collhub trace show --graph` (real subprocesses)."""

from __future__ import annotations

import io
import stat
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from hub.algorithms import direct, ring
from hub.chakra import NodeType, write_algorithm
from hub.drawing import to_dot, to_graphml, to_svg

COLLHUB = [sys.executable, "-m", "hub.cli"]


def _dep_count(alg, ranks) -> int:  # type: ignore[no-untyped-def]
    return sum(len(alg.graphs[r].dep_pos) for r in ranks)


def _sends(alg, ranks) -> int:  # type: ignore[no-untyped-def]
    return sum(int((alg.graphs[r].kind == NodeType.SEND).sum()) for r in ranks)


@pytest.mark.parametrize("rank", [None, 2])
def test_graphml_reads_back_in_networkx(rank: int | None) -> None:
    nx = pytest.importorskip("networkx")
    alg = direct("allreduce", 4)
    ranks = range(4) if rank is None else [rank]
    g = nx.read_graphml(io.StringIO(to_graphml(alg, rank)))
    assert g.number_of_nodes() == sum(len(alg.graphs[r]) for r in ranks)
    kinds = [d["kind"] for _, _, d in g.edges(data=True)]
    assert kinds.count("dep") == _dep_count(alg, ranks)
    assert kinds.count("message") == (_sends(alg, ranks) if rank is None else 0)
    for a, b, d in g.edges(data=True):
        if d["kind"] == "message":
            src, dst = g.nodes[a], g.nodes[b]
            assert (src["type"], dst["type"]) == ("SEND", "RECV")
            assert src["peer"] == dst["rank"] and dst["peer"] == src["rank"] and src["tag"] == dst["tag"]


def test_dot_has_every_node_and_edge() -> None:
    alg = ring("allreduce", 4)
    text = to_dot(alg)
    assert text.startswith('digraph "ring" {') and text.rstrip().endswith("}")
    assert text.count("fillcolor=") == alg.node_count()
    assert text.count("style=dashed") == _sends(alg, range(4))
    assert text.count(" -> ") == _dep_count(alg, range(4)) + _sends(alg, range(4))
    assert text.count("subgraph cluster_rank") == 4


def test_svg_is_svg() -> None:
    pytest.importorskip("matplotlib")
    root = ET.fromstring(to_svg(ring("allreduce", 4), rank=0))
    assert root.tag.endswith("svg")


def test_cli_draws_and_refuses_bad_requests(tmp_path: Path) -> None:
    write_algorithm(ring("allreduce", 4), tmp_path / "ring")
    run = lambda *a: subprocess.run([*COLLHUB, *a], capture_output=True, text=True, cwd=tmp_path, timeout=120)  # noqa: E731
    dot = run("trace", "show", "ring", "--graph", "dot", "--rank", "0")
    assert dot.returncode == 0 and dot.stdout.startswith("digraph") and "cluster_rank1" not in dot.stdout
    svg = run("trace", "show", "ring", "--graph", "svg", "-o", "ring.svg")
    if "needs matplotlib" not in svg.stderr:
        assert svg.returncode == 0 and ET.parse(tmp_path / "ring.svg").getroot().tag.endswith("svg")
        assert stat.S_IMODE((tmp_path / "ring.svg").stat().st_mode) & 0o044  # readable by others (umask permitting)
    bad = run("trace", "show", "ring", "--graph", "dot", "--rank", "9")
    assert bad.returncode == 2 and bad.stderr.startswith("error: rank 9 is out of range")
    assert "Traceback" not in bad.stderr
    assert run("trace", "show", "ring", "--graph", "png").returncode == 2
