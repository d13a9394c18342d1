"""CPU-side parts: the NCCL round schedule, chunk geometry, and lazy torch."""

from __future__ import annotations

import subprocess
import sys

import pytest

from collhub_replay import preflight
from collhub_replay._geometry import geometry, size_ladder
from collhub_replay._plan import SEND
from hub.algorithms import make
from hub.errors import UsageError


@pytest.mark.parametrize(
    "name,coll,n",
    [
        ("ring", "allreduce", 4),
        ("direct", "alltoall", 3),
        ("halving_doubling", "reducescatter", 8),
        ("double_binary_tree", "allreduce", 5),
    ],
)
def test_rounds_put_both_ends_of_every_message_in_the_same_group(name: str, coll: str, n: int) -> None:
    plan = preflight(make(name, coll, n), [1 << 16], "float32")
    seen: dict[int, list[tuple[int, int, bool]]] = {}
    for rp in plan.ranks_plan:
        for r, (_, group) in enumerate(rp.rounds):
            msgs = [rp.msg[v] for v in group]
            assert msgs == sorted(msgs)  # both ends issue a group in message order
            for v in group:
                seen.setdefault(rp.msg[v], []).append((r, rp.rank, rp.kind[v] == SEND))
    assert len(seen) == plan.messages
    for ends in seen.values():
        assert len(ends) == 2 and ends[0][0] == ends[1][0] and {e[2] for e in ends} == {True, False}


def test_geometry_rounds_like_nccl_tests_and_pads_chunks() -> None:
    plan = preflight(make("ring", "allgather", 4), [1000], "float32")
    geo = geometry(plan, 1000, "float32")  # 1000 B / (4 ranks x 4 B) = 62 floats per rank
    assert (geo.size, geo.count, geo.unit, geo.chunk) == (992, 248, 62, 62)
    ar = preflight(make("ring", "allreduce", 4, pipeline=2), [4012], "float32")
    g2 = geometry(ar, 4012, "float32")  # 1003 floats in 8 chunks: 126 each, 5 elements of padding
    assert (g2.count, g2.chunk) == (1003, 126)
    with pytest.raises(UsageError, match="too small"):
        geometry(plan, 15, "float32")
    assert size_ladder([1024], 8192, 2) == [1024, 2048, 4096, 8192]


def test_registration_does_not_import_torch() -> None:
    code = (
        "import sys, collhub_replay.plugin, collhub_replay._params; "
        "from hub.plugins import get_manager; get_manager().component('replay.run'); "
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_manifest_matches_the_registration() -> None:
    from .replay_helpers import REPO

    out = subprocess.run(
        [sys.executable, "-m", "hub.cli", "plugins", "validate", str(REPO / "plugins" / "replay"), "--imports"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "manifest matches" in out.stdout


def test_example_pipeline_validates() -> None:
    from .replay_helpers import REPO

    out = subprocess.run(
        [sys.executable, "-m", "hub.cli", "pipeline", "validate", str(REPO / "examples" / "replay-vs-sim.yaml")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "3 source(s) x 2 point(s) x 2 consumer(s) = 12 row(s)" in out.stdout
