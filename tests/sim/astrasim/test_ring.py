"""ASTRA-sim's native ring all-reduce (system.json ``all-reduce-implementation: ["ring"]``) in
hub.simulate, against the real binaries on both backends, and the refusals of settings it does not
reproduce (the other algorithms and collectives: test_native_algorithms.py).

The oracle runs the astrasim plugin's bundle with ``native:ring`` and the same system settings.
"""

from __future__ import annotations

import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from hub.chakra import COMM_TYPE_OF, Collective, NodeType, Workload, WorkloadNode, read_workload
from hub.errors import SimulationError
from hub.sim import simulate
from tests.sim.difftest import oracle_rank_finish_ns, oracle_unavailable
from tests.workload.test_inline import DLRM, _compute_and_collective

AR, A2A = COMM_TYPE_OF[Collective.ALLREDUCE], COMM_TYPE_OF[Collective.ALLTOALL]
BASE: dict[str, Any] = {
    "all-reduce-implementation": ["ring"],
    "preferred-dataset-splits": 1,
    "endpoint-delay": 10,
    "local-mem-bw": 1600,
    "active-chunks-per-dimension": 1,
    "collective-optimization": "baseline",
    "scheduling-policy": "FIFO",
}


def _real(wl: Workload, net: str, mode: str, system: dict[str, Any], algs: dict[str, str] | None = None) -> list[int]:
    return oracle_rank_finish_ns(wl, net, mode, system, {"allreduce": "native:ring", **(algs or {})})


def _check(wl: Workload, net: str, system: dict[str, Any], algs: dict[str, str] | None = None) -> None:
    if (why := oracle_unavailable()) is not None:
        pytest.skip(why)
    for mode in ("unaware", "aware"):
        ours = simulate(wl, net, mode=mode, system=system, algorithm_for=algs).rank_finish_ns
        assert ours == _real(wl, net, mode, system, algs), mode


def _skewed(sizes: list[int], n: int = 8) -> Workload:
    """Per rank: a COMP of 1-5 µs (not in ring order), then the all-reduces one after another."""
    ranks = []
    for r in range(n):
        nodes = [WorkloadNode(id=1, name="c", type=NodeType.COMP, duration_micros=1 + 3 * r % 5)]
        for i, s in enumerate(sizes):
            nodes.append(
                WorkloadNode(
                    id=10 + i, name=f"ar{i}", type=NodeType.COLL, deps=[nodes[-1].id], comm_type=AR, comm_size=s
                )
            )
        ranks.append(nodes)
    return Workload(ranks=ranks, name="skewed")


@pytest.mark.parametrize(
    ("n", "size", "net", "over"),
    [
        (4, 1 << 20, "ring:4@bw=50,lat=500", {}),
        (4, 1 << 20, "ring:4@bw=50,lat=500", {"preferred-dataset-splits": 4, "local-mem-bw": 50}),
        (8, 1_000_003, "switch:8@bw=100,lat=500", {"preferred-dataset-splits": 3, "endpoint-delay": 7}),
        (8, 100, "fc:8@bw=100,lat=500", {"preferred-dataset-splits": 4}),  # chunks of 8 B (one per NPU)
    ],
)
def test_single_native_ring_allreduce_equals_real_astrasim(n: int, size: int, net: str, over: dict) -> None:
    _check(Workload.single_collective(Collective.ALLREDUCE, n, size), net, {**BASE, **over})


@pytest.mark.parametrize("policy", ["FIFO", "LIFO"])
def test_skewed_starts_and_several_allreduces_equal_real_astrasim(policy: str) -> None:
    wl = _skewed([1576964, 448, 907840])
    _check(wl, "switch:8@bw=100,lat=500", {**BASE, "preferred-dataset-splits": 4, "scheduling-policy": policy})


