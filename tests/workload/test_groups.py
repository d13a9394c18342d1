"""Process groups (``pg_name``) in hub.simulate's COMM_COLL path, against real ASTRA-sim.

ASTRA-sim serves a COMM_COLL of group g with the custom ET set's file ``<prefix>.<pos>.et`` (pos =
the NPU's position in the group) and maps algorithm rank k to the group's k-th NPU. The oracle
runs the same workload (without its METADATA node, which its statistics reject) with the groups
given as ``--comm-group-configuration``. Bad collectives are reported all at once (exit 3).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from hub.algorithms import make
from hub.chakra import COMM_TYPE_OF, Collective, NodeType, Workload, WorkloadNode, write_algorithm, write_workload
from hub.errors import VerificationError
from hub.sim import simulate
from tests.sim.difftest import BIN, BINARIES, oracle_unavailable

AR, A2A = COMM_TYPE_OF[Collective.ALLREDUCE], COMM_TYPE_OF[Collective.ALLTOALL]
GROUPS = {"1": [0, 2], "2": [1, 3]}


def _meta(groups: dict[str, list[int]]) -> WorkloadNode:
    pgs = [{"pg_name": "0", "ranks": []}] + [{"pg_name": k, "ranks": v} for k, v in groups.items()]
    return WorkloadNode(
        id=90,
        name="## process_group:init ##",
        type=NodeType.METADATA,
        is_cpu_op=True,
        inputs={"values": repr([json.dumps(pgs)]), "shapes": "[[]]", "types": "['String']"},
    )


def _grouped_workload(meta: bool = True) -> Workload:
    """Per rank: COMP -> all-reduce in its pair group ("1" = {0, 2}, "2" = {1, 3}) -> COMP ->
    all-to-all over all 4 ranks -> COMP; a side COMP competes for the GPU."""
    ranks = []
    for r in range(4):
        nodes = [_meta(GROUPS)] if meta else []
        first = [90] if meta else []
        nodes += [
            WorkloadNode(id=1, name="fwd", type=NodeType.COMP, duration_micros=2 + 3 * r, deps=first),
            WorkloadNode(
                id=2,
                name="ar",
                type=NodeType.COLL,
                deps=[1],
                comm_type=AR,
                comm_size=3 << 16,
                pg_name="1" if r % 2 == 0 else "2",
            ),
            WorkloadNode(id=3, name="mid", type=NodeType.COMP, deps=[2], duration_micros=4),
            WorkloadNode(id=4, name="a2a", type=NodeType.COLL, deps=[3], comm_type=A2A, comm_size=1 << 16),
            WorkloadNode(id=5, name="bwd", type=NodeType.COMP, deps=[4], duration_micros=1),
            WorkloadNode(id=6, name="side", type=NodeType.COMP, deps=[1], duration_micros=5),
        ]
        ranks.append(nodes)
    return Workload(ranks=ranks, name="groups")


def _real_finish(tmp: Path, net: str, mode: str) -> list[int]:
    from collhub_astrasim._bundle import _dims_for
    from collhub_astrasim._config import command_args, dumps_json, memory_json, network_yml, system_json
    from collhub_astrasim._parse import parse_output
    from collhub_astrasim._run import run_binary

    write_workload(_grouped_workload(meta=False), tmp / "wl", attributes="astrasim")
    (tmp / "system.json").write_text(
        dumps_json(
            system_json({"all-reduce-implementation-custom": "ar", "all-to-all-implementation-custom": "a2a"}, {}, {})
        )
    )
    (tmp / "network.yml").write_text(network_yml(_dims_for(net)))
    (tmp / "memory.json").write_text(dumps_json(memory_json()))
    (tmp / "groups.json").write_text(json.dumps(GROUPS))
    args = command_args("wl", f"log-{mode}") + ["--comm-group-configuration=groups.json"]
    stdout, _, _ = run_binary(BIN / BINARIES[mode], args, tmp, 120)
    report = parse_output(stdout)
    return [report.ranks[r].finish_ns for r in range(4)]


def test_process_groups_equal_real_astrasim(tmp_path: Path) -> None:
    ar2 = make("ring", collective=Collective.ALLREDUCE, ranks=2).bind(3 << 16)
    a2a4 = make("direct", collective=Collective.ALLTOALL, ranks=4).bind(1 << 16)
    write_algorithm(ar2, tmp_path / "ar", attributes="astrasim")
    write_algorithm(a2a4, tmp_path / "a2a", attributes="astrasim")
    system = {
        "all-reduce-implementation-custom": [str(tmp_path / "ar")],
        "all-to-all-implementation-custom": [str(tmp_path / "a2a")],
        "preferred-dataset-splits": 1,
    }
    wl = _grouped_workload()
    net = "ring:4@bw=50,lat=100"
    ours = {mode: simulate(wl, net, mode=mode, system=system).rank_finish_ns for mode in ("unaware", "aware")}
    # the pair all-reduces really run inside their pairs: group "2" (1, 3) waits for rank 3's longer fwd
    assert ours["unaware"][0] != ours["unaware"][1]
    if (why := oracle_unavailable()) is not None:
        pytest.skip(why)
    for mode in ("unaware", "aware"):
        assert ours[mode] == _real_finish(tmp_path, net, mode), mode


def test_a_group_algorithm_runs_on_the_group_members_only() -> None:
    wl = _grouped_workload()
    res = simulate(wl, "switch:4", algorithm_for={"allreduce": "ring", "alltoall": "direct"})
    # the 2-rank ring all-reduce of 3*64 KiB: 2 messages per rank; the 4-rank direct all-to-all: 3
    assert res.messages == 4 * 2 + 4 * 3


def test_bad_collectives_are_all_reported_with_rank_and_node() -> None:
    wl = _grouped_workload()
    ranks = [list(nodes) for nodes in wl.ranks]
    ranks[0][0] = _meta({"1": [0, 2], "2": [1, 3], "5": [0, 7]})
    ranks[1] = [nd for nd in ranks[1] if nd.id != 4]  # rank 1 never joins the all-to-all
    ranks[1][4] = replace(ranks[1][4], deps=[3])
    ranks[2][2] = replace(ranks[2][2], comm_size=None)  # all-reduce without a size
    ranks[3].append(WorkloadNode(id=7, name="bad-pg", type=NodeType.COLL, comm_type=AR, comm_size=64, pg_name="5"))
    with pytest.raises(VerificationError) as info:
        simulate(Workload(ranks=ranks), "switch:4", algorithm_for={"allreduce": "ring", "alltoall": "direct"})
    found = {(p.rank, p.node) for p in info.value.problems}
    # (rank 1 lacks the all-to-all: named by the node id its peers use for it)
    assert {(2, 2), (1, 4), (3, 7)} <= found, info.value.problems
    msgs = " | ".join(p.message for p in info.value.problems)
    assert "without comm_size" in msgs and "absent ranks [7]" in msgs
    assert "collective #0 of group '': this rank has nothing" in msgs
    assert info.value.exit_code == 3


def test_an_algorithm_with_the_wrong_rank_count_for_a_group(tmp_path: Path) -> None:
    write_algorithm(make("ring", collective=Collective.ALLREDUCE, ranks=4).bind(3 << 16), tmp_path / "ar4")
    with pytest.raises(VerificationError) as info:
        simulate(_grouped_workload(), "switch:4", algorithm_for={"allreduce": str(tmp_path / "ar4")})
    assert sorted((p.rank, p.node) for p in info.value.problems) == [(r, 2) for r in range(4)]
    assert "has 4 ranks, process group '1' has 2" in info.value.problems[0].message


def test_cli_reports_bad_collectives_with_exit_3(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    ranks = [list(nodes) for nodes in _grouped_workload().ranks]
    ranks[2][2] = replace(ranks[2][2], comm_size=None)
    write_workload(Workload(ranks=ranks, name="bad"), tmp_path / "bad")
    cmd = [
        sys.executable,
        "-m",
        "hub.cli",
        "consume",
        "hub.simulate",
        "bad",
        "--set",
        "network=switch:4",
        "--workdir",
        str(tmp_path),
    ]
    proc = subprocess.run(
        cmd, capture_output=True, text=True, timeout=120, cwd=tmp_path, env={**os.environ, "COLLHUB_LOAD_PLUGINS": ""}
    )
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and "rank 2" in proc.stderr and "node 2" in proc.stderr
