"""Broadcast and Reduce (NCCL's ring pipelines, ``broadcast.h`` / ``reduce.h``): verified with
semantics for several roots and protocols, and the pipeline's shape along each channel's ring."""

from __future__ import annotations

import pytest

from collhub_nccl._schedule import plan, schedule
from collhub_nccl._system import network_of, parse_system
from collhub_nccl._trees import gpu_rings
from hub.chakra import NodeType, Op
from hub.errors import AlgorithmError
from hub.sim import simulate
from hub.topology import load_topology
from hub.verify import verify

CASES = [
    ("hopper:8x2@nic=400G", 3 << 20, 5, None),
    ("ampere:1x5@nic=200G", (1 << 20) + 40, 3, "LL"),
    ("dgx-a100", 5 << 20, 7, "Simple"),
    ("dgx-a100", 5 << 20, 0, "LL128"),
]


@pytest.mark.parametrize("coll", ["broadcast", "reduce"])
@pytest.mark.parametrize(("system", "size", "root", "protocol"), CASES)
def test_verifies_and_simulates(coll: str, system: str, size: int, root: int, protocol: str | None) -> None:
    s = parse_system(system)
    p = plan(coll, s.ranks, size, gpus_per_node=s.gpus_per_node, system=s, root=root, protocol=protocol)
    assert p.algorithm == "Ring" and (protocol is None or p.protocol == protocol)
    alg = schedule(p)
    assert alg.meta.root == root and alg.meta.collective.value == coll
    rep = verify(alg)
    assert rep.ok and rep.complete, rep.summary()
    # a pipeline moves the buffer once over each of the n-1 ring edges that lead away from the root
    sent = sum(int(g.size[g.kind == int(NodeType.SEND)].sum()) for g in alg.graphs)
    assert sent == (s.ranks - 1) * p.size
    res = simulate(alg, load_topology(network_of(s)).to_link_graph(), mode="aware")
    assert res.time_ns > 0


def test_pipeline_roles_follow_the_ring() -> None:
    """Broadcast: the root only sends, the rank before it on the ring only receives; Reduce: the
    rank after the root only sends, the root only receives (reducing); one step per chunk."""
    s = parse_system("dgx-a100")
    for coll in ("broadcast", "reduce"):
        p = plan(coll, 8, 4 << 20, gpus_per_node=8, system=s, root=2, protocol="Simple")
        alg = schedule(p)
        rings = gpu_rings(8, 1, s.ring.channels, s.channels, same=True)
        for part in p.split.parts:
            order = rings[part.channel]
            ix = order.index(2)
            before, after = order[ix - 1], order[(ix + 1) % 8]
            for r, g in enumerate(alg.graphs):
                on = g.chan == part.channel
                kinds = {int(k) for k in g.kind[on]}
                if coll == "broadcast":
                    want = {int(NodeType.SEND)} if r == 2 else {int(NodeType.RECV)} if r == before else None
                else:
                    want = {int(NodeType.SEND)} if r == after else {int(NodeType.RECV)} if r == 2 else None
                if want is not None:
                    assert kinds == want, (coll, part.channel, r)
            recvs = alg.graphs[2].op[(alg.graphs[2].chan == part.channel) & (alg.graphs[2].kind == int(NodeType.RECV))]
            if coll == "reduce":
                assert set(recvs.tolist()) == {int(Op.REDUCE)}
            steps = -(-part.count * p.elem // part.chunk_bytes)
            assert int((alg.graphs[2].chan == part.channel).sum()) == steps


def test_bad_root_and_unmodelled_algorithm() -> None:
    with pytest.raises(AlgorithmError, match="root 8"):
        plan("broadcast", 8, 1 << 20, gpus_per_node=8, system="dgx-a100", root=8)
    with pytest.raises(AlgorithmError):
        plan("broadcast", 8, 1 << 20, gpus_per_node=8, system="dgx-a100", algorithm="Tree")
