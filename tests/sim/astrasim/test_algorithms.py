"""ASTRA-sim's native algorithms (``ring``, ``direct``, ``halvingDoubling``, ``doubleBinaryTree``)
for every collective they serve on a 1-D network, against the real binaries on both backends:
every rank's finish time, to the ns. What is not reproduced is refused naming the key.

The oracle runs the astrasim plugin's bundle with ``native:<impl>`` and the same system settings.
"""

from __future__ import annotations

import math
import random
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from hub.chakra import COMM_TYPE_OF, Collective, NodeType, Workload, WorkloadNode, read_workload
from hub.errors import SimulationError
from hub.sim import simulate
from hub.sim._astrasim.double_binary_tree import tree
from tests.sim.difftest import oracle_rank_finish_ns, oracle_unavailable
from tests.workload.test_groups import _meta
from tests.workload.test_inline import DLRM

from .cases import random_setup
from .test_streams import _modes

AR, AG, RS, A2A = Collective.ALLREDUCE, Collective.ALLGATHER, Collective.REDUCESCATTER, Collective.ALLTOALL
STEM = {AR: "all-reduce", AG: "all-gather", RS: "reduce-scatter", A2A: "all-to-all"}
BASE: dict[str, Any] = {
    "preferred-dataset-splits": 1,
    "endpoint-delay": 10,
    "local-mem-bw": 1600,
    "active-chunks-per-dimension": 1,
    "collective-optimization": "baseline",
    "scheduling-policy": "FIFO",
}


def _real(wl: Workload, net: str, mode: str, system: dict[str, Any], impls: dict[Collective, str]) -> list[int]:
    return oracle_rank_finish_ns(wl, net, mode, system, {c.value: f"native:{i}" for c, i in impls.items()}, 120)


def _check(wl: Workload, net: str, over: dict[str, Any], impls: dict[Collective, str]) -> None:
    if (why := oracle_unavailable()) is not None:
        pytest.skip(why)
    system = {**BASE, **over}
    keys = {f"{STEM[c]}-implementation": [i] for c, i in impls.items()}
    # (a list in ``over`` is the system's own, one entry per dimension)
    ours_cfg = {**system, **{k: v for k, v in keys.items() if k not in over}}
    for mode in _modes(net):  # (the aware binary takes 1-D networks only)
        ours = simulate(wl, net, mode=mode, system=ours_cfg).rank_finish_ns
        assert ours == _real(wl, net, mode, system, impls), (mode, net, over, impls)


#: (n, size, network, system overrides): sizes not divisible by n or the splits, tiny chunks
#: (raised to one byte per NPU), slow memory (reductions longer than messages), other delays
SHAPES: list[tuple[int, int, str, dict[str, Any]]] = [
    (3, 1_000_003, "ring:3@bw=50,lat=500", {"preferred-dataset-splits": 3, "local-mem-bw": 50}),
    (8, 4099, "switch:8@bw=100,lat=700", {"preferred-dataset-splits": 2, "endpoint-delay": 7}),
    (4, 1 << 20, "fc:4@bw=25,lat=300", {"scheduling-policy": "LIFO", "local-mem-bw": 200}),
]
POW2: list[tuple[int, int, str, dict[str, Any]]] = [
    (2, 777_777, "switch:2@bw=50,lat=500", {"preferred-dataset-splits": 3, "local-mem-bw": 50}),
    (4, 1_000_003, "ring:4@bw=50,lat=500", {"preferred-dataset-splits": 3, "local-mem-bw": 50}),
    (8, 100, "fc:8@bw=100,lat=500", {"preferred-dataset-splits": 4, "endpoint-delay": 3}),
]


@pytest.mark.parametrize("coll", [AG, RS, A2A])
@pytest.mark.parametrize(("n", "size", "net", "over"), SHAPES)
def test_native_ring_equals_real_astrasim(coll: Collective, n: int, size: int, net: str, over: dict) -> None:
    _check(Workload.single_collective(coll, n, size), net, over, {coll: "ring"})


