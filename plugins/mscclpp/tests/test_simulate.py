"""hub.simulate runs imported plans; a 2-rank plan simulates to the time computed by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from collhub_mscclpp import parse_plan, plan_to_algorithm
from hub.sim import simulate
from hub.verify import verify

from ._plans import PLANS_DIR, load_json


def _gpu(r: int) -> dict[str, Any]:
    peer = 1 - r
    return {
        "id": r,
        "input_chunks": 1,
        "output_chunks": 2,
        "scratch_chunks": 0,
        "channels": [{"channel_type": "memory", "connected_to": [peer]}],
        "remote_buffers": [{"rank": peer, "type": "o", "access_channel_types": ["memory"]}],
        "threadblocks": [
            {
                "id": 0,
                "channels": [{"channel_type": "memory", "channel_ids": [0]}],
                "remote_buffer_refs": [{"access_channel_type": "memory", "remote_buffer_ids": [0]}],
                "ops": [
                    {
                        "name": "put",
                        "src_buff": [{"type": "o", "index": r, "size": 1}],
                        "dst_buff": [{"buffer_id": 0, "index": r, "size": 1}],
                        "channel_type": "memory",
                    },
                    {"name": "nop"},
                    {"name": "signal", "channel_ids": [0], "channel_type": "memory"},
                    {"name": "wait", "channel_ids": [0], "channel_type": "memory"},
                    {"name": "nop"},
                ],
            }
        ],
    }


HAND = {"name": "ag2", "collective": "allgather", "protocol": "Simple", "inplace": True, "gpus": [_gpu(0), _gpu(1)]}


def test_hand_checked_plan_time() -> None:
    """Rank r (fc:2, 100 GB/s = 107.3741824 B/ns, 500 ns per hop; size 2 MiB, a chunk 1 MiB):

    * t=0..1    the two flag-initialising COMP COPYs (1 ns each, parallel), launch 1..2;
    * t=2       put SEND of 1048576 B: floor(500 + 1048576 / 107.3741824) = floor(10265.625) = 10265 ns,
                it completes on arrival at 10267 (the peer's put RECV, posted at 2, too);
    * 10267..10268  nop;
    * 10268     signal SEND of 8 B: floor(500 + 8 / 107.3741824) = 500 ns -> arrives 10768;
    * the wait (chained after the signal on thread 0, and after the peer's put RECV) is posted at
      10768 when the peer's signal has just arrived: completes at 10768;
    * 10768..10769  the closing nop. Total 10769 ns."""
    imp = plan_to_algorithm(parse_plan(HAND, "hand.json"), size=2 << 20)
    assert verify(imp.algorithm).ok
    res = simulate(imp.algorithm, "fc:2@bw=100,lat=500")
    assert res.time_ns == 10769


def test_wait_placement_matters() -> None:
    """The same plan with the put moved after the signal: the peer's wait no longer covers it."""
    doc = load_plan_swapped()
    imp = plan_to_algorithm(parse_plan(doc, "swapped.json"), size=2 << 20)
    assert imp.problems and "can finish before the data lands" in imp.problems[0].message


def load_plan_swapped() -> dict[str, Any]:
    import copy

    doc = copy.deepcopy(HAND)
    for g in doc["gpus"]:
        ops = g["threadblocks"][0]["ops"]
        ops[0], ops[2] = ops[2], ops[0]
    return doc


@pytest.mark.skipif(not PLANS_DIR.is_dir(), reason="shared MSCCL++ plans not available")
@pytest.mark.parametrize(
    "name",
    ["allreduce_nvls_zerocopy_i8_n8.json", "allreduce_allpairs_pkt_n8.json", "mn_allgather_port_2x8.json"],
)
def test_shared_plans_simulate_on_two_nodes(name: str) -> None:
    imp = plan_to_algorithm(parse_plan(load_json(PLANS_DIR / name), name), size=1 << 20)
    ranks = imp.algorithm.ranks
    topo = f"fc:{ranks // 2}@bw=300,lat=500,ring:2@bw=50,lat=2000" if ranks > 8 else f"fc:{ranks}@bw=300,lat=500"
    res = simulate(imp.algorithm, topo)
    assert res.time_ns > 0
    if res.bound_ns:
        assert res.time_ns >= res.bound_ns  # never below the lower bound


def test_astrasim_bundle_takes_an_imported_plan(tmp_path: Path) -> None:
    """The astrasim plugin bundles an imported plan for the real ASTRA-sim (its own checks run:
    bound sizes, peers, tags)."""
    pytest.importorskip("collhub_astrasim")
    from hub.plugins import RunContext, get_manager

    imp = plan_to_algorithm(parse_plan(HAND, "hand.json"), size=2 << 20)
    res = get_manager().run_consumer(
        "astrasim.bundle", imp.algorithm, {"network": "fc:2", "out": str(tmp_path / "b")}, RunContext(workdir=tmp_path)
    )
    assert (tmp_path / "b" / "run.sh").is_file()
    assert res.metrics["predicted_ns_unaware"] == simulate(imp.algorithm, "fc:2").time_ns
