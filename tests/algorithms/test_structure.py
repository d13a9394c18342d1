"""Structure by hand-derived counts: messages, sizes, dependencies and metadata."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hub.algorithms import direct, double_binary_tree, halving_doubling, hierarchical, make, ring
from hub.chakra import Buffer, Collective, NodeType, Op


def _kind(g, t: NodeType) -> np.ndarray:
    return np.flatnonzero(g.kind == t)


def _sends(g) -> np.ndarray:
    return _kind(g, NodeType.SEND)


@pytest.mark.parametrize("n", [2, 3, 8, 13])
@pytest.mark.parametrize("channels", [1, 2, 4])
def test_ring_allreduce_sends_per_rank_per_channel(n: int, channels: int) -> None:
    alg = ring("allreduce", n, channels=channels)
    for g in alg.graphs:
        for h in range(channels):
            sends = _sends(g)
            assert np.count_nonzero(g.chan[sends] == h) == 2 * (n - 1)
        # one cost-only COMP per reducing RECV: n-1 per channel
        comps = _kind(g, NodeType.COMP)
        assert len(comps) == channels * (n - 1)
        assert np.all(g.op[comps] == Op.NONE) and np.all(g.duration[comps] == -1)
        assert np.all(g.count[comps] == 1)
    assert alg.meta.in_chunks == alg.meta.out_chunks == n * channels


def test_ring_allreduce_pipeline_multiplies_messages() -> None:
    alg = ring("allreduce", 5, channels=2, pipeline=3, reduction_comp=False)
    g = alg.graphs[0]
    assert len(_sends(g)) == 2 * 3 * 2 * (5 - 1)
    assert len(_kind(g, NodeType.COMP)) == 0
    assert set(g.count[_sends(g)].tolist()) == {1}
    assert alg.meta.in_chunks == 5 * 2 * 3


def test_ring_allreduce_is_the_astrasim_pipelined_ring() -> None:
    """astra-sim.md §9: step k issues SEND(k) to r+1 and RECV(k) from r-1; SEND(k+1) depends on
    RECV(k) (on its COMP in the reduce-scatter half) and RECV(k+1) on RECV(k)."""
    n = 8
    alg = ring("allreduce", n)
    for r, g in enumerate(alg.graphs):
        sends, recvs = _sends(g), _kind(g, NodeType.RECV)
        assert len(sends) == len(recvs) == 2 * (n - 1)
        assert set(g.peer[sends].tolist()) == {(r + 1) % n}
        assert set(g.peer[recvs].tolist()) == {(r - 1) % n}
        assert g.deps_of(int(sends[0])).size == 0 and g.deps_of(int(recvs[0])).size == 0
        for k in range(2 * (n - 1) - 1):
            (dep_recv,) = g.deps_of(int(recvs[k + 1]))
            assert dep_recv == recvs[k]
            (dep_send,) = g.deps_of(int(sends[k + 1]))
            if k < n - 1:  # reduce-scatter half: the cost COMP of RECV(k)
                assert g.kind[dep_send] == NodeType.COMP and tuple(g.deps_of(int(dep_send))) == (recvs[k],)
                assert g.op[recvs[k]] == Op.REDUCE
            else:
                assert dep_send == recvs[k] and g.op[recvs[k]] == Op.COPY
        # every message gets its own tag, shared by the two ends
        assert len(set(g.tag[sends].tolist())) == 2 * (n - 1)


def test_ring_allreduce_1mib_on_8_ranks_has_131072_byte_messages() -> None:
    alg = ring("allreduce", 8).bind(1 << 20)
    assert alg.is_bound and alg.meta.size == 1 << 20
    for g in alg.graphs:
        comm = (g.kind == NodeType.SEND) | (g.kind == NodeType.RECV)
        assert set(g.size[comm].tolist()) == {131072}
        assert len(_sends(g)) == 14
    # the cost COMPs are sized by the chunk they reduce
    assert set(alg.graphs[0].size[_kind(alg.graphs[0], NodeType.COMP)].tolist()) == {131072}


def test_ring_channels_use_distinct_tags_and_chan() -> None:
    alg = ring("allreduce", 4, channels=2, bidirectional=True)
    g = alg.graphs[1]
    sends = _sends(g)
    assert set(g.chan[sends].tolist()) == {0, 1}
    assert set(g.peer[sends[g.chan[sends] == 0]].tolist()) == {2}
    assert set(g.peer[sends[g.chan[sends] == 1]].tolist()) == {0}  # counter-rotating
    tags0 = set(g.tag[sends[g.chan[sends] == 0]].tolist())
    tags1 = set(g.tag[sends[g.chan[sends] == 1]].tolist())
    assert not tags0 & tags1


@pytest.mark.parametrize("n", [2, 4, 7])
def test_ring_gather_scatter_counts(n: int) -> None:
    for coll in ("allgather", "reducescatter"):
        alg = ring(coll, n)
        assert all(len(_sends(g)) == n - 1 for g in alg.graphs)
    rs = ring("reducescatter", n)
    assert (rs.meta.in_chunks, rs.meta.out_chunks) == (n, 1)
    ag = ring("allgather", n)
    assert (ag.meta.in_chunks, ag.meta.out_chunks) == (1, n)


def test_ring_broadcast_chain() -> None:
    n, root = 6, 2
    alg = ring("broadcast", n, pipeline=4, root=root)
    assert alg.meta.root == root
    for r, g in enumerate(alg.graphs):
        expected_sends = 0 if r == (root - 1) % n else 4  # the last rank of the chain only receives
        assert len(_sends(g)) == expected_sends
        assert len(_kind(g, NodeType.RECV)) == (0 if r == root else 4)


def test_ring_alltoall_volume() -> None:
    n = 6
    alg = ring("alltoall", n)
    for g in alg.graphs:
        sends = _sends(g)
        assert len(sends) == n - 1
        # store and forward: step s carries n-s blocks, n(n-1)/2 in all
        assert sorted(g.count[sends].tolist()) == list(range(1, n))


@pytest.mark.parametrize("n", [2, 3, 9])
def test_direct_counts(n: int) -> None:
    a2a = direct("alltoall", n)
    for r, g in enumerate(a2a.graphs):
        assert len(_sends(g)) == n - 1
        assert sorted(g.peer[_sends(g)].tolist()) == sorted(set(range(n)) - {r})
    ar = direct("allreduce", n)
    assert all(len(_sends(g)) == 2 * (n - 1) for g in ar.graphs)
    gather = direct("gather", n, root=1)
    assert len(_kind(gather.graphs[1], NodeType.RECV)) == n - 1
    assert sum(len(_sends(g)) for g in gather.graphs) == n - 1


@pytest.mark.parametrize("n", [2, 4, 32])
def test_halving_doubling_steps_and_sizes(n: int) -> None:
    steps = int(math.log2(n))
    alg = halving_doubling("allreduce", n)
    for r, g in enumerate(alg.graphs):
        sends = _sends(g)
        assert len(sends) == 2 * steps
        # halving: n/2, n/4, ..., 1 chunks to r^(n/2), ...; doubling: 1, 2, ..., n/2 to r^1, ...
        halves = [n >> (i + 1) for i in range(steps)]
        assert g.count[sends].tolist() == halves + halves[::-1]
        assert g.peer[sends].tolist() == [r ^ d for d in halves + halves[::-1]]


@pytest.mark.parametrize("n", [2, 3, 8, 11])
def test_double_binary_tree_message_count(n: int) -> None:
    pipe = 3
    alg = double_binary_tree("allreduce", n, pipeline=pipe)
    # per tree and chunk every one of the n-1 edges carries one message up and one down
    assert alg.message_count() == 2 * pipe * 2 * (n - 1)
    assert alg.meta.in_chunks == 2 * pipe


@pytest.mark.parametrize(("n", "local"), [(8, 2), (16, 4), (12, 3)])
def test_hierarchical_allreduce_counts(n: int, local: int) -> None:
    nodes = n // local
    alg = hierarchical("allreduce", n, local_size=local)
    for r, g in enumerate(alg.graphs):
        sends = _sends(g)
        assert len(sends) == 2 * nodes * (local - 1) + 2 * (nodes - 1)
        inter = sends[(g.peer[sends] // local) != r // local]
        assert len(inter) == 2 * (nodes - 1)  # only the shards cross node boundaries
        assert set((g.peer[inter] % local).tolist()) <= {r % local}


def test_hierarchical_alltoall_inter_node_messages() -> None:
    n, local = 12, 3
    alg = hierarchical("alltoall", n, local_size=local)
    for r, g in enumerate(alg.graphs):
        sends = _sends(g)
        inter = sends[(g.peer[sends] // local) != r // local]
        assert len(inter) == n // local - 1 and set(g.count[inter].tolist()) == {local}


@pytest.mark.parametrize("name", ["ring", "direct", "halving_doubling", "double_binary_tree", "hierarchical"])
def test_out_of_place_never_writes_the_input(name: str) -> None:
    from hub.algorithms import CATALOG

    for coll in sorted(CATALOG[name]):
        alg = make(name, coll, 8, inplace=False)
        assert not alg.meta.inplace
        for g in alg.graphs:
            assert not np.any(g.dst_buf == Buffer.INPUT), (name, coll)


@pytest.mark.parametrize("name", ["ring", "direct", "halving_doubling", "double_binary_tree", "hierarchical"])
def test_reduction_comp_successors_depend_on_the_comp(name: str) -> None:
    alg = make(name, "allreduce", 4)
    for g in alg.graphs:
        reducing = _kind(g, NodeType.RECV)[g.op[_kind(g, NodeType.RECV)] == Op.REDUCE]
        comps = _kind(g, NodeType.COMP)
        comps = comps[g.op[comps] == Op.NONE]
        assert len(comps) == len(reducing) > 0
        for c in comps:
            (rv,) = g.deps_of(int(c))
            assert g.op[rv] == Op.REDUCE and g.count[c] == g.count[rv]
        sends = _sends(g)
        dep_targets = {int(d) for s in sends for d in g.deps_of(int(s))}
        assert not dep_targets & set(reducing.tolist())  # sends wait for the COMP, not the RECV
    bare = make(name, "allreduce", 4, reduction_comp=False)
    assert all(not np.any(g.kind == NodeType.COMP) for g in bare.graphs)


def test_meta_names_and_producers() -> None:
    for name in ("ring", "direct", "halving_doubling", "double_binary_tree", "hierarchical"):
        alg = make(f"hub.{name}", "all_reduce", 4)
        assert alg.meta.name == name and alg.meta.producer == f"hub.{name}"
        assert alg.meta.collective == Collective.ALLREDUCE and alg.meta.size is None
        assert not alg.is_bound


@pytest.mark.parametrize(("n", "local"), [(8, 2), (12, 3), (16, 8)])
@pytest.mark.parametrize("coll", ["reducescatter", "allgather", "alltoall"])
def test_hierarchical_one_phase_counts(n: int, local: int, coll: str) -> None:
    nodes = n // local
    alg = hierarchical(coll, n, local_size=local)
    for r, g in enumerate(alg.graphs):
        sends = _sends(g)
        assert len(sends) == nodes * (local - 1) + (nodes - 1)
        assert np.count_nonzero((g.peer[sends] // local) != r // local) == nodes - 1


@pytest.mark.parametrize("n", [3, 6, 7, 12])
def test_halving_doubling_allreduce_folds_in_extra_ranks(n: int) -> None:
    P = 1 << (n.bit_length() - 1)  # largest power of two below n
    extra = n - P
    steps = int(math.log2(P))
    alg = halving_doubling("allreduce", n)
    assert alg.meta.in_chunks == P and dict(alg.meta.extra)["folded"] == extra
    for r, g in enumerate(alg.graphs):
        sends = _sends(g)
        if r < 2 * extra and r % 2 == 0:  # folds in: whole vector to r+1, result back from r+1
            assert g.peer[sends].tolist() == [r + 1] and g.count[sends].tolist() == [P]
            assert g.peer[_kind(g, NodeType.RECV)].tolist() == [r + 1]
        else:
            unfold = 1 if r < 2 * extra else 0
            assert len(sends) == 2 * steps + unfold
            assert int(g.count[sends].sum()) == 2 * (P - 1) + unfold * P
