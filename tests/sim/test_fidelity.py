"""Reproduction of ASTRA-sim's analytical backends to the ns (astra-sim.md §7 and §9).

Expected values are the measured reference numbers of §9 or the closed forms of §7.4, evaluated
here with plain arithmetic (B' = bw * 2^30 / 1e9 B/ns; one truncation per message in the unaware
model, one per hop in the aware model).
"""

from __future__ import annotations

import math

import pytest

from hub.chakra import read_algorithm
from hub.sim import simulate
from hub.topology import load_topology

from ._algs import (
    comp_batch_case,
    direct_alltoall,
    late_recv_case,
    msccl_chain_allreduce,
    one_message,
    pipelined_ring_allreduce,
)

MODES = ("unaware", "aware")


def bprime(bw: float) -> float:
    return bw * 2**30 / 1e9


# -- (a) ASTRA-sim's own example -------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_astrasim_example_foreign_files(astrasim_example, mode):
    alg = read_algorithm(astrasim_example / "algorithm" / "custom_allreduce")
    res = simulate(alg, astrasim_example / "network.yml", mode=mode)
    assert res.time_ns == 90174  # §9 row 1: 14 x 2941 + 7 x 7000
    assert res.messages == 8 * 14
    assert res.rank_finish_ns == [90174] * 8  # every sys[i] prints the same T


@pytest.mark.parametrize("mode", MODES)
def test_astrasim_example_built_by_hand(mode):
    alg = msccl_chain_allreduce(8, 131072, comp_us=7)
    assert alg.node_count() == 8 * 35
    res = simulate(alg, "ring:8@bw=50,lat=500", mode=mode)
    assert res.time_ns == 14 * 2941 + 7 * 7000 == 90174


# -- (b) hand-made pipelined ring all-reduce ----------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_pipelined_ring_with_unit_comps(mode):
    assert simulate(pipelined_ring_allreduce(8, 131072, comps=True), "ring:8", size=None, mode=mode).time_ns == 41181


@pytest.mark.parametrize("mode", MODES)
def test_pipelined_ring_without_comps(mode):
    assert simulate(pipelined_ring_allreduce(8, 131072, comps=False), "ring:8", mode=mode).time_ns == 41174


@pytest.mark.parametrize("mode", MODES)
def test_msccl_chain_with_unit_comps_equals_pipelined(mode):
    # §9: the serialized chain with 1-ns COMPs gives the same 41181, because a send completes on arrival
    assert simulate(msccl_chain_allreduce(8, 131072, comp_us=0), "ring:8", mode=mode).time_ns == 41181


# -- (c) custom direct all-to-all table -------------------------------------------------------------
# The aware cells depend on the ETs' node order; these are the values the real binary gives for
# the files _algs.direct_alltoall writes (checked against it in test_oracle.py).
@pytest.mark.parametrize(
    "network, unaware, aware",
    [("ring:8", 4441, 25410), ("switch:8", 3441, 20528), ("fc:8", 2941, 2941)],
)
def test_direct_alltoall_table(network, unaware, aware):
    alg = direct_alltoall(8, 131072)
    assert simulate(alg, network, mode="unaware").time_ns == unaware
    assert simulate(alg, network, mode="aware").time_ns == aware


# -- (d) closed forms for other n, sizes, latencies ---------------------------------------------------
CASES = [(4, 1 << 20, 50.0, 500.0), (16, 3_000_000, 100.0, 250.0), (5, 999_999, 12.5, 1000.0), (12, 65536, 25.0, 0.0)]


@pytest.mark.parametrize("n, S, bw, lat", CASES)
@pytest.mark.parametrize("mode", MODES)
def test_ring_allreduce_on_ring_closed_form(n, S, bw, lat, mode):
    m = S // n
    alg = pipelined_ring_allreduce(n, m, comps=False)
    expected = 2 * (n - 1) * math.floor(lat + m / bprime(bw))
    assert simulate(alg, f"ring:{n}@bw={bw},lat={lat}", mode=mode).time_ns == expected


