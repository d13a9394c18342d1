"""ASTRA-sim's native ring all-reduce as streams (hub.sim._astrasim.streams): several active chunks
per dimension queue, multi-dimensional networks, ``localBWAware``, workload-level SEND/RECV next
to it, and dlrm8 with its NOTES.md set-up; every rank's finish against the real binaries.

The congestion-aware binary takes 1-D networks only, so multi-dimensional cases run on the
unaware one alone (hub.simulate refuses them in aware mode too, like ASTRA-sim).
"""

from __future__ import annotations

import json
import random
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from hub.chakra import COMM_TYPE_OF, Collective, NodeType, Workload, WorkloadNode, read_workload
from hub.errors import SimulationError
from hub.sim import simulate
from hub.sim._astrasim.streams import Phase, phase_schedule, stream_plan
from hub.topology import DimensionalTopology, load_topology
from tests.sim.astrasim.test_ring import BASE, _real, _skewed
from tests.sim.difftest import oracle_unavailable
from tests.workload.test_groups import _meta
from tests.workload.test_inline import DLRM

AR = COMM_TYPE_OF[Collective.ALLREDUCE]
#: dlrm8's NOTES.md: the system settings of its "22230202-23175293 cycles" result
NOTES: dict[str, Any] = {
    "scheduling-policy": "LIFO",
    "endpoint-delay": 10,
    "active-chunks-per-dimension": 1,
    "preferred-dataset-splits": 4,
    **{f"{c}-implementation": ["ring"] for c in ("all-reduce", "all-gather", "reduce-scatter", "all-to-all")},
    "collective-optimization": "localBWAware",
    "local-mem-bw": 1600,
}
NOTES_NET = "switch:8@bw=100,lat=500"


def _modes(net: str) -> tuple[str, ...]:
    topo = load_topology(net)
    return ("unaware", "aware") if isinstance(topo, DimensionalTopology) and len(topo.dims) == 1 else ("unaware",)


def _check(wl: Workload, net: str, system: dict[str, Any], algs: dict[str, str] | None = None) -> dict[str, list[int]]:
    """Every rank's finish, ours against the real binary's, on each backend that takes ``net``;
    the real ones per backend (``algs``: more of the bundle's ``algorithm_for``)."""
    if (why := oracle_unavailable()) is not None:
        pytest.skip(why)
    out: dict[str, list[int]] = {}
    for mode in _modes(net):
        ours = simulate(wl, net, mode=mode, system=system).rank_finish_ns
        out[mode] = _real(wl, net, mode, system, algs)
        assert ours == out[mode], mode
    return out


@pytest.mark.parametrize(
    ("n", "size", "net", "over"),
    [
        # several streams per queue on one ring: they share its links (aware)
        (4, 1 << 20, "ring:4@bw=50,lat=500", {"active-chunks-per-dimension": 2, "preferred-dataset-splits": 4}),
        (8, 1_000_003, "switch:8@bw=100,lat=500", {"active-chunks-per-dimension": 3, "preferred-dataset-splits": 7}),
        (8, 1 << 20, "ring:8@bw=50,lat=500", {"active-chunks-per-dimension": 4, "preferred-dataset-splits": 16}),
        # localBWAware on one dimension: one all-reduce phase, as baseline
        (4, 1 << 20, "ring:4", {"collective-optimization": "localBWAware", "preferred-dataset-splits": 4}),
        # two and three dimensions: baseline (an all-reduce per dimension) and localBWAware (RS up, AR, AG down)
        (8, 1 << 20, "ring:2,ring:4", {"all-reduce-implementation": ["ring"] * 2, "preferred-dataset-splits": 4}),
        (
            16,
            3_000_017,
            "switch:4,switch:4",
            {
                "all-reduce-implementation": ["ring"] * 2,
                "preferred-dataset-splits": 6,
                "active-chunks-per-dimension": 3,
                "collective-optimization": "localBWAware",
                "local-mem-bw": 50,
            },
        ),
        # 100 B: streams end phases in the same tick; a stream takes its queue slot when it joins
        (
            8,
            100,
            "ring:2,ring:2,ring:2",
            {
                "all-reduce-implementation": ["ring"] * 3,
                "preferred-dataset-splits": 4,
                "collective-optimization": "localBWAware",
            },
        ),
        (
            24,
            1_000_000,
            "ring:2,switch:3,ring:4@bw=25,lat=700",
            {
                "all-reduce-implementation": ["ring"] * 3,
                "preferred-dataset-splits": 8,
                "collective-optimization": "localBWAware",
            },
        ),
    ],
)
def test_streams_and_dimensions_equal_real_astrasim(n: int, size: int, net: str, over: dict[str, Any]) -> None:
    _check(Workload.single_collective(Collective.ALLREDUCE, n, size), net, {**BASE, **over})


def test_skewed_workload_with_active_chunks_equals_real_astrasim() -> None:
    system = {**BASE, "preferred-dataset-splits": 5, "active-chunks-per-dimension": 2, "scheduling-policy": "LIFO"}
    _check(_skewed([1576964, 448, 907840]), "ring:8@bw=50,lat=500", system)


