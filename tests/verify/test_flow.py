"""The C walk (hub/verify/_fast.py, hub/_native/_verify.c) against the Python walk (hub/verify/_walk.py).

The verifier takes the C walk's memories whenever it runs to completion without a data error
(with or without races and assumed pairings), and falls back to the Python walk otherwise, which
words every problem. Here every report is computed twice, once as the verifier does and once with
the C walk switched off (the Python walk only), and the two must be equal, field by field; the
built-ins must actually take the C walk.
"""

from __future__ import annotations

import random

import pytest

from hub.algorithms import make
from hub.chakra import Algorithm
from hub.transforms import chunk_algorithm, instances_algorithm
from hub.verify import VerificationReport, _api, verify

from . import verify_handmade as h
from .test_races import _builtin_cases, _random_algorithm


def _both(alg: Algorithm, monkeypatch: pytest.MonkeyPatch) -> tuple[VerificationReport, VerificationReport, bool]:
    """(report as verified, report by the Python walk alone, whether the C walk produced the memory)."""
    taken: list[bool] = []
    real = _api._fast_memory

    def spy(*args):  # type: ignore[no-untyped-def]
        mem = real(*args)
        taken.append(mem is not None)
        return mem

    with monkeypatch.context() as m:
        m.setattr(_api, "_fast_memory", spy)
        fast = verify(alg)
    with monkeypatch.context() as m:
        m.setattr(_api, "_fast_memory", lambda *args: None)
        slow = verify(alg)
    return fast, slow, any(taken)


@pytest.mark.parametrize(("name", "coll", "n"), _builtin_cases(), ids=lambda v: str(v))
def test_builtins_take_the_fast_pass_and_agree_with_the_walk(
    name: str, coll: str, n: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = make(name, coll, n)
    for alg in (base, chunk_algorithm(base, 2), instances_algorithm(base, 2)):
        fast, slow, taken = _both(alg, monkeypatch)
        assert fast == slow
        assert fast.ok
        assert taken, "a correct built-in must take the C walk"


@pytest.mark.parametrize("seed", range(200))
def test_random_algorithms_agree_with_the_walk(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    fast, slow, _ = _both(_random_algorithm(random.Random(seed)), monkeypatch)
    assert fast == slow


_HANDMADE = {
    "ring": lambda: h.ring_allreduce(4),
    "ring in place": lambda: h.ring_allreduce(5, inplace=True),
    "allgather": lambda: h.direct_allgather(4, inplace=True),
    "alltoall": lambda: h.direct_alltoall(4, 2),
    "broadcast": lambda: h.chain_broadcast(4, inplace=True),
    "reduce": lambda: h.chain_reduce(4),
    "reducescatter": lambda: h.direct_reducescatter(4, inplace=True),
    "gather": lambda: h.direct_gather(4, 1),
    "scatter": lambda: h.direct_scatter(4, 2),
    "recursive doubling": lambda: h.recursive_doubling_allgather(8),
}


@pytest.mark.parametrize("name", sorted(_HANDMADE))
def test_handmade_algorithms_take_the_fast_pass_and_agree(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    fast, slow, taken = _both(_HANDMADE[name](), monkeypatch)
    assert fast == slow
    assert fast.ok and taken  # assumed pairings too: the C walk pairs messages as the Python walk does


@pytest.mark.parametrize("wrong", [(0, 0), (1, 2), (3, 1)])
def test_data_errors_read_the_same_either_way(wrong: tuple[int, int], monkeypatch: pytest.MonkeyPatch) -> None:
    fast, slow, _ = _both(h.ring_allreduce(4, wrong_send_offset=wrong), monkeypatch)
    assert not fast.ok and fast.failed_level == "semantics"
    assert fast == slow
