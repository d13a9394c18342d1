"""The chain heads of hub/verify/_races.py (in C) are the heads found by following the parents.

The chain covers are those of built-ins (wide and deep graphs) and of random algorithms; the
cover itself must be disjoint paths, each parent one HB level below its child.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from hub.algorithms import make
from hub.chakra import Algorithm
from hub.transforms import chunk_algorithm
from hub.verify import _races
from hub.verify._report import ProblemSink
from hub.verify._structure import check_structure

from .test_races import _random_algorithm


def _parents(alg: Algorithm) -> tuple[np.ndarray, np.ndarray]:
    """(chain parent per node, HB level per node) of ``alg``'s chain cover."""
    f, orders = check_structure(alg, ProblemSink("structure", 10))
    assert f is not None
    g = _races.happens_before(f, np.concatenate(orders), alg.meta.ranks)
    return _races._chain_parents(g), g.level


def _heads_one_by_one(par: np.ndarray) -> np.ndarray:
    top = np.arange(par.shape[0], dtype=np.int64)
    for v in range(par.shape[0]):
        u = v
        while par[u] >= 0:
            u = int(par[u])
        top[v] = u
    return top


_CASES = [
    lambda: make("ring", "allreduce", 16),
    lambda: chunk_algorithm(make("ring", "allgather", 8), 3),
    lambda: make("ring", "allreduce", 3),
] + [lambda s=s: _random_algorithm(random.Random(s)) for s in range(20)]


@pytest.mark.parametrize("i", range(len(_CASES)))
def test_heads_are_those_found_one_by_one(i: int) -> None:
    par, level = _parents(_CASES[i]())
    assert np.array_equal(_races._heads(par), _heads_one_by_one(par))
    child = np.flatnonzero(par >= 0)
    assert np.array_equal(level[par[child]], level[child] - 1)  # one level below
    assert np.unique(par[child]).shape[0] == child.shape[0]  # each parent continues one chain
