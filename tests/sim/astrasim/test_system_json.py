"""hub.simulate with an ASTRA-sim system.json: custom keys serve collectives, native ones as docs/simulator.md lists."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from hub.chakra import Collective, Workload, read_workload
from hub.errors import SimulationError
from hub.sim import simulate


def test_custom_key_of_astrasim_example(astrasim_example: Path) -> None:
    # ASTRA-sim's own example: its README and the real binaries give 90174 ns (both backends)
    wl = read_workload(astrasim_example / "workload" / "all_reduce")
    for mode in ("unaware", "aware"):
        r = simulate(wl, astrasim_example / "network.yml", mode=mode, system=astrasim_example / "system.json")
        assert r.time_ns == 90174


# (native ring, direct, directN (N >= 1) and doubleBinaryTree all-to-all are reproduced:
# tests/sim/astrasim/test_algorithms.py)
@pytest.mark.parametrize("impl", [["halvingDoubling"], ["oneHalvingDoubling"], ["direct0"], ["ring", "ring"]])
def test_native_implementation_is_refused_naming_the_key(impl: list[str]) -> None:
    wl = Workload.single_collective(Collective.ALLTOALL, 4, 4096)
    with pytest.raises(SimulationError) as info:
        simulate(wl, "switch:4", system={"all-to-all-implementation": impl, "preferred-dataset-splits": 4})
    assert "all-to-all-implementation" in info.value.message and impl[0] in info.value.message
    assert "all-to-all-implementation-custom" in (info.value.hint or "")


def test_native_key_for_an_unused_collective_is_ignored() -> None:
    wl = Workload.single_collective(Collective.ALLREDUCE, 4, 4096)
    ref = simulate(wl, "switch:4").time_ns
    assert simulate(wl, "switch:4", system={"all-to-all-implementation": ["ring"]}).time_ns == ref


def test_dlrm8_notes_native_ring_system_runs_and_a_mix_is_refused(shared_data: Path, tmp_path: Path) -> None:
    """The set-up of dlrm8's NOTES.md (every collective native ring, localBWAware) from a system.json
    file gives NOTES.md's range (against the real binary: tests/sim/astrasim/test_streams.py); a
    native all-to-all next to a custom-served all-reduce is refused."""
    from collhub_astrasim._repair import runnable_copy

    prefix = shared_data / "chakra-pytorch" / "dlrm8" / "dlrm"
    if not Path(f"{prefix}.0.et").is_file():
        pytest.skip("dlrm8 not in the shared data")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wl = read_workload(prefix)
    cfg = tmp_path / "system.json"
    notes = {
        "scheduling-policy": "LIFO",
        "endpoint-delay": 10,
        "active-chunks-per-dimension": 1,
        "preferred-dataset-splits": 4,
        "collective-optimization": "localBWAware",
        "local-mem-bw": 1600,
    }
    cfg.write_text(
        json.dumps(
            {
                **notes,
                **{
                    k: ["ring"]
                    for k in (
                        "all-reduce-implementation",
                        "all-gather-implementation",
                        "reduce-scatter-implementation",
                        "all-to-all-implementation",
                    )
                },
            }
        )
    )
    plain, _ = runnable_copy(wl)  # (as NOTES.md ran it: only the dangling dependencies dropped)
    finish = simulate(plain, "switch:8@bw=100,lat=500", system=cfg).rank_finish_ns  # (NOTES.md's network)
    assert (min(finish), max(finish)) == (22230202, 23175293)  # NOTES.md
    cfg.write_text(json.dumps({**notes, "collective-optimization": "baseline", "all-to-all-implementation": ["ring"]}))
    with pytest.raises(SimulationError, match="system.json key all-to-all-implementation.*next to allreduce") as info:
        simulate(wl, "switch:8", system=cfg)
    assert "custom path" in (info.value.hint or "")
