"""``algorithm_for`` resolves an ET prefix, a built-in name or a registered producer id, nothing else."""

from __future__ import annotations

import pytest

from hub.algorithms import make
from hub.chakra import Collective, Workload
from hub.errors import AlgorithmError, ComponentNotFoundError, HubError, UsageError
from hub.plugins import get_manager
from hub.sim import simulate as _simulate

WL = Workload.single_collective(Collective.ALLREDUCE, 8, 1 << 20)


def simulate(*args, **kwargs):
    """hub.sim.simulate able to run producer ids, as the ``hub.simulate`` consumer is."""
    return _simulate(*args, produce_algorithm=get_manager().produce_algorithm, **kwargs)


def test_an_et_prefix_is_read_from_disk(astrasim_example):
    prefix = str(astrasim_example / "algorithm" / "custom_allreduce")
    assert simulate(WL, "ring:8", algorithm_for={"allreduce": prefix}).time_ns == 90174  # the real ASTRA-sim's figure


@pytest.mark.parametrize("name", ["halving_doubling", "halving-doubling", "direct"])
def test_a_built_in_name_and_its_producer_id_build_the_same_algorithm(name: str) -> None:
    by_object = simulate(WL, "ring:8", algorithm_for={"allreduce": make(name, collective="allreduce", ranks=8)})
    by_name = simulate(WL, "ring:8", algorithm_for={"allreduce": name})
    by_id = simulate(WL, "ring:8", algorithm_for={"allreduce": "hub." + name.replace("-", "_")})
    assert by_name.time_ns == by_id.time_ns == by_object.time_ns
    assert by_name.time_ns != simulate(WL, "ring:8").time_ns  # not silently the default ring


@pytest.mark.parametrize(
    ("name", "error", "message"),
    [
        ("make", AlgorithmError, "unknown built-in algorithm 'make'"),  # hub.algorithms.make
        ("build_ring", AlgorithmError, "unknown built-in algorithm 'build_ring'"),  # a function of hub.algorithms
        ("CATALOG", AlgorithmError, "unknown built-in algorithm"),
        ("os.system", ComponentNotFoundError, "os.system"),
        ("hub.algorithms.build_ring", ComponentNotFoundError, "hub.algorithms.build_ring"),
        ("hub.simulate", UsageError, "'hub.simulate' is a consumer, not a producer"),
        ("hub.chunk", UsageError, "'hub.chunk' is a transform, not a producer"),
    ],
)
def test_anything_else_is_refused_by_name(name: str, error: type[HubError], message: str) -> None:
    with pytest.raises(error, match=message.replace(".", r"\.").replace("(", r"\(")):
        simulate(WL, "ring:8", algorithm_for={"allreduce": name})


def test_a_producer_id_needs_the_plugin_manager() -> None:
    # the workload layer never imports hub.plugins: without the manager's lookup, ids are refused
    with pytest.raises(UsageError, match="'hub.ring' is a producer id, and no plugin manager was given"):
        _simulate(WL, "ring:8", algorithm_for={"allreduce": "hub.ring"})


def test_the_simulate_consumer_runs_producer_ids_through_its_context() -> None:
    by_id = get_manager().run_consumer(
        "hub.simulate", WL, {"network": "ring:8", "mode": "unaware", "algorithm_for": {"allreduce": "hub.direct"}}
    )
    by_name = _simulate(WL, "ring:8", algorithm_for={"allreduce": "direct"})
    assert by_id.metrics["time_ns"] == by_name.time_ns