@pytest.mark.parametrize("coll", [AR, AG, RS, A2A])
@pytest.mark.parametrize(
    ("impl", "n", "size", "net", "over"),
    [
        ("direct", *SHAPES[0]),
        ("direct", *SHAPES[1]),
        ("oneDirect4", 5, 65_537, "ring:5@bw=50,lat=500", {}),
        # windows below n-1: peers follow the order of receipts; slow memory reorders the packets
        ("direct2", 5, 65_537, "ring:5@bw=50,lat=500", {"local-mem-bw": 50}),
        ("oneDirect3", 8, 1 << 20, "switch:8@bw=100,lat=700", {"local-mem-bw": 20, "preferred-dataset-splits": 2}),
        ("direct1", 6, 300_007, "fc:6@bw=25,lat=300", {"endpoint-delay": 23, "scheduling-policy": "LIFO"}),
    ],
)
def test_native_direct_equals_real_astrasim(
    coll: Collective, impl: str, n: int, size: int, net: str, over: dict
) -> None:
    _check(Workload.single_collective(coll, n, size), net, over, {coll: impl})


@pytest.mark.parametrize("coll", [AR, AG, RS])
@pytest.mark.parametrize(("n", "size", "net", "over"), POW2)
def test_native_halving_doubling_equals_real_astrasim(
    coll: Collective, n: int, size: int, net: str, over: dict
) -> None:
    _check(Workload.single_collective(coll, n, size), net, over, {coll: "halvingDoubling"})


@pytest.mark.parametrize(
    ("coll", "n", "size", "net", "over"),
    [(AR, *POW2[0]), (AR, *POW2[1]), (AR, *POW2[2]), (AG, *POW2[1]), (RS, *POW2[2]), (A2A, *POW2[0])],
)
def test_native_double_binary_tree_equals_real_astrasim(
    coll: Collective, n: int, size: int, net: str, over: dict
) -> None:
    _check(Workload.single_collective(coll, n, size), net, over, {coll: "doubleBinaryTree"})


def _mixed(n: int, colls: list[tuple[Collective, int]], seed: int = 0) -> Workload:
    """Per rank: a COMP of 1-5 µs (not in ring order), then the collectives one after another."""
    ranks = []
    for r in range(n):
        nodes = [WorkloadNode(id=1, name="c", type=NodeType.COMP, duration_micros=1 + (3 * r + seed) % 5)]
        for i, (c, s) in enumerate(colls):
            nodes.append(
                WorkloadNode(
                    id=10 + i,
                    name=f"{c.value}{i}",
                    type=NodeType.COLL,
                    deps=[nodes[-1].id],
                    comm_type=COMM_TYPE_OF[c],
                    comm_size=s,
                )
            )
        ranks.append(nodes)
    return Workload(ranks=ranks, name="mixed")


@pytest.mark.parametrize(
    ("policy", "net", "impls"),
    [
        ("FIFO", "switch:8@bw=100,lat=500", {AR: "doubleBinaryTree", A2A: "direct", AG: "ring", RS: "halvingDoubling"}),
        ("FIFO", "fc:8@bw=50,lat=200", {AR: "direct", A2A: "direct3", AG: "oneDirect2", RS: "ring"}),
        ("LIFO", "ring:8@bw=100,lat=500", {AR: "halvingDoubling", A2A: "ring", AG: "direct", RS: "doubleBinaryTree"}),
    ],
)
def test_skewed_starts_and_four_native_algorithms_in_one_workload_equal_real_astrasim(
    policy: str, net: str, impls: dict[Collective, str]
) -> None:
    # three all-reduces of 3 chunks each: the double binary tree alternates its trees across them;
    # skewed starts on a Ring tell which partner each step has
    wl = _mixed(8, [(AR, 1_576_964), (A2A, 24_576), (AR, 448), (AG, 13_568), (RS, 907_840), (AR, 5000)])
    _check(wl, net, {"preferred-dataset-splits": 3, "scheduling-policy": policy}, impls)


