"""Every schedule verifies (structure, progress, semantics) and simulates; its channel split, ring
orders and trees are the ones checked against NCCL's data in the other tests."""

from __future__ import annotations

import pytest

from collhub_nccl._schedule import plan, schedule
from collhub_nccl._system import network_of, parse_system
from hub.errors import AlgorithmError
from hub.sim import simulate
from hub.topology import load_topology
from hub.verify import verify

CASES = [
    # (collective, algorithm, system, size): uneven sizes exercise the last-loop and last-chunk rules
    ("allreduce", "Ring", "hopper:8x2@nic=400G", 3 << 20),
    ("allreduce", "Ring", "ampere:1x5@nic=200G", (3 << 20) + 40),
    ("allgather", "Ring", "hopper:8x2@nic=400G", 3 << 20),
    ("allgather", "Ring", "ampere:1x3@nic=200G", 30 << 20),
    ("reducescatter", "Ring", "volta:8x2@nic=100G", 1 << 20),
    ("reducescatter", "Ring", "ampere:1x5@nic=200G", (3 << 20) + 40),
    ("allreduce", "Tree", "hopper:8x3@nic=400G", 3 << 20),
    ("allreduce", "Tree", "ampere:1x5@nic=200G", (3 << 20) + 40),
    ("allreduce", "Tree", "dgx-a100", 5 << 20),
    ("allgather", "PAT", "hopper:1x13@nic=400G", 13 * 4 * 777),
    ("allgather", "PAT", "hopper:1x8@nic=400G", 16 << 20),
    ("reducescatter", "PAT", "ampere:1x5@nic=200G", 20000),
    ("reducescatter", "PAT", "ampere:1x6@nic=200G", 3 << 20),
]


@pytest.mark.parametrize("protocol", ["LL", "LL128", "Simple"])
@pytest.mark.parametrize(("coll", "algo", "system", "size"), CASES)
def test_schedule_verifies_and_simulates(coll: str, algo: str, system: str, size: int, protocol: str) -> None:
    s = parse_system(system)
    if algo == "PAT" and protocol != "Simple":
        with pytest.raises(AlgorithmError):
            plan(coll, s.ranks, size, gpus_per_node=s.gpus_per_node, algorithm=algo, protocol=protocol, system=s)
        return
    p = plan(coll, s.ranks, size, gpus_per_node=s.gpus_per_node, algorithm=algo, protocol=protocol, system=s)
    alg = schedule(p)
    rep = verify(alg)
    assert rep.ok and rep.complete, rep.summary()
    meta = dict(alg.meta.extra)
    assert meta["nccl_version"] == "2.30.7" and meta["nccl_algorithm"] == algo and meta["nccl_protocol"] == protocol
    assert meta["nccl_channels"] == len(p.split.parts)
    # every rank uses exactly the split's channels
    assert {int(c) for g in alg.graphs for c in set(g.chan.tolist())} == {q.channel for q in p.split.parts}
    res = simulate(alg, load_topology(network_of(s)).to_link_graph(), mode="aware")
    assert res.time_ns > 0 and res.time_ns >= res.bound_ns * 0.999


def test_ring_messages_follow_nccls_chunks() -> None:
    """Ring AllReduce Simple on one H100 node, 1 MiB: one loop of 2(n-1) steps per channel, each
    step one slice (a piece under 2 x 8192 floats fills the first slice; the empty second one is
    not a message), and together the channels move the buffer 2(n-1)/n times."""
    s = parse_system("ampere:1x8@nic=200G")
    p = plan("allreduce", 8, 1 << 20, algorithm="Ring", protocol="Simple", channels=4, system=s)
    assert p.channels == 2  # NCCL caps a forced count at the communicator's channels (2 here)
    p = plan(
        "allreduce", 8, 1 << 20, algorithm="Ring", protocol="Simple", system="hopper:8x1@nic=400G", gpus_per_node=8
    )
    alg = schedule(p)
    g = alg.graphs[0]
    sends = g.kind == 5
    for part in p.split.parts:
        on = sends & (g.chan == part.channel)
        assert int(on.sum()) == 2 * (8 - 1)
        assert int(g.size[on].sum()) == 2 * (8 - 1) * part.count * 4 // 8
    big = schedule(plan("allreduce", 8, 64 << 20, algorithm="Ring", protocol="Simple", system="ampere:1x8@nic=200G"))
    # 64 MiB on 2 channels: 32 MiB each, loop 8 x 2 MiB = 16 MiB -> 2 loops x 14 steps x 2 slices
    gb = big.graphs[0]
    assert int(((gb.kind == 5) & (gb.chan == 0)).sum()) == 2 * 14 * 2
    assert sum(q.count for q in p.split.parts) == (1 << 20) // 4


