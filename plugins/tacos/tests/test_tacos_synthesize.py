"""tacos.synthesize through the Python API: verified results, provenance, reproducibility."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from collhub_tacos import SynthesizeParams, greedy_allgather, network_of, synthesize, synthesize_schedule
from hub.chakra import Collective, NodeType, algorithm_summary
from hub.topology import load_topology
from hub.verify import verify

REPO = Path(__file__).resolve().parents[3]
RING_YML = REPO.parent / "shared" / "data" / "astra-sim" / "custom-ring-allreduce-8npus-1MB" / "network.yml"


def _extra(alg):  # noqa: ANN001, ANN202
    return dict(alg.meta.extra)


@pytest.mark.parametrize("collective", ["allgather", "reducescatter", "allreduce"])
@pytest.mark.parametrize(
    "topology,chunks,model",
    [
        ("torus:4x4", 2, "tacos"),
        ("mesh:4x4@bw=100/25,lat=500/2000", 2, "pipelined"),  # TACOS's Mesh2DHetero family
        ("dgx1", 3, "tacos"),
        ("fattree:2x4", 1, "pipelined"),  # switches unwound into NPU links
        ("ring:4,switch:2", 2, "tacos"),  # a multi-dimensional ASTRA-sim network
    ],
)
def test_small_cases_verify(collective: str, topology: str, chunks: int, model: str) -> None:
    alg = synthesize(
        SynthesizeParams(collective=collective, topology=topology, chunks=chunks, model=model, seeds=1, size="1MiB")
    )
    n = load_topology(topology).npus
    assert alg.collective == Collective.parse(collective) and alg.ranks == n
    assert alg.meta.size == 1 << 20 and alg.is_bound
    rep = verify(alg)  # independently of the producer's own check
    assert rep.ok, rep.summary()
    e = _extra(alg)
    assert e["tacos.verified"] is True and e["tacos.model"] == model and e["tacos.seed"] == 0
    assert e["lower_bound_us"] > 0 and e["model_makespan_us"] >= e["lower_bound_us"] - 1e-6
    assert e["bound_ratio"] == pytest.approx(e["model_makespan_us"] / e["lower_bound_us"], rel=1e-5)
    assert e["synthesis_s"] >= e["tacos.greedy_s"] >= 0


def test_network_yml_input() -> None:
    alg = synthesize(SynthesizeParams(collective="allgather", topology=str(RING_YML), chunks=2, seeds=1))
    assert alg.ranks == 8 and verify(alg).ok
    # a unidirectional 8-ring? ASTRA-sim rings are bidirectional: 2 in-links per NPU, 14 chunks each
    e = _extra(alg)
    assert e["tacos.links"] == 16
    assert e["lower_bound_us"] == pytest.approx(7 * (0.5 + (1 << 19) / (50 * (1 << 30) / 1e6)))


def test_fattree_unwinding_splits_ports() -> None:
    net = network_of(load_topology("fattree:2x4@bw=80,lat=100"))
    assert net.npus == 8 and net.links == 8 * 7 and net.unwound == 56
    # every NPU has one 80 GB/s port shared by its 7 peers; same-leaf: 2 hops, other leaf: 4 hops
    assert np.allclose(net.bandwidth, 80 / 7)
    same = (net.src // 4) == (net.dst // 4)
    assert np.allclose(net.latency[same], 200) and np.allclose(net.latency[~same], 400)


def test_reproducible_for_a_seed() -> None:
    net = network_of(load_topology("torus:6x6"))
    busy, delay = net.link_times_us(1 << 18, "tacos")
    runs = [greedy_allgather(net, 2, busy, delay, np.random.default_rng(s)) for s in (7, 7, 8)]
    a, b, c = runs
    for field in ("chunk", "link", "start"):
        assert np.array_equal(getattr(a, field), getattr(b, field))
    assert not all(np.array_equal(getattr(a, f), getattr(c, f)) for f in ("chunk", "link"))
    p = SynthesizeParams(collective="allreduce", topology="torus:4x4", chunks=2, seed=5, seeds=1)
    x, y = synthesize(p), synthesize(p)
    assert all(
        np.array_equal(g.peer, h.peer) and np.array_equal(g.src_off, h.src_off)
        for g, h in zip(x.graphs, y.graphs, strict=False)
    )


def test_every_transfer_respects_links_and_causality() -> None:
    """The schedule itself, checked against the network: one chunk at a time per link (tacos
    model), and a chunk leaves a rank only after it got there."""
    net = network_of(load_topology("mesh:3x5@bw=100/40,lat=300/900"))
    busy, delay = net.link_times_us(1 << 20, "tacos")
    s = greedy_allgather(net, 2, busy, delay, np.random.default_rng(1))
    got: dict[tuple[int, int], float] = {(c, c // 2): 0.0 for c in range(net.npus * 2)}
    for i in np.argsort(s.end, kind="stable").tolist():
        c, ln = int(s.chunk[i]), int(s.link[i])
        u, v = int(net.src[ln]), int(net.dst[ln])
        assert got[(c, u)] <= s.start[i] + 1e-9
        assert (c, v) not in got  # no NPU receives a chunk twice
        got[(c, v)] = float(s.end[i])
    assert len(got) == net.npus * net.npus * 2
    for ln in range(net.links):
        sel = np.sort(s.start[s.link == ln])
        assert np.all(np.diff(sel) >= busy[ln] - 1e-9)


def test_provenance_round_trips_through_et(tmp_path: Path) -> None:
    from hub.chakra import read_algorithm, write_algorithm

    alg = synthesize(SynthesizeParams(collective="allgather", topology="torus:4x4", seeds=1))
    write_algorithm(alg, tmp_path / "ag")
    back = read_algorithm(tmp_path / "ag")
    assert _extra(back)["model_makespan_us"] == _extra(alg)["model_makespan_us"]
    assert json.loads(json.dumps(algorithm_summary(back.meta, back.graphs)))["metadata"]["tacos.cost_model"].startswith(
        "link busy"
    )


def test_allgather_structure_one_recv_per_foreign_chunk() -> None:
    syn = synthesize_schedule(SynthesizeParams(collective="allgather", topology="torus:4x4", chunks=3))
    alg = synthesize(SynthesizeParams(collective="allgather", topology="torus:4x4", chunks=3))
    for g in alg.graphs:
        assert int((g.kind == NodeType.RECV).sum()) == 15 * 3
    assert syn.makespan_us == pytest.approx(_extra(alg)["model_makespan_us"])
