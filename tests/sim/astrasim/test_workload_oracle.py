"""hub.simulate on workloads whose COMM_COLL nodes run custom collectives, against real ASTRA-sim.

The workload (compute -> collective -> compute, plus a COMP competing with the collective for the
GPU) goes through astrasim.bundle with the algorithm as the ``*-implementation-custom`` ET set.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hub.chakra import Collective
from hub.sim import simulate
from tests.sim.difftest import BIN, BINARIES, oracle_unavailable
from tests.workload.test_inline import _compute_and_collective


@pytest.mark.parametrize("alg", ["ring", "direct"])
@pytest.mark.parametrize(
    "coll", [Collective.ALLREDUCE, Collective.ALLTOALL, Collective.REDUCESCATTER, Collective.ALLGATHER]
)
def test_custom_collective_in_a_workload_equals_real_astrasim(coll: Collective, alg: str, tmp_path: Path) -> None:
    if (why := oracle_unavailable()) is not None:
        pytest.skip(why)
    from collhub_astrasim._bundle import _dims_for, build_bundle
    from collhub_astrasim._parse import parse_output
    from collhub_astrasim._run import run_binary

    wl = _compute_and_collective(coll, 4, 1 << 16)
    net = "ring:4@bw=50,lat=100"
    bundle = build_bundle(wl, out=tmp_path / "b", dims=_dims_for(net), algorithm_for={coll.value: alg}, predict=False)
    for mode in ("unaware", "aware"):
        stdout, _, _ = run_binary(BIN / BINARIES[mode], bundle.args(), bundle.path, 120)
        report = parse_output(stdout)
        res = simulate(wl, net, mode=mode, algorithm_for={coll.value: alg})
        assert res.rank_finish_ns == [report.ranks[r].finish_ns for r in range(4)], mode
        assert [p["exposed_comm_ns"] for p in res.per_rank] == [report.ranks[r].exposed_comm_ns for r in range(4)]