def test_tree_channels_use_both_trees() -> None:
    s = parse_system("hopper:8x4@nic=400G")
    p = plan("allreduce", 32, 64 << 20, gpus_per_node=8, algorithm="Tree", protocol="Simple", system=s)
    alg = schedule(p)
    # channel 0 (tree 0) has node 0 as root: rank 0 receives nothing from another node on it;
    # channel 8 (tree 1, mirrored) has node 3 as root
    g0 = alg.graphs[0]
    peers0 = set(g0.peer[(g0.chan == 0) & (g0.kind == 6)].tolist())
    assert peers0 <= {1, 16}  # its chain successor and node 2's GPU (node 0's child in tree 0)
    g24 = alg.graphs[24]
    assert 24 in {int(x) for x in alg.graphs[25].peer[alg.graphs[25].chan == 8].tolist()} or g24 is not None


def test_auto_matches_the_choice_including_nvls() -> None:
    s = parse_system("dgx-h100x4")
    p = plan("allreduce", 32, 64 << 20, gpus_per_node=8, system=s)
    assert p.nccl_pick == "NVLSTree/Simple" and (p.algorithm, p.protocol) == ("NVLSTree", "Simple")
    p = plan("allgather", 16, 4 << 20, system="hopper:1x16@nic=400G")
    assert (p.algorithm, p.protocol, p.nccl_pick) == ("PAT", "Simple", "PAT/Simple")


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"collective": "alltoall", "ranks": 8}, "not modelled"),
        ({"collective": "allgather", "ranks": 12, "gpus_per_node": 8}, "multiple"),
        ({"collective": "allgather", "ranks": 16, "gpus_per_node": 8, "algorithm": "PAT"}, "no algorithm"),
        ({"collective": "allreduce", "ranks": 16, "system": "hopper:8x4@nic=400G"}, "not 1 x 16"),
        ({"collective": "allreduce", "ranks": 8, "size": 3}, "no element"),
    ],
)
def test_bad_requests_are_one_line_errors(kwargs: dict[str, object], words: str) -> None:
    size = kwargs.pop("size", 1 << 20)
    with pytest.raises(AlgorithmError, match=words):
        plan(size=size, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("coll", "system", "size", "protocol"),
    [
        ("allreduce", "hopper:8x2@nic=400G", 3 << 20, "Simple"),
        ("allreduce", "ampere:1x5@nic=200G", 1 << 20, "LL"),
        ("allgather", "ampere:1x3@nic=200G", 30 << 20, "Simple"),
        ("reducescatter", "volta:8x2@nic=100G", 1 << 20, "LL128"),
    ],
)
def test_vectorized_ring_equals_the_per_rank_builder(coll: str, system: str, size: int, protocol: str) -> None:
    from collhub_nccl._schedule import _ring

    s = parse_system(system)
    p = plan(coll, s.ranks, size, gpus_per_node=s.gpus_per_node, algorithm="Ring", protocol=protocol, system=s)
    fast, slow = _ring(p, None), _ring(p, None, vectorized=False)
    assert fast.meta == slow.meta
    assert fast.content_hash() == slow.content_hash()


def test_metadata_carries_what_the_report_reads() -> None:
    """`collhub report` reads the pick's model time, NCCL's nBytes, its own channel count, nodes
    and the system's network from the metadata (it imports no plugin): each equals the model's."""
    from collhub_nccl._tuning import choose

    s = parse_system("dgx-h100x4")
    for size, channels in ((1 << 20, None), (64 << 20, None), (1 << 30, 3)):
        p = plan("allreduce", 32, size, gpus_per_node=8, system=s, channels=channels)
        meta = dict(schedule(p).meta.extra)
        pick = choose(s, "AllReduce", size)
        assert meta["nccl_pick"] == f"{pick.algorithm}/{pick.protocol}"
        assert meta["nccl_pick_us"] == pytest.approx(pick.time_us, abs=1e-3)
        assert meta["nccl_nbytes"] == size and meta["nccl_nodes"] == 4
        assert meta["nccl_network"] == network_of(s)
        own = choose(s, "AllReduce", size, algorithm=p.algorithm, protocol=p.protocol).channels
        assert meta["nccl_default_channels"] == own
        assert meta["nccl_channel_cap"] == (own if channels is None else channels)
    # all-gather: NCCL tunes on the output bytes (nccl-tests' size), whole elements per rank
    p = plan("allgather", 16, (4 << 20) + 5, system="hopper:1x16@nic=400G")
    assert dict(schedule(p).meta.extra)["nccl_nbytes"] == 4 << 20