@pytest.mark.parametrize("n, S, bw, lat", CASES)
def test_ring_allreduce_on_switch_closed_forms(n, S, bw, lat):
    m = S // n
    alg = pipelined_ring_allreduce(n, m, comps=False)
    net = f"switch:{n}@bw={bw},lat={lat}"
    assert simulate(alg, net, mode="unaware").time_ns == 2 * (n - 1) * math.floor(2 * lat + m / bprime(bw))
    # aware: up- and down-link used once per step, no queueing; each hop truncated on its own
    assert simulate(alg, net, mode="aware").time_ns == 2 * (n - 1) * 2 * math.floor(lat + m / bprime(bw))


@pytest.mark.parametrize("n, S, bw, lat", CASES)
def test_direct_alltoall_fully_connected_aware(n, S, bw, lat):
    m = S // n
    expected = math.floor(lat + m / bprime(bw))
    assert simulate(direct_alltoall(n, m), f"fc:{n}@bw={bw},lat={lat}", mode="aware").time_ns == expected


@pytest.mark.parametrize("n", [8, 9, 16])
def test_unaware_ring_farthest_peer(n):
    m = 131072
    far = n // 2
    assert simulate(direct_alltoall(n, m), f"ring:{n}", mode="unaware").time_ns == math.floor(
        far * 500 + m / bprime(50)
    )


def test_aware_multihop_uncontended_costs_h_full_hops():
    # §7.3: an uncontended h-hop transfer costs h * floor(L + S/B') per hop in the aware model
    for dst in range(1, 5):
        alg = one_message(8, 0, dst, 100_000)
        assert simulate(alg, "ring:8", mode="aware").time_ns == dst * math.floor(500 + 100_000 / bprime(50))
        assert simulate(alg, "ring:8", mode="unaware").time_ns == math.floor(dst * 500 + 100_000 / bprime(50))


def test_aware_ring_tie_goes_clockwise():
    # 5 -> 1 on a ring of 8: both ways are 4 hops; clockwise is 5->6->7->0->1
    res = simulate(one_message(8, 5, 1, 4096), "ring:8", mode="aware")
    assert sorted(d["link"] for d in res.links) == sorted(["5->6", "6->7", "7->0", "0->1"])


# -- (e) multi-dimensional unaware: only the first differing dimension counts -------------------------
@pytest.mark.parametrize(
    "dst, expected_dim",
    [(47, 0), (46, 1), (32, 2), (1, 0), (14, 1)],
)
def test_multidim_first_differing_dimension(dst, expected_dim):
    topo = load_topology("ring:2@bw=200,lat=50,fc:8@bw=100,lat=500,switch:4@bw=50,lat=2000")
    assert topo.coords(47) == (1, 7, 2)
    S = 1_000_000
    hops = [1, 1, 2][expected_dim]
    bw, lat = [(200, 50), (100, 500), (50, 2000)][expected_dim]
    expected = math.floor(hops * lat + S / bprime(bw))
    assert simulate(one_message(64, 0, dst, S), topo, mode="unaware").time_ns == expected


def test_multidim_ring_dimension_uses_shorter_direction():
    topo = load_topology("fc:2,ring:8")  # NPU id = a + 2*b; b is the ring coordinate
    S = 200_000
    # 0 -> 2*6 = 12: ring coordinates 0 -> 6, shorter way is 2 hops
    assert simulate(one_message(16, 0, 12, S), topo).time_ns == math.floor(2 * 500 + S / bprime(50))
    # 0 -> 13: coordinates (0,0) -> (1,6): dimension 0 differs first, so 1 FC hop only
    assert simulate(one_message(16, 0, 13, S), topo).time_ns == math.floor(500 + S / bprime(50))


# -- (e) event-order rules, values measured on the real binaries (docs/simulator.md, rules 5 and 7) --
def test_comp_batch_rule():
    assert simulate(comp_batch_case(), "switch:4", mode="aware").time_ns == 15586


def test_late_recv_completes_by_event():
    assert simulate(late_recv_case(), "switch:4", mode="aware").time_ns == 16724
