"""Errors, workloads, the consumer, metrics and artifacts."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from hub.chakra import (
    AlgorithmMeta,
    Buffer,
    Collective,
    NodeType,
    RankGraphBuilder,
    Workload,
    WorkloadNode,
    build_algorithm,
)
from hub.errors import SimulationError, TopologyFormatError, UsageError
from hub.plugins import RunContext
from hub.sim import SimulateParams, parse_size, simulate, simulate_consumer

from ._algs import direct_alltoall, msccl_chain_allreduce, pipelined_ring_allreduce


def _pair(send_size: int, recv_size: int, tag: int = 0):
    b0, b1 = RankGraphBuilder(0), RankGraphBuilder(1)
    b0.send(1, src=(Buffer.INPUT, 0), size=send_size, tag=tag)
    b1.recv(0, dst=(Buffer.OUTPUT, 0), size=recv_size, tag=tag)
    return build_algorithm(AlgorithmMeta(Collective.CUSTOM, 2, 1, 1), [b0, b1])


def test_more_ranks_than_npus():
    with pytest.raises(SimulationError, match="16 ranks but topology"):
        simulate(pipelined_ring_allreduce(16, 1024, comps=False), "ring:8")


def test_size_mismatch_is_named():
    with pytest.raises(
        SimulationError, match="size mismatch: rank 1 node 0 receives 100 B but rank 0 node 0 sends 64 B"
    ):
        simulate(_pair(64, 100), "ring:2")


def test_unmatched_send():
    b0, b1 = RankGraphBuilder(0), RankGraphBuilder(1)
    b0.send(1, src=(Buffer.INPUT, 0), size=8)
    b1.comp(duration_micros=1)
    alg = build_algorithm(AlgorithmMeta(Collective.CUSTOM, 2, 1, 1), [b0, b1])
    with pytest.raises(SimulationError, match="unmatched SEND.*rank 0 node 0"):
        simulate(alg, "fc:2")


def test_deadlock_names_blocked_nodes_and_does_not_hang():
    bs = []
    for r in range(2):
        b = RankGraphBuilder(r)
        rv = b.recv(1 - r, dst=(Buffer.OUTPUT, 0), size=8)
        b.send(1 - r, src=(Buffer.INPUT, 0), size=8, deps=[rv])
        bs.append(b)
    alg = build_algorithm(AlgorithmMeta(Collective.CUSTOM, 2, 1, 1), bs)
    with pytest.raises(
        SimulationError, match=r"deadlock: 4 of 4 nodes never complete; 2 RECV\(s\) wait.*rank 0 node 0"
    ):
        simulate(alg, "ring:2", mode="aware")


def test_tag_separates_messages():
    with pytest.raises(SimulationError, match="unmatched|deadlock"):
        b0, b1 = RankGraphBuilder(0), RankGraphBuilder(1)
        b0.send(1, src=(Buffer.INPUT, 0), size=8, tag=1)
        b1.recv(0, dst=(Buffer.OUTPUT, 0), size=8, tag=2)
        simulate(build_algorithm(AlgorithmMeta(Collective.CUSTOM, 2, 1, 1), [b0, b1]), "ring:2")


def test_aware_refuses_multidim():
    with pytest.raises(SimulationError, match="1-D dimensional topologies only") as ei:
        simulate(pipelined_ring_allreduce(4, 1024, comps=False), "ring:2,ring:2", mode="aware")
    assert "to_link_graph" in (ei.value.hint or "")


def test_multidim_aware_on_link_graph_works():
    from hub.topology import load_topology

    g = load_topology("ring:2,ring:4").to_link_graph()
    assert simulate(pipelined_ring_allreduce(8, 1024, comps=False), g, mode="aware").time_ns > 0


def test_unbound_without_size():
    b0, b1 = RankGraphBuilder(0), RankGraphBuilder(1)
    b0.send(1, src=(Buffer.INPUT, 0))
    b1.recv(0, dst=(Buffer.OUTPUT, 0))
    alg = build_algorithm(AlgorithmMeta(Collective.ALLREDUCE, 2, 2, 2), [b0, b1])
    with pytest.raises(SimulationError, match="no message sizes"):
        simulate(alg, "ring:2")
    # bound with 1 MiB: one chunk = 512 KiB
    res = simulate(alg, "ring:2", size="1MiB")
    assert res.bytes == 524288 and res.size == 1 << 20


def test_bad_network_file(tmp_path):
    p = tmp_path / "network.yml"
    p.write_text("topology: Ring\nnpus_count: [ 8 ]\nbandwidth: [ 50 ]\nlatency: [ 500 ]\n")
    with pytest.raises(TopologyFormatError, match="'topology' must be a YAML list"):
        simulate(pipelined_ring_allreduce(8, 1024, comps=False), str(p))


def test_parse_size():
    assert parse_size("1MiB") == 1 << 20
    assert parse_size("64KB") == 64_000
    assert parse_size("2 GiB") == 2 << 30
    assert parse_size(4096) == parse_size("4096B") == 4096
    assert parse_size("1M") == 1 << 20 and parse_size("2.2MB") == 2_200_000  # the core grammar (tests/test_units.py)
    for bad in ("abc", "-5", "1.5B"):
        with pytest.raises(UsageError):
            parse_size(bad)


def test_params_forbid_extra_and_check_size():
    with pytest.raises(ValidationError):
        SimulateParams(network="ring:8", bogus=1)
    with pytest.raises(ValidationError):
        SimulateParams(network="ring:8", size="12 parsecs")
    assert SimulateParams(network="ring:8").mode == "auto"  # aware where it applies (docs/simulator.md)


def test_metrics_nccl_conventions():
    res = simulate(pipelined_ring_allreduce(8, 131072, comps=False), "ring:8")
    assert res.time_ns == 41174
    S = 8 * 131072
    assert res.algbw_GBps == pytest.approx(S / 41174)
    assert res.busbw_GBps == pytest.approx(S / 41174 * 2 * 7 / 8)
    # bidirectional ring all-reduce bound (conventions.md §3.3): (p-1) M / (p B)
    assert res.bound_ns == pytest.approx(7 * S / (8 * 50 * 2**30 / 1e9))
    assert res.metrics()["time_over_bound"] == pytest.approx(41174 / res.bound_ns)
    a2a = simulate(direct_alltoall(8, 131072), "ring:8")
    assert a2a.busbw_GBps == pytest.approx(S / 4441 * 7 / 8)


def test_critical_path_of_chain():
    res = simulate(msccl_chain_allreduce(8, 131072, comp_us=7), "ring:8")
    kinds = [e["kind"] for e in res.critical_path]
    assert res.critical_path[-1]["end_ns"] == 90174
    assert kinds.count("COMP") == 7 and kinds.count("SEND") == 14


def test_reduction_cost():
    # unset COMP durations: 1 ns by default, bytes / GBps when reduction_GBps is given
    b0, b1 = RankGraphBuilder(0), RankGraphBuilder(1)
    b0.send(1, src=(Buffer.INPUT, 0), size=1000)
    rv = b1.recv(0, dst=(Buffer.OUTPUT, 0), size=1000)
    b1.comp(deps=[rv], size=1000)
    alg = build_algorithm(AlgorithmMeta(Collective.CUSTOM, 2, 1, 1), [b0, b1])
    base = int(500 + 1000 / (50 * 2**30 / 1e9))
    assert simulate(alg, "ring:2").time_ns == base + 1
    assert simulate(alg, "ring:2", reduction_GBps=10).time_ns == base + 100


def _coll(r, nid, deps=(), size=1 << 20):
    return WorkloadNode(id=nid, name="ar", type=NodeType.COLL, deps=list(deps), comm_type=0, comm_size=size)


def test_workload_single_collective(astrasim_example):
    from hub.chakra import read_algorithm

    alg = read_algorithm(astrasim_example / "algorithm" / "custom_allreduce")
    wl = Workload.single_collective(Collective.ALLREDUCE, 8, 1 << 20)
    res = simulate(wl, "ring:8", algorithm_for={"allreduce": alg})
    assert res.time_ns == 90174


def test_workload_resources():
    alg = pipelined_ring_allreduce(2, 1000, comps=False)  # 2 messages per rank, each floor(500 + 1000/B')
    msg = int(500 + 1000 / (50 * 2**30 / 1e9))
    ranks = []
    for r in range(2):
        ranks.append(
            [
                WorkloadNode(id=0, name="c1", type=NodeType.COMP, duration_micros=5),
                WorkloadNode(id=1, name="c2", type=NodeType.COMP, duration_micros=3),  # waits: one GPU COMP at a time
                WorkloadNode(id=2, name="cpu", type=NodeType.COMP, duration_micros=7, is_cpu_op=True),  # own resource
                _coll(r, 3),  # overlaps the COMPs (comm resource)
                _coll(r, 4),  # waits for the first collective: one SEND-or-COLL in flight
            ]
        )
    res = simulate(Workload(ranks=ranks), "ring:2", algorithm_for={"allreduce": alg})
    assert res.time_ns == max(8000, 7000, 2 * 2 * msg)
    # a dependency chain: COMP then the collective
    ranks2 = [
        [WorkloadNode(id=0, name="c", type=NodeType.COMP, duration_micros=5), _coll(r, 1, deps=[0])] for r in range(2)
    ]
    assert simulate(Workload(ranks=ranks2), "ring:2", algorithm_for={"allreduce": alg}).time_ns == 5000 + 2 * msg


def test_consumer_artifacts(tmp_path):
    params = SimulateParams(network="ring:8", mode="aware", trace=True, plot=True)
    out = simulate_consumer(pipelined_ring_allreduce(8, 131072, comps=True), params, RunContext(workdir=tmp_path))
    assert out.component == "hub.simulate" and out.metrics["time_ns"] == 41181
    trace = json.loads((tmp_path / out.artifacts["trace"].split("/")[-1]).read_text())
    xs = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert len(xs) == 8 * (14 + 14 + 7) and {e["pid"] for e in xs} == set(range(8))
    assert (tmp_path / out.artifacts["plot"].split("/")[-1]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert out.details["links"] and out.details["rank_finish_ns"] == [41181] * 8
    assert not list(tmp_path.glob(".*tmp*"))


def test_program_names_the_first_rank_with_a_dependency_outside_it():
    from hub.chakra import Algorithm
    from hub.sim._engine.program import program_from_algorithm

    alg = pipelined_ring_allreduce(4, 1024, comps=False)
    graphs = [g.copy() for g in alg.graphs]
    bad = graphs[2].dep_pos.copy()
    bad[-1] = len(graphs[2])  # one past the rank's last node
    for r in (2, 3):  # two ranks share the bad array: the first is named
        graphs[r].dep_pos = bad
    with pytest.raises(SimulationError, match=r"^rank 2: a dependency points outside the rank's \d+ nodes"):
        program_from_algorithm(Algorithm(alg.meta, tuple(graphs)))


def test_program_columns_match_the_rank_graphs():
    import numpy as np

    from hub.sim._engine.program import program_from_algorithm

    alg = pipelined_ring_allreduce(4, 1024, comps=True)
    prog = program_from_algorithm(alg)
    offsets = np.cumsum([0] + [len(g) for g in alg.graphs])
    for r, g in enumerate(alg.graphs):
        lo, hi = offsets[r], offsets[r + 1]
        assert (np.asarray(prog.rank[lo:hi]) == r).all()
        assert np.array_equal(np.asarray(prog.peer[lo:hi]), g.peer)
        assert np.array_equal(np.asarray(prog.local_id[lo:hi]), g.ids)
        assert np.array_equal(np.asarray(prog.indeg[lo:hi]), np.diff(g.dep_ptr))
        parents: dict[int, list[int]] = {}
        for p in range(lo, hi):  # the successor lists, transposed: each node's parents
            for c in prog.succ_idx[prog.succ_ptr[p] : prog.succ_ptr[p + 1]]:
                parents.setdefault(int(c) - lo, []).append(p - lo)
        for i in range(len(g)):
            assert sorted(parents.get(i, [])) == sorted(g.deps_of(i).tolist())