def test_dlrm8_native_ring_allreduces_equal_real_astrasim() -> None:
    if not Path(f"{DLRM}.0.et").is_file():
        pytest.skip("dlrm8 not in the shared data")
    from collhub_astrasim._repair import runnable_copy

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wl = read_workload(DLRM)
    # every node on the GPU (docs/workloads.md); the four all-to-all sizes cannot share one custom
    # ET set and native all-to-all is not reproduced, so they become 1 µs COMPs
    ranks = [
        [
            replace(nd, type=NodeType.COMP, comm_type=None, comm_size=None, duration_micros=1, is_cpu_op=False)
            if nd.type == NodeType.COLL and nd.comm_type == A2A
            else replace(nd, is_cpu_op=False)
            for nd in r
        ]
        for r in wl.ranks
    ]
    plain, _ = runnable_copy(Workload(ranks=ranks, name="dlrm8-native"))
    _check(plain, "switch:8@bw=100,lat=500", {**BASE, "preferred-dataset-splits": 4, "scheduling-policy": "LIFO"})


def test_algorithm_for_wins_over_the_native_key() -> None:
    wl = Workload.single_collective(Collective.ALLREDUCE, 4, 1 << 20)
    assert (
        simulate(wl, "ring:4", system=BASE, algorithm_for={"allreduce": "ring"}).time_ns
        == simulate(wl, "ring:4", algorithm_for={"allreduce": "ring"}).time_ns
    )


@pytest.mark.parametrize(
    ("over", "net", "key"),
    [
        ({"all-reduce-implementation": ["direct0"]}, "ring:4", "all-reduce-implementation"),
        ({"all-reduce-implementation": ["halvingDoubling"]}, "ring:3", "all-reduce-implementation"),
        ({"all-reduce-implementation": ["ring"]}, "ring:2,ring:2", "all-reduce-implementation"),  # one per dim
        ({"all-reduce-implementation": ["ring", "oneRing"]}, "ring:2,ring:2", "all-reduce-implementation"),
        ({"collective-optimization": "fastest"}, "ring:4", "collective-optimization"),
        ({"active-chunks-per-dimension": 0}, "ring:4", "active-chunks-per-dimension"),
        ({"scheduling-policy": "SJF"}, "ring:4", "scheduling-policy"),
        ({}, "ring:8", "all-reduce-implementation"),  # 4 ranks on 8 NPUs: not an ASTRA-sim input
        ({"model-shared-bus": 1}, "ring:4", "model-shared-bus"),
        ({"endpoint-delay": 0}, "ring:4", "endpoint-delay"),
        ({"preferred-dataset-splits": 0}, "ring:4", "preferred-dataset-splits"),
    ],
)
def test_what_is_not_reproduced_is_refused_naming_the_key(over: dict, net: str, key: str) -> None:
    wl = Workload.single_collective(Collective.ALLREDUCE, 3 if net == "ring:3" else 4, 1 << 20)
    with pytest.raises(SimulationError) as info:
        simulate(wl, net, system={**BASE, **over})
    assert info.value.message.startswith(f"system.json key {key}")
    assert '"all-reduce-implementation-custom"' in (info.value.hint or "")


def test_native_next_to_sends_is_exact_and_next_to_other_implementations_refused() -> None:
    from hub.workload import InlineParams, inline_workload

    wl = _compute_and_collective(Collective.ALLREDUCE, 4, 1 << 16)
    wl = Workload(
        ranks=[
            nodes + [WorkloadNode(id=20, name="a2a", type=NodeType.COLL, deps=[12], comm_type=A2A, comm_size=1 << 14)]
            for nodes in wl.ranks
        ]
    )
    inl = inline_workload(wl, {"alltoall": "direct"}, InlineParams(kinds=["alltoall"]))
    _check(inl, "ring:4", BASE)  # next to workload-level SEND/RECV: exact (tests/sim/astrasim/test_streams.py)
    with pytest.raises(SimulationError, match="next to alltoall served by another"):
        simulate(wl, "ring:4", system=BASE, algorithm_for={"alltoall": "direct"})
    with pytest.raises(SimulationError, match="system.json key all-to-all-implementation") as info:
        simulate(wl, "ring:4", system={**BASE, "all-to-all-implementation": ["halvingDoubling"]})
    assert '"all-to-all-implementation-custom"' in (info.value.hint or "")
