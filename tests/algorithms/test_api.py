"""Params models, producer factories, make(), CATALOG and the error cases."""

from __future__ import annotations

import pydantic
import pytest

import hub.algorithms as A
from hub.errors import AlgorithmError, UsageError
from hub.plugins import RunContext

FACTORIES = {
    "ring": (A.produce_ring, A.RingParams),
    "direct": (A.produce_direct, A.DirectParams),
    "halving_doubling": (A.produce_halving_doubling, A.HalvingDoublingParams),
    "double_binary_tree": (A.produce_double_binary_tree, A.DoubleBinaryTreeParams),
    "hierarchical": (A.produce_hierarchical, A.HierarchicalParams),
}


def test_catalog_is_the_registration_contract() -> None:
    assert A.CATALOG == {
        "ring": frozenset({"allreduce", "allgather", "reducescatter", "alltoall", "broadcast", "reduce"}),
        "direct": frozenset(
            {"allreduce", "allgather", "reducescatter", "alltoall", "broadcast", "reduce", "gather", "scatter"}
        ),
        "halving_doubling": frozenset({"allreduce", "allgather", "reducescatter"}),
        "double_binary_tree": frozenset({"allreduce", "broadcast", "reduce"}),
        "hierarchical": frozenset({"allreduce", "allgather", "reducescatter", "alltoall"}),
    }


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_factories_take_params_and_ctx(name: str) -> None:
    factory, model = FACTORIES[name]
    params = model(collective="All_Reduce", ranks=8)
    assert params.collective == "allreduce"
    alg = factory(params, RunContext())
    assert alg.meta.ranks == 8 and alg.meta.producer == f"hub.{name}"
    assert model.model_config.get("extra") == "forbid"
    for field_name, field in model.model_fields.items():
        assert field.description, f"{model.__name__}.{field_name} has no description"
    with pytest.raises(pydantic.ValidationError):
        model(collective="allreduce", ranks=8, no_such_option=1)
    with pytest.raises(pydantic.ValidationError):
        model(collective="allsum", ranks=8)


def test_params_accept_collective_spellings() -> None:
    for spelling in ("reduce_scatter", "ReduceScatter", "reduce-scatter", "reducescatter"):
        assert A.RingParams(collective=spelling, ranks=4).collective == "reducescatter"


@pytest.mark.parametrize(
    ("call", "fragment", "hint_fragment"),
    [
        (
            lambda: A.halving_doubling("reducescatter", 6),
            "reducescatter needs a power-of-two rank count, got 6",
            "hub.ring",
        ),
        (lambda: A.halving_doubling("allgather", 12), "power-of-two rank count, got 12", "8 or 16 ranks"),
        (lambda: A.ring("gather", 4), "ring does not implement gather", "allreduce"),
        (lambda: A.double_binary_tree("allgather", 4), "does not implement allgather", "broadcast"),
        (lambda: A.hierarchical("broadcast", 4), "does not implement broadcast", "alltoall"),
        (lambda: A.ring("allreduce", 1), "at least 2 ranks, got 1", "ranks >= 2"),
        (lambda: A.direct("broadcast", 4, root=4), "root 4 is not a rank", "0..3"),
        (lambda: A.hierarchical("allreduce", 12, local_size=5), "local_size 5 does not divide 12", "1, 2, 3, 4, 6, 12"),
        (lambda: A.make("rng", "allreduce", 4), "unknown built-in algorithm 'rng'", "did you mean 'ring'"),
    ],
)
def test_algorithm_errors_are_one_line_with_hint(call, fragment: str, hint_fragment: str) -> None:
    with pytest.raises(AlgorithmError) as info:
        call()
    assert fragment in str(info.value) and "\n" not in str(info.value)
    assert info.value.hint and hint_fragment in info.value.hint


def test_bad_option_values_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="channels"):
        A.ring("allreduce", 4, channels=0)
    with pytest.raises(UsageError, match="bogus"):
        A.make("ring", "allreduce", 4, bogus=True)
    with pytest.raises(UsageError, match="collective"):
        A.make("direct", "allsum", 4)


def test_make_matches_the_plain_functions() -> None:
    a = A.make("hub.ring", "allreduce", 6, channels=2, pipeline=2)
    b = A.ring("allreduce", 6, channels=2, pipeline=2)
    assert a.content_hash() == b.content_hash()
    assert dict(a.meta.extra)["channels"] == 2


def test_hierarchical_default_local_size() -> None:
    from hub.algorithms._hierarchical import default_local_size

    assert [default_local_size(n) for n in (2, 6, 7, 9, 12, 16, 64)] == [1, 3, 1, 3, 6, 8, 8]
    assert dict(A.hierarchical("allreduce", 16).meta.extra)["local_size"] == 8


def test_graphs_do_not_share_writable_columns() -> None:
    alg = A.ring("allreduce", 4)
    g0, g1 = alg.graphs[0], alg.graphs[1]
    before = int(g1.peer[0])  # peers differ per rank: each rank has its own writable row
    g0.peer[0] = 999
    assert int(g1.peer[0]) == before
    # what is the same on every rank (tags here, dependencies) is one array shared and frozen
    for shared in (g0.tag, g0.ids, g0.size, g0.dep_pos):
        with pytest.raises(ValueError):
            shared[0] = 1
    assert int(g1.tag[0]) == int(g0.tag[0])
