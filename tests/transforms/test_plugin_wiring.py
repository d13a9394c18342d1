"""The transforms and hub.stats run through the plugin manager as the pipeline runs them."""

from __future__ import annotations

import pytest

from hub.errors import SemanticsError
from hub.plugins import create_manager
from hub.plugins._spec import RunContext
from hub.verify import verify
from tests.verify import verify_handmade as h


def test_chain_of_builtin_transforms_via_manager() -> None:
    pm = create_manager()
    ctx = RunContext()
    alg = h.direct_allgather(4)
    alg = pm.run_transform("hub.remap", alg, {"strategy": "random", "seed": 2}, ctx)
    alg = pm.run_transform("hub.chunk", alg, {"pieces": 3}, ctx)
    alg = pm.run_transform("hub.instances", alg, {"count": 2}, ctx)
    alg = pm.run_transform("hub.verify", alg, {"level": "semantics"}, ctx)
    assert verify(alg).ok
    res = pm.run_consumer("hub.stats", alg, {}, ctx)
    # 12 messages x 3 pieces x 2 instances; every message is one hop
    assert res.metrics["messages"] == 72 and res.metrics["steps"] == 1


def test_verify_step_fails_a_wrong_algorithm_via_manager() -> None:
    pm = create_manager()
    with pytest.raises(SemanticsError):
        pm.run_transform("hub.verify", h.ring_allreduce(4, wrong_send_offset=(2, 0)), {}, RunContext())
