"""``astrasim.bundle`` on real PyTorch-converted traces (../shared/data/chakra-pytorch), run on
the real ASTRA-sim binaries (``$COLLHUB_ASTRASIM_DIR``, tests/sim/difftest.py).

Oracle numbers: dlrm8's NOTES.md gives real ASTRA-sim's result with native ring collectives
(22230202..23175293 cycles, congestion-unaware); the CPU traces have no communication, so every
rank's finish time is the sum of its CPU COMP durations in ns plus 1 ns per zero-length node on
its chain, and hub.simulate must equal the binary exactly.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from hub.chakra import NodeType, read_workload
from tests.sim.difftest import BIN, BINARIES, oracle_unavailable  # one check of the real binaries

SHARED = Path(__file__).resolve().parents[3].parent / "shared"
TRACES = SHARED / "data" / "chakra-pytorch"
#: NOTES.md's system settings for dlrm8 with ASTRA-sim's native ring collectives
NATIVE = {
    "scheduling-policy": "LIFO",
    "endpoint-delay": 10,
    "active-chunks-per-dimension": 1,
    "preferred-dataset-splits": 4,
    "collective-optimization": "localBWAware",
    "local-mem-bw": 1600,
}


def _read(name: str):
    prefix = TRACES / name
    if not Path(f"{prefix}.0.et").is_file():
        pytest.skip(f"{prefix}.0.et not in the shared data")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return read_workload(prefix)


def _run(bundle, mode: str) -> dict[int, tuple[int, int | None]]:
    from collhub_astrasim._parse import parse_output
    from collhub_astrasim._run import run_binary

    stdout, _, _ = run_binary(BIN / BINARIES[mode], bundle.args(), bundle.path, 300)
    report = parse_output(stdout)
    return {r: (v.finish_ns, v.exposed_comm_ns) for r, v in report.ranks.items()}


@pytest.mark.parametrize("name", ["coll4/coll4", "ddp2/ddp2"])
def test_cpu_traces_run_on_real_astrasim_and_match_hub_simulate(name: str, tmp_path: Path) -> None:
    from collhub_astrasim._bundle import _dims_for, build_bundle
    from hub.sim import simulate

    wl = _read(name)
    n = wl.rank_count
    network = f"switch:{n}@bw=100,lat=500"
    bundle = build_bundle(wl, out=tmp_path / "b", dims=_dims_for(network))
    readme = (tmp_path / "b" / "README.md").read_text()
    assert f"METADATA nodes left out: {n}" in readme
    assert f"dangling dependencies dropped: {len(wl.dangling)}" in readme
    back = read_workload(tmp_path / "b" / bundle.workload_prefix)
    assert not back.dangling and not any(nd.type == NodeType.METADATA for r in back.ranks for nd in r)
    if (why := oracle_unavailable()) is not None:
        pytest.skip(why)
    for mode in ("unaware", "aware"):
        real = _run(bundle, mode)
        assert sorted(real) == list(range(n))
        res = simulate(wl, network, mode=mode)
        assert [real[r][0] for r in range(n)] == res.rank_finish_ns, mode
        assert [real[r][1] for r in range(n)] == [p["exposed_comm_ns"] for p in res.per_rank]
        # no communication: the whole step is serial CPU compute
        for r in range(n):
            cpu_ns = 1000 * sum(nd.duration_micros for nd in wl.ranks[r] if nd.type == NodeType.COMP)
            assert 0 <= real[r][0] - cpu_ns < 20


def test_dlrm8_runs_on_real_astrasim_with_native_ring(tmp_path: Path) -> None:
    from collhub_astrasim._bundle import _dims_for, build_bundle

    wl = _read("dlrm8/dlrm")
    bundle = build_bundle(
        wl,
        out=tmp_path / "b",
        dims=_dims_for("switch:8@bw=100,lat=500"),
        algorithm_for={"allreduce": "native:ring", "alltoall": "native:ring"},
        system=NATIVE,
    )
    assert bundle.repairs == {"dangling dependencies dropped": 16}
    if (why := oracle_unavailable()) is not None:
        pytest.skip(why)
    real = _run(bundle, "unaware")
    finish = [real[r][0] for r in range(8)]
    assert min(finish) == 22230202 and max(finish) == 23175293  # NOTES.md


@pytest.mark.parametrize("name", ["coll4/coll4", "ddp2/ddp2"])
def test_gloo_collectives_recognized_inlined_equal_real_astrasim(name: str, tmp_path: Path) -> None:
    """CPU traces: gloo:* COMP nodes -> COMM_COLL (by name and input tensor) -> ring inlined."""
    from collhub_astrasim._bundle import _dims_for, build_bundle
    from hub.sim import simulate
    from hub.workload import InlineParams, inline_workload, recognize_collectives

    wl = _read(name)
    rec, count = recognize_collectives(wl)
    gloo = sum(1 for r in wl.ranks for nd in r if nd.name.startswith("gloo:"))
    assert count == gloo > 0
    if name == "ddp2/ddp2":  # 2 DDP buckets x 2 iterations; MLP of 102,928 parameters (float32)
        sizes = sorted(nd.comm_size for nd in rec.ranks[0] if nd.type == NodeType.COLL)
        assert len(sizes) == 4 and sum(sizes) == 2 * 102928 * 4
    inl = inline_workload(
        wl,
        {"allreduce": "ring", "alltoall": "ring", "allgather": "ring", "broadcast": "ring"},
        InlineParams(recognize=True),
    )
    assert not any(nd.type == NodeType.COLL for r in inl.ranks for nd in r)
    network = f"switch:{wl.rank_count}@bw=100,lat=500"
    bundle = build_bundle(inl, out=tmp_path / "b", dims=_dims_for(network))
    if (why := oracle_unavailable()) is not None:
        pytest.skip(why)
    from collhub_astrasim._repair import runnable_copy

    ran = runnable_copy(inl)[0]  # what the bundle holds (ASTRA-sim cannot run METADATA nodes)
    for mode in ("unaware", "aware"):
        real = _run(bundle, mode)
        res = simulate(ran, network, mode=mode)
        assert [real[r][0] for r in range(wl.rank_count)] == res.rank_finish_ns, mode
        assert [real[r][1] for r in range(wl.rank_count)] == [p["exposed_comm_ns"] for p in res.per_rank]
