"""TACCL's own topology profiles and sketches, read as they are."""

from __future__ import annotations

from pathlib import Path

import pytest

from collhub_taccl import SynthesizeParams, load_taccl, synthesize
from hub.sim import simulate
from hub.verify import verify


def _topo_for(taccl_dir: Path, sketch: Path) -> Path:
    return taccl_dir / "topo" / ("topo-dgx2-1MB.json" if "dgx2" in sketch.name else "topo-ndv2-1MB.json")


def test_every_shared_file_loads(taccl_dir: Path) -> None:
    sketches = sorted((taccl_dir / "sketch").glob("*.json"))
    assert len(sketches) == 11
    for sk in sketches:
        net = load_taccl(_topo_for(taccl_dir, sk), sk)
        gpn = 16 if "dgx2" in sk.name else 8
        assert net.graph.npus % gpn == 0 and net.graph.npus >= gpn
    for topo in sorted((taccl_dir / "topo").glob("*.json")):
        one = taccl_dir / "sketch" / ("sk1-dgx2-n1.json" if "dgx2" in topo.name else "sk1-ndv2-n1.json")
        assert load_taccl(topo, one).graph.npus in (8, 16)


def test_ndv2_graph_follows_taccl_conventions(taccl_dir: Path) -> None:
    net = load_taccl(taccl_dir / "topo" / "topo-ndv2-1MB.json", taccl_dir / "sketch" / "sk1-ndv2-n2.json")
    g = net.graph
    # DGX-1: 32 directed NVLink pairs per node; relay {"0": [1]}: GPU 0 of each node -> GPU 1 of the other
    assert len(g.links) == 2 * 32 + 2
    remote = sorted((ln.src, ln.dst) for ln in g.links if ln.src // 8 != ln.dst // 8)
    assert remote == [(0, 9), (8, 1)]
    bw = {(ln.src, ln.dst): ln.bandwidth for ln in g.links}
    # 1 MB in beta us: 23 (double NVLink 0-1), 46 (single NVLink 0-2), 105 (IB, one link per NIC)
    for pair, beta in (((0, 1), 23), ((0, 2), 46), ((0, 9), 105)):
        assert bw[pair] == pytest.approx(1e6 / (beta * 1e-6) / 2**30)
    assert net.symmetries == [tuple((r + 8) % 16 for r in range(16))]


def test_switch_sketch_becomes_switch_devices(taccl_dir: Path) -> None:
    net = load_taccl(taccl_dir / "topo" / "topo-dgx2-1MB.json", taccl_dir / "sketch" / "sk1-dgx2-n2.json")
    assert net.graph.npus == 32 and net.graph.switches == 2 and net.chunkup == 2
    assert net.relay is not None and net.relay.enforce_ordering


@pytest.mark.parametrize(
    "sketch,collective",
    [
        ("sk1-ndv2-n1", "allgather"),
        ("sk1-ndv2-n1", "allreduce"),
        ("sk1-ndv2-n2", "allgather"),
        ("sk1-ndv2-n2", "alltoall"),
        ("sk3-ndv2-n2", "reducescatter"),
        ("sk1-dgx2-n1", "allgather"),
    ],
)
def test_synthesizes_from_taccl_files(taccl_dir: Path, sketch: str, collective: str) -> None:
    sk = taccl_dir / "sketch" / f"{sketch}.json"
    params = SynthesizeParams(
        collective=collective, topology=str(_topo_for(taccl_dir, sk)), sketch=str(sk), time_limit=20
    )
    alg = synthesize(params, progress=False)
    assert verify(alg).ok
    ex = dict(alg.meta.extra)
    assert ex["taccl.sketch"] == str(sk)
    net = load_taccl(_topo_for(taccl_dir, sk), sk)
    res = simulate(alg, net.graph, size=ex["taccl.size"], mode="aware")
    assert res.time_ns >= ex["taccl.lower_bound_ns"] * 0.999