def test_random_configurations_equal_real_astrasim() -> None:
    """A seeded handful of random (algorithm, collective, NPUs, size, settings, network) cases."""
    rnd = random.Random(15)
    choices = [("ring", c) for c in (AR, AG, RS, A2A)] + [("direct", c) for c in (AG, RS, A2A)]
    choices += [("halvingDoubling", c) for c in (AR, AG, RS)] + [("doubleBinaryTree", AR)]
    for _ in range(10):
        impl, coll = rnd.choice(choices)
        n = rnd.choice([2, 4, 8] if impl in ("halvingDoubling", "doubleBinaryTree") else [2, 3, 5, 6, 8])
        kind = rnd.choice(["switch", "fc"] + (["ring"] if n > 2 else []))  # (aware Ring of 2 crashes ASTRA-sim)
        net = f"{kind}:{n}@bw={rnd.choice([25, 50, 100])},lat={rnd.randint(1, 900)}"
        over = {
            "preferred-dataset-splits": rnd.randint(1, 5),
            "endpoint-delay": rnd.randint(1, 30),
            "local-mem-bw": rnd.choice([20, 50, 400, 1600]),
            "scheduling-policy": rnd.choice(["FIFO", "LIFO"]),
        }
        _check(_mixed(n, [(coll, rnd.randint(5, 2_000_000))] * 2, seed=rnd.randint(0, 4)), net, over, {coll: impl})


def test_random_direct_windows_equal_real_astrasim() -> None:
    """Seeded random ``direct``/``directN`` cases for all four collectives, two in a row after
    skewed COMPs (the all-reduce's gated second half, windows of 1 to n-1, tiny messages)."""
    rnd = random.Random(6)
    for _ in range(8):
        coll = rnd.choice([AR, AG, RS, A2A])
        n = rnd.choice([2, 3, 5, 7, 8, 12])
        impl = rnd.choice(["direct", "oneDirect"]) + rnd.choice(["", str(rnd.randint(1, n - 1))])
        kind = rnd.choice(["switch", "fc"] + (["ring"] if n > 2 else []))
        net = f"{kind}:{n}@bw={rnd.choice([25, 50, 100])},lat={rnd.randint(1, 900)}"
        over = {
            "preferred-dataset-splits": rnd.randint(1, 4),
            "endpoint-delay": rnd.randint(1, 30),
            "local-mem-bw": rnd.choice([20, 50, 400, 1600]),
            "scheduling-policy": rnd.choice(["FIFO", "LIFO"]),
        }
        size = rnd.choice([rnd.randint(50, 3000), rnd.randint(5000, 2_000_000)])
        _check(_mixed(n, [(coll, size)] * 2, seed=rnd.randint(0, 4)), net, over, {coll: impl})


def test_dlrm8_native_ring_for_every_collective_equals_real_astrasim() -> None:
    if not Path(f"{DLRM}.0.et").is_file():
        pytest.skip("dlrm8 not in the shared data")
    from collhub_astrasim._repair import runnable_copy

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wl = read_workload(DLRM)
    # every node on the GPU (docs/workloads.md); NOTES.md's settings, with baseline optimisation
    plain, _ = runnable_copy(Workload(ranks=[[replace(nd, is_cpu_op=False) for nd in r] for r in wl.ranks]))
    over = {
        "preferred-dataset-splits": 4,
        "scheduling-policy": "LIFO",
        "all-gather-implementation": ["ring"],  # (the trace has no all-gather or reduce-scatter)
        "reduce-scatter-implementation": ["ring"],
    }
    _check(plain, "switch:8@bw=100,lat=500", over, {AR: "ring", A2A: "ring"})