def test_seeded_random_native_allreduces_equal_real_astrasim() -> None:
    rng = random.Random(15)
    kinds = ("ring", "switch", "fc")
    for _ in range(5):
        nd = rng.choice((1, 1, 2, 3))
        sizes = [rng.choice((2, 3, 4)) for _ in range(nd)] if nd > 1 else [rng.choice((4, 6, 8))]
        net = ",".join(
            f"{rng.choice(kinds)}:{m}@bw={rng.choice((25, 50, 100))},lat={rng.choice((100, 500))}" for m in sizes
        )
        system = {
            **BASE,
            "all-reduce-implementation": ["ring"] * nd,
            "preferred-dataset-splits": rng.randint(1, 8),
            "active-chunks-per-dimension": rng.randint(1, 3),
            "collective-optimization": rng.choice(("baseline", "localBWAware")),
            "endpoint-delay": rng.randint(1, 20),
            "local-mem-bw": rng.choice((50, 400, 1600)),
            "scheduling-policy": rng.choice(("LIFO", "FIFO")),
        }
        n = 1
        for m in sizes:
            n *= m
        wl = _skewed([rng.randint(10_000, 3_000_000), rng.randint(10_000, 300_000)], n)
        _check(wl, net, system)


def _dlrm8() -> Workload:
    if not Path(f"{DLRM}.0.et").is_file():
        pytest.skip("dlrm8 not in the shared data")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return read_workload(DLRM)


def _dlrm8_gpu() -> Workload:
    # every node on the GPU, as docs/workloads.md runs it
    return Workload(ranks=[[replace(nd, is_cpu_op=False) for nd in r] for r in _dlrm8().ranks], name="dlrm8")


def test_dlrm8_native_allreduces_next_to_inlined_alltoalls_equal_real_astrasim() -> None:
    """The NOTES.md all-reduces (localBWAware, LIFO, 4 splits) with the all-to-alls inlined as
    workload-level SEND/RECV (the rule: a collective's end issues what it frees in node id order)."""
    from collhub_astrasim._repair import runnable_copy
    from hub.workload import InlineParams, inline_workload

    inl = inline_workload(_dlrm8_gpu(), {"alltoall": "direct"}, InlineParams(kinds=["alltoall"]))
    plain, _ = runnable_copy(inl)
    system = {k: v for k, v in NOTES.items() if k != "all-to-all-implementation"}
    real = _check(plain, NOTES_NET, system)["unaware"]
    assert len(set(real)) > 1  # the ranks differ (real durations), so every rank is checked on its own


def test_dlrm8_notes_setup_equals_real_astrasim_and_notes() -> None:
    """NOTES.md's set-up as it stands (all four collectives native ring, localBWAware all-reduces
    next to native ring all-to-alls)."""
    from collhub_astrasim._repair import runnable_copy

    plain, _ = runnable_copy(_dlrm8())  # as NOTES.md ran it: only the dangling dependencies dropped
    real = _check(plain, NOTES_NET, NOTES, {"alltoall": "native:ring"})["unaware"]  # (NOTES.md: unaware)
    assert (min(real), max(real)) == (22230202, 23175293)


def test_localbwaware_phases_follow_the_source() -> None:
    # 2 x 4 NPUs, one chunk of 800 B: RS over 2 (msg 400), AR over 4 of 400 (msg 100), AG over 2 (msg 400)
    ar, rings = Collective.ALLREDUCE, ("ring", "ring")
    plan = stream_plan(ar, 800, 0, (2, 4), rings, splits=1, delay=10, local_bw_aware=True)
    kinds = [(p.dim, p.kind, p.clockwise, p.data, _sends(p)) for p in plan.phases]
    assert kinds == [
        (0, Collective.REDUCESCATTER, True, 800, [400]),
        (1, Collective.ALLREDUCE, True, 400, [100] * 6),
        (0, Collective.ALLGATHER, False, 400, [400]),
    ]
    base = stream_plan(ar, 800, 0, (2, 4), rings, splits=1, delay=10)
    assert [(p.dim, p.kind, _sends(p)) for p in base.phases] == [
        (0, Collective.ALLREDUCE, [400] * 2),
        (1, Collective.ALLREDUCE, [200] * 6),
    ]


def _sends(ph: Phase) -> list[int]:
    from hub.sim._engine.program import K_SEND

    return [op.size for op in phase_schedule(ph, 0, 1600)[0] if op.kind == K_SEND]


@pytest.mark.parametrize("involved", [[True, False], [False, True], [True, True, True]])
def test_involved_dims_equal_real_astrasim(involved: list[bool]) -> None:
    wl = _skewed([1 << 20, 5000], 8)
    dimmed = [[replace(n, attrs={"involved_dim": involved}) if n.comm_size else n for n in r] for r in wl.ranks]
    wl = Workload(ranks=dimmed)
    system = {**BASE, "all-reduce-implementation": ["ring"] * 2, "collective-optimization": "localBWAware"}
    _check(wl, "ring:4,switch:2@bw=50,lat=500", {**system, "preferred-dataset-splits": 3})


