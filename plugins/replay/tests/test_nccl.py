"""The NCCL path. It needs one GPU per rank; without them it is skipped with the reason.

The NCCL interpreter (one batch_isend_irecv group per pre-flight round, CUDA-event timing) is
written to torch.distributed's documented API. Its schedule is tested on the CPU in
test_plan.py; the run itself only where GPUs exist.
"""

from __future__ import annotations

import pytest

from hub.algorithms import make


def _gpus() -> int:
    import torch
    import torch.distributed as dist

    if not (torch.cuda.is_available() and dist.is_nccl_available()):
        return 0
    return torch.cuda.device_count()


@pytest.mark.skipif(
    _gpus() < 2,
    reason="NCCL replay needs >= 2 CUDA GPUs (one per rank); this machine has "
    "fewer (a single GPU cannot host two NCCL ranks)",
)
def test_nccl_ring_allreduce_and_alltoall() -> None:
    from collhub_replay import ReplayParams, replay

    algs = [make("ring", "allreduce", 2), make("direct", "alltoall", 2)]
    for rep in replay(algs, ReplayParams(size=[4096, 1 << 20], backend="nccl", iters=5)):
        assert rep.backend == "nccl"
        for row in rep.rows:
            assert row["oop_wrong"] == row["ip_wrong"] == row["native_wrong"] == row["native_mismatch"] == 0


def test_nccl_round_schedule_runs_on_gloo() -> None:
    """The NCCL interpreter (rounds, one batch_isend_irecv group each, tag 0, order by message:
    NCCL's matching rules) on gloo's CPU transport, so its logic is tested without a GPU."""
    from collhub_replay import ReplayParams, replay

    algs = [
        make("ring", "allreduce", 3, inplace=False),
        make("direct", "alltoall", 3),
        make("ring", "reducescatter", 3),
        make("double_binary_tree", "allreduce", 3),
    ]
    reps = replay(algs, ReplayParams(size=[30004], backend="gloo", schedule="rounds", iters=1))
    for rep in reps:
        for row in rep.rows:
            assert row["oop_wrong"] == row["ip_wrong"] == row["native_wrong"] == row["native_mismatch"] == 0


def test_auto_picks_gloo_without_gpus() -> None:
    from collhub_replay._launch import pick_backend

    assert pick_backend("auto", 2) == ("nccl" if _gpus() >= 2 else "gloo")