def test_the_two_trees_number_npus_in_order() -> None:
    # ASTRA-sim's BinaryTree: in-order ids; the extra root holds the subtree on its left (id n-1)
    # or on its right (id 0)
    parent, kids = tree(8, root_max=True)
    assert parent == [1, 3, 1, 7, 5, 3, 5, -1] and kids[7] == (3, -1) and kids[3] == (1, 5)
    parent, kids = tree(8, root_max=False)
    assert parent == [-1, 2, 4, 2, 0, 6, 4, 6] and kids[0] == (-1, 4) and kids[4] == (2, 6)


@pytest.mark.parametrize(
    ("coll", "impl", "n", "size", "key", "why"),
    [
        (A2A, "direct0", 8, 1 << 20, "all-to-all-implementation", "a window of 0 sends nothing"),
        (A2A, "halvingDoubling", 4, 1 << 20, "all-to-all-implementation", "ASTRA-sim exits on"),
        (AG, "halvingDoubling", 6, 1 << 20, "all-gather-implementation", "6 NPUs, not a power of two"),
        (AR, "doubleBinaryTree", 6, 1 << 20, "all-reduce-implementation", "ASTRA-sim crashes"),
        (RS, "Ring", 4, 1 << 20, "reduce-scatter-implementation", "a name it knows"),
        (AG, "ring", 4, 3, "preferred-dataset-splits", "chunks of 0 bytes"),
    ],
)
def test_what_is_not_reproduced_is_refused_naming_the_key(
    coll: Collective, impl: str, n: int, size: int, key: str, why: str
) -> None:
    wl = Workload.single_collective(coll, n, size)
    system = {**BASE, "preferred-dataset-splits": 4, f"{STEM[coll]}-implementation": [impl]}
    with pytest.raises(SimulationError) as info:
        simulate(wl, f"switch:{n}", system=system)
    assert info.value.message.startswith(f"system.json key {key}") and why in info.value.message
    assert f'"{STEM[coll]}-implementation-custom"' in (info.value.hint or "")


def test_an_implementation_list_longer_than_the_dimensions_is_refused() -> None:
    wl = Workload.single_collective(AG, 4, 1 << 20)
    with pytest.raises(SimulationError, match=r"key all-gather-implementation: \['ring', 'ring'\] .*per network dim"):
        simulate(wl, "ring:4", system={**BASE, "all-gather-implementation": ["ring", "ring"]})


def test_random_multidimensional_set_ups_equal_real_astrasim() -> None:
    """A seeded handful of the differential (benchmarks/bench_native.py has the full sweep): every
    algorithm and collective on 1-3 dimensions with per-dimension lists, active chunks and
    localBWAware, against both binaries on 1-D networks, the unaware one otherwise."""
    if (why := oracle_unavailable()) is not None:
        pytest.skip(why)
    rnd = random.Random(20)
    for _ in range(16):
        net, system, coll, n, sizes, label = random_setup(rnd)
        wl = _mixed(n, [(coll, s) for s in sizes], seed=rnd.randint(0, 4))
        for mode in _modes(net):  # (the system's list wins over the bundle's native:ring)
            ours = simulate(wl, net, mode=mode, system=system).rank_finish_ns
            assert ours == _real(wl, net, mode, system, {coll: "ring"}), (label, mode, net, system, sizes)


@pytest.mark.parametrize(
    ("net", "impl", "over"),
    [
        ("switch:2,switch:2", ["ring", "direct"], {}),  # (refused before the merge of wip/native-direct)
        ("ring:3,switch:4", ["direct2", "direct"], {"active-chunks-per-dimension": 2, "preferred-dataset-splits": 3}),
        ("switch:4,fc:3", ["direct", "direct1"], {"collective-optimization": "localBWAware"}),
    ],
)
def test_direct_all_reduce_and_windows_on_several_dimensions_equal_real_astrasim(
    net: str, impl: list[str], over: dict[str, Any]
) -> None:
    n = math.prod(int(d.split(":")[1]) for d in net.split(","))
    wl = _mixed(n, [(AR, 1 << 20), (AR, 30_011)], seed=3)
    _check(wl, net, {**over, "all-reduce-implementation": impl}, {AR: "ring"})