@pytest.mark.parametrize("involved", [[True], [False, False]])
def test_involved_dims_astrasim_cannot_run_are_refused(involved: list[bool]) -> None:
    # a short list: ASTRA-sim reads past its end; none involved: the collective never finishes there
    wl = Workload.single_collective(Collective.ALLREDUCE, 4, 1 << 16)
    wl = Workload(ranks=[[replace(n, attrs={"involved_dim": involved}) for n in r] for r in wl.ranks])
    with pytest.raises(SimulationError, match="involved_dim") as info:
        simulate(wl, "ring:2,ring:2", system={**BASE, "all-reduce-implementation": ["ring", "ring"]})
    assert '"all-reduce-implementation-custom"' in (info.value.hint or "")


def _grouped(groups: dict[str, list[int]], n: int, size: int) -> Workload:
    """Per rank: a skewed COMP, an all-reduce in the rank's group, then one over every rank."""
    ranks = []
    for r in range(n):
        g = next(k for k, v in groups.items() if r in v)
        ranks.append(
            [
                _meta(groups),
                WorkloadNode(id=1, name="c", type=NodeType.COMP, duration_micros=1 + 3 * r % 5, deps=[90]),
                WorkloadNode(id=2, name="g", type=NodeType.COLL, deps=[1], comm_type=AR, comm_size=size, pg_name=g),
                WorkloadNode(id=3, name="all", type=NodeType.COLL, deps=[2], comm_type=AR, comm_size=size // 3),
            ]
        )
    return Workload(ranks=ranks, name="groups")


@pytest.mark.parametrize(
    ("groups", "n", "net", "over"),
    [
        ({"1": [0, 2], "2": [1, 3]}, 4, "ring:4@bw=50,lat=500", {"preferred-dataset-splits": 4}),
        # members not in NPU order: the ring follows the group's order; two streams per queue
        (
            {"1": [2, 0, 3], "2": [1, 4, 5]},
            6,
            "switch:6@bw=100,lat=500",
            {"preferred-dataset-splits": 3, "active-chunks-per-dimension": 2, "endpoint-delay": 7},
        ),
        # groups across the second dimension of a 2-D network: one ring phase each, localBWAware or not
        (
            {"1": [0, 4], "2": [1, 5], "3": [2, 6], "4": [3, 7]},
            8,
            "ring:4,ring:2",
            {"all-reduce-implementation": ["ring"] * 2, "collective-optimization": "localBWAware"},
        ),
        ({"1": [3, 1, 0, 2]}, 4, "ring:4@bw=50,lat=500", {"preferred-dataset-splits": 4}),  # every NPU, reordered
    ],
)
def test_process_groups_equal_real_astrasim(groups: dict[str, list[int]], n: int, net: str, over: dict) -> None:
    _check(_grouped(groups, n, 1 << 20), net, {**BASE, **over})


def test_the_bundle_writes_the_groups_astrasim_reads(tmp_path: Path) -> None:
    from collhub_astrasim._bundle import _dims_for, build_bundle

    wl = _grouped({"1": [0, 2], "2": [1, 3]}, 4, 4096)
    b = build_bundle(wl, out=tmp_path / "b", dims=_dims_for("ring:4"), algorithm_for={"allreduce": "native:ring"})
    assert json.loads((b.path / "comm_group.json").read_text()) == {"1": [0, 2], "2": [1, 3]}
    assert "--comm-group-configuration=comm_group.json" in b.args()
    assert "--comm-group-configuration=comm_group.json" in (b.path / "run.sh").read_text()


def test_streams_that_astrasim_never_finishes_are_an_error_here_too(tmp_path: Path) -> None:
    """3-D localBWAware, ranks starting at different times: their queues end up serving different
    streams, and neither simulator finishes (ASTRA-sim reports unreleased nodes, no finish time)."""
    from collhub_astrasim._bundle import _dims_for, build_bundle
    from collhub_astrasim._run import run_binary
    from tests.sim.difftest import BIN, BINARIES

    if (why := oracle_unavailable()) is not None:
        pytest.skip(why)
    net = "ring:2@bw=25,lat=500,fc:2@bw=100,lat=500,fc:3@bw=100,lat=100"
    system = {
        **BASE,
        "all-reduce-implementation": ["ring"] * 3,
        "preferred-dataset-splits": 4,
        "endpoint-delay": 16,
        "local-mem-bw": 50,
        "active-chunks-per-dimension": 2,
        "collective-optimization": "localBWAware",
    }
    wl = _skewed([2360519, 125065], 12)
    with pytest.raises(SimulationError, match="never finishes") as info:
        simulate(wl, net, system=system)
    assert "collective-optimization baseline" in (info.value.hint or "")
    b = build_bundle(
        wl,
        out=tmp_path / "b",
        dims=_dims_for(net),
        system=system,
        predict=False,
        algorithm_for={"allreduce": "native:ring"},
    )
    stdout, _, _ = run_binary(BIN / BINARIES["unaware"], b.args(), b.path, 60)
    assert "has unreleased nodes" in stdout and " finished, " not in stdout
