"""Fixtures for the Chakra ET I/O tests: small algorithms built by hand with RankGraphBuilder."""

from __future__ import annotations

import numpy as np
import pytest

from hub.chakra import Algorithm, AlgorithmMeta, Buffer, Collective, Op, RankGraphBuilder, TypedValue
from hub.chakra._model import COLUMN_NAMES


def ring_allreduce(n: int, *, names: bool = False, comp: bool = True) -> Algorithm:
    """Ring all-reduce, n chunks, in place; reduce-scatter receives REDUCE, then a cost-only COMP."""
    builders = []
    for r in range(n):
        b = RankGraphBuilder(r)
        prev = None
        for k in range(2 * (n - 1)):
            rs = k < n - 1
            send_chunk = (r - k) % n if rs else (r - k + 1) % n
            recv_chunk = (r - k - 1) % n if rs else (r - k) % n
            s = b.send(
                (r + 1) % n,
                src=(Buffer.INPUT, send_chunk),
                deps=[prev] if prev is not None else [],
                tb=0,
                name=f"send{k}" if names else None,
            )
            rv = b.recv(
                (r - 1) % n,
                dst=(Buffer.INPUT, recv_chunk),
                op=Op.REDUCE if rs else Op.COPY,
                deps=[s],
                tb=0,
                name=f"recv{k}" if names else None,
            )
            prev = rv
            if rs and comp:
                prev = b.comp(Op.NONE, deps=[rv], duration_micros=7, tb=0, name=f"comp{k}" if names else None)
        builders.append(b)
    meta = AlgorithmMeta(Collective.ALLREDUCE, n, n, n, inplace=True, name="ring", producer="tests")
    return Algorithm(meta, tuple(b.build() for b in builders))


def assert_same_graphs(a: Algorithm, b: Algorithm) -> None:
    assert a.meta == b.meta
    assert len(a.graphs) == len(b.graphs)
    for r, (g, h) in enumerate(zip(a.graphs, b.graphs, strict=False)):
        for col in (*COLUMN_NAMES, "dep_ptr", "dep_pos"):
            x, y = getattr(g, col), getattr(h, col)
            assert x.dtype == y.dtype, (r, col)
            assert np.array_equal(x, y), (r, col, x, y)
        assert g.names == h.names, r
        assert g.extra == h.extra, r


@pytest.fixture
def ring8() -> Algorithm:
    return ring_allreduce(8).bind(1 << 20)


@pytest.fixture
def foreign_extra() -> tuple[tuple[str, object], ...]:
    return (
        ("comm_type", TypedValue("int64_val", 5)),
        ("weights", TypedValue("double_list", [0.5, 1.25])),
        ("flag", TypedValue("bool_val", True)),
        ("label", TypedValue("string_val", "x")),
        ("neg", TypedValue("sint64_val", -3)),
        ("fx", TypedValue("fixed32_val", 9)),
    )