def _grouped(groups: dict[str, list[int]], n: int, coll: Collective, size: int) -> Workload:
    """Per rank: a skewed COMP, ``coll`` in the rank's group, then an all-reduce over every rank."""
    ranks = []
    for r in range(n):
        ranks.append(
            [
                _meta(groups),
                WorkloadNode(id=1, name="c", type=NodeType.COMP, duration_micros=1 + 3 * r % 5, deps=[90]),
                WorkloadNode(
                    id=2, name="g", type=NodeType.COLL, deps=[1], comm_type=COMM_TYPE_OF[coll], comm_size=size
                ),
                WorkloadNode(
                    id=3, name="all", type=NodeType.COLL, deps=[2], comm_type=COMM_TYPE_OF[AR], comm_size=size // 3
                ),
            ]
        )
    return Workload(
        ranks=[
            [replace(n, pg_name=_group(r, groups)) if n.id == 2 else n for n in nodes] for r, nodes in enumerate(ranks)
        ],
        name="groups",
    )


def _group(r: int, groups: dict[str, list[int]]) -> str:
    return next(k for k, v in groups.items() if r in v)


@pytest.mark.parametrize(
    ("groups", "net", "coll", "impl", "over"),
    [
        ({"1": [0, 2, 1, 3], "2": [4, 5, 6, 7]}, "switch:8@bw=100,lat=500", AR, ["halvingDoubling"], {}),
        (
            {"1": [2, 0, 3], "2": [1, 4, 5]},
            "switch:6@bw=100,lat=500",
            AG,
            ["direct"],
            {"preferred-dataset-splits": 3, "active-chunks-per-dimension": 2},
        ),
        ({"1": [2, 0, 3], "2": [1, 4, 5]}, "ring:6@bw=100,lat=500", A2A, ["ring"], {"preferred-dataset-splits": 3}),
        # groups across dimension 1 of a 2-D network: one phase each, ring for a longer list
        (
            {"1": [0, 4], "2": [1, 5], "3": [2, 6], "4": [3, 7]},
            "ring:4,ring:2",
            RS,
            ["direct", "halvingDoubling"],
            {"all-reduce-implementation": ["ring"] * 2},
        ),
    ],
)
def test_other_algorithms_in_process_groups_equal_real_astrasim(
    groups: dict[str, list[int]], net: str, coll: Collective, impl: list[str], over: dict[str, Any]
) -> None:
    n = sum(len(v) for v in groups.values())
    _check(
        _grouped(groups, n, coll, 1 << 20),
        net,
        {**over, f"{STEM[coll]}-implementation": impl},
        {AR: "ring", coll: impl[0]},
    )


@pytest.mark.parametrize(
    ("net", "impl", "groups", "why"),
    [
        ("switch:2,switch:2", ["oneRing", "oneRing"], None, "one ring over every NPU"),
        ("switch:8", ["doubleBinaryTree"], {"1": [0, 1, 2, 3], "2": [4, 5, 6, 7]}, "in a process group of 4"),
    ],
)
def test_combinations_not_reproduced_are_refused_naming_the_key(
    net: str, impl: list[str], groups: dict[str, list[int]] | None, why: str
) -> None:
    n = 8 if groups else 4
    wl = _grouped(groups, n, AR, 1 << 20) if groups else Workload.single_collective(AR, n, 1 << 20)
    with pytest.raises(SimulationError) as info:
        simulate(wl, net, system={**BASE, "all-reduce-implementation": impl})
    assert info.value.message.startswith("system.json key all-reduce-implementation") and why in info.value.message
    assert '"all-reduce-implementation-custom"' in (info.value.hint or "")
