"""Optimality certificates: the exact cut bound against ForestColl's optima and a HiGHS LP, and
the certificate every hub.simulate result carries (bound_ns, time_over_bound, bound_term)."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

from hub.algorithms import make
from hub.sim import certify, cut_optimum, network_facts, simulate
from hub.topology import Link, LinkGraph, load_topology

DATA = Path(__file__).resolve().parents[4] / "shared" / "data" / "forestcoll" / "optimal.json"
ENTRIES = json.loads(DATA.read_text())["topologies"] if DATA.is_file() else []
pytestmark = pytest.mark.skipif(not ENTRIES, reason="shared ForestColl data not present")


def _graph(entry: dict) -> LinkGraph:
    lat = float(entry.get("link_latency_ns") or 0.0)
    links = [Link(a, b, float(w), lat) for a, b, w in entry["links"]]
    return LinkGraph(entry["gpus"], links, switches=entry["switches"], name=entry["name"])


def _entry(name: str) -> dict:
    return next(e for e in ENTRIES if e["name"] == name)


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["name"] for e in ENTRIES])
def test_cut_optimum_equals_forestcoll(entry: dict) -> None:
    g = _graph(entry)
    ag, rs = cut_optimum(g, verify=True), cut_optimum(g, reverse=True, verify=True)
    want = Fraction(*entry["optimal_allgather"]["x_star"])
    assert ag.x == want and ag.verified
    assert rs.x == Fraction(*entry["reduce_scatter_x_star"])
    # the certificate cut really has that ratio (recomputed here from the links)
    out = sum(Fraction(repr(float(w))) for a, b, w in entry["links"] if a in ag.cut and b not in ag.cut)
    assert Fraction(sum(1 for v in ag.cut if v < entry["gpus"]), 1) / out == want
    # ForestColl's own bottleneck cut has the same ratio; ingress is never above the cut bound
    s = set(entry["bottleneck_cut"]["S"] if isinstance(entry["bottleneck_cut"], dict) else entry["bottleneck_cut"])
    theirs = sum(Fraction(repr(float(w))) for a, b, w in entry["links"] if a in s and b not in s)
    assert Fraction(sum(1 for v in s if v < entry["gpus"]), 1) / theirs == want
    if entry["collhub_network"]:  # the preset builds the same network
        assert cut_optimum(load_topology(entry["collhub_network"]).to_link_graph()).x == want


def test_time_from_the_data() -> None:
    e = _entry("ring:8")
    c = certify(load_topology("ring:8"), "allgather", 64 << 20)
    assert c is not None and c.term == "bandwidth"
    assert c.bandwidth_ns == pytest.approx(e["optimal_allgather"]["time_ns_M_64MiB"])  # 546875 ns
    assert c.bound_ns == c.bandwidth_ns  # the cut term binds at 64 MiB
    ar = certify(load_topology("ring:8"), "allreduce", 64 << 20)
    assert ar is not None and ar.rs_plus_ag_ns == pytest.approx(e["allreduce_rs_plus_ag_time_ns_M_64MiB"])
    # on a regular network the all-reduce transmission bound is the classic 2(N-1)M/(N B_in)
    assert ar.bound_ns == pytest.approx(ar.rs_plus_ag_ns)


def test_allreduce_bound_is_not_rs_plus_ag_on_irregular_networks() -> None:
    # mesh:4x4: corner GPUs have 2 links, inner ones 4; 2(N-1)M / sum B_in = M/80 GB/s
    ar = certify(load_topology("mesh:4x4"), "allreduce", 64 << 20)
    assert ar is not None and ar.rs_plus_ag_ns is not None
    assert ar.bound_ns == pytest.approx(2 * 15 * (64 << 20) / (2400 * 2**30 / 1e9))
    assert ar.bound_ns < ar.rs_plus_ag_ns


def test_latency_binds_small_sizes() -> None:
    t = load_topology("torus:4x4")
    small, mid = certify(t, "allgather", 1024), certify(t, "allgather", 1 << 20)
    assert small is not None and small.term == "latency"
    # farthest GPU is 4 hops of 500 ns away; the 64-byte shard leaves a 200 GB/s GPU in < 1 ns
    assert small.bound_ns == 2000  # (64 / 200 GB/s rounds down to 0 ns, as the simulator does)
    assert mid is not None and mid.term in ("both", "bandwidth") and mid.bound_ns >= mid.bandwidth_ns


def _lp_optimum(g: LinkGraph, reverse: bool = False) -> float:
    """x* by linear programming (HiGHS), independently of the max-flow search: minimise x such
    that for every sink v each other GPU can send one unit to v within capacities x*b_e."""
    highspy = pytest.importorskip("highspy")
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)  # one process-wide HiGHS scheduler: collhub-taccl uses 1 thread
    n, dev = g.npus, g.devices
    links = [(ln.dst, ln.src, ln.bandwidth) if reverse else (ln.src, ln.dst, ln.bandwidth) for ln in g.links]
    inf = highspy.kHighsInf
    h.addVar(0, inf)  # x
    h.changeColCost(0, 1.0)
    col = 1
    for v in range(n):
        f0 = col
        for _ in links:
            h.addVar(0, inf)
            col += 1
        for e, (_a, _b, w) in enumerate(links):  # f_e - w x <= 0
            h.addRow(-inf, 0.0, 2, [f0 + e, 0], [1.0, -w])
        for u in range(dev):
            if u == v:
                continue
            idx, val = [], []
            for e, (a, b, _w) in enumerate(links):
                if a == u:
                    idx.append(f0 + e)
                    val.append(1.0)
                elif b == u:
                    idx.append(f0 + e)
                    val.append(-1.0)
            supply = 1.0 if u < n else 0.0  # out - in = 1 at a GPU, 0 at a switch
            h.addRow(supply, supply, len(idx), idx, val)
    h.run()
    return float(h.getSolution().col_value[0])


@pytest.mark.parametrize("name", ["ring:8", "switch:8", "fc:8", "torus:4x4", "forestcoll:a100x2", "forestcoll:mi250x1"])
def test_cut_optimum_equals_highs_lp(name: str) -> None:
    g = _graph(_entry(name))
    assert _lp_optimum(g) == pytest.approx(float(cut_optimum(g).x), rel=1e-7)
    assert _lp_optimum(g, reverse=True) == pytest.approx(float(cut_optimum(g, reverse=True).x), rel=1e-7)


def test_hand_made_network_dgx1_and_oversubscribed() -> None:
    for spec in ("dgx1", "fattree:4x4,spines=1", "mesh:3x5@bw=100/50"):
        g = load_topology(spec).to_link_graph()
        assert _lp_optimum(g) == pytest.approx(float(cut_optimum(g).x), rel=1e-7)


def test_simulate_reports_the_certificate() -> None:
    res = simulate(make("ring", "allgather", 8), "ring:8", size=64 << 20, mode="aware")
    c = certify(load_topology("ring:8"), "allgather", 64 << 20)
    assert c is not None and res.bound_ns == c.bound_ns
    m = res.metrics()
    assert m["bound_term"] == "bandwidth" and m["time_over_bound"] == pytest.approx(res.time_ns / c.bound_ns)
    assert m["time_over_bound"] > 1.9  # a one-way ring uses half of each GPU's ingress
    # 8 KiB: 1 KiB messages (20 ns on the wire), so no event truncates to t = 0 (ASTRA-sim aborts there)
    tiny = simulate(make("direct", "allgather", 8), "ring:8", size=8 << 10, mode="aware").metrics()
    assert tiny["bound_term"] == "latency" and tiny["time_over_bound"] >= 1


@pytest.mark.parametrize("alg", ["ring", "direct", "halving_doubling"])
@pytest.mark.parametrize("coll", ["allgather", "reducescatter", "allreduce"])
def test_no_schedule_beats_the_cut_bound_where_it_is_above_ingress(alg: str, coll: str) -> None:
    # 4 DGX-A100 boxes (ForestColl's example): the inter-box NICs bind, 1.26x the ingress bound
    g = _graph(_entry("forestcoll:a100x4"))
    facts = network_facts(g)
    assert facts.ag is not None and facts.ag.x == Fraction(3, 25)
    res = simulate(make(alg, coll, 32), g, size=32 << 20, mode="aware")
    assert res.bound_ns is not None and res.time_ns >= res.bound_ns
    assert res.bound_term == "bandwidth"
