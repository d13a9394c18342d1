"""The catalog of built-in algorithms, the generic :func:`make` and the producer factories that
``hub/plugins/_builtin.py`` registers (``factory(params, ctx) -> Algorithm``)."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Any

from ..chakra import Algorithm, Collective
from ..errors import AlgorithmError
from ._direct import DIRECT_COLLECTIVES, build_direct
from ._halving_doubling import HALVING_DOUBLING_COLLECTIVES, build_halving_doubling
from ._hierarchical import HIERARCHICAL_COLLECTIVES, build_hierarchical
from ._params import (
    AlgorithmParams,
    DirectParams,
    DoubleBinaryTreeParams,
    HalvingDoublingParams,
    HierarchicalParams,
    RingParams,
    validated,
)
from ._ring import RING_COLLECTIVES, build_ring
from ._tree import DOUBLE_BINARY_TREE_COLLECTIVES, build_double_binary_tree

__all__ = [
    "CATALOG",
    "PARAMS",
    "make",
    "produce_direct",
    "produce_double_binary_tree",
    "produce_halving_doubling",
    "produce_hierarchical",
    "produce_ring",
]

#: algorithm name -> the collectives it implements (what the plugin registration advertises)
CATALOG: dict[str, frozenset[str]] = {
    "ring": RING_COLLECTIVES,
    "direct": DIRECT_COLLECTIVES,
    "halving_doubling": HALVING_DOUBLING_COLLECTIVES,
    "double_binary_tree": DOUBLE_BINARY_TREE_COLLECTIVES,
    "hierarchical": HIERARCHICAL_COLLECTIVES,
}

#: algorithm name -> its params model
PARAMS: dict[str, type[AlgorithmParams]] = {
    "ring": RingParams,
    "direct": DirectParams,
    "halving_doubling": HalvingDoublingParams,
    "double_binary_tree": DoubleBinaryTreeParams,
    "hierarchical": HierarchicalParams,
}

_BUILD: dict[str, Callable[[Any], Algorithm]] = {
    "ring": build_ring,
    "direct": build_direct,
    "halving_doubling": build_halving_doubling,
    "double_binary_tree": build_double_binary_tree,
    "hierarchical": build_hierarchical,
}


def make(name: str, collective: str | Collective, ranks: int, **opts: Any) -> Algorithm:
    """Build algorithm ``name`` ("ring" or "hub.ring", ...) for ``collective`` over ``ranks``.

    ``opts`` are the fields of the algorithm's params model (``channels=2``, ``root=3``, ...).
    """
    key = name.removeprefix("hub.").replace("-", "_")
    if key not in CATALOG:
        close = difflib.get_close_matches(key, CATALOG, n=1)
        raise AlgorithmError(
            f"unknown built-in algorithm {name!r}",
            hint=(f"did you mean {close[0]!r}? " if close else "") + "one of: " + ", ".join(CATALOG),
        )
    params = validated(PARAMS[key], collective=collective, ranks=ranks, **opts)
    return _BUILD[key](params)


def produce_ring(params: RingParams, ctx: Any = None) -> Algorithm:
    """Producer factory of ``hub.ring``."""
    return build_ring(params)


def produce_direct(params: DirectParams, ctx: Any = None) -> Algorithm:
    """Producer factory of ``hub.direct``."""
    return build_direct(params)


def produce_halving_doubling(params: HalvingDoublingParams, ctx: Any = None) -> Algorithm:
    """Producer factory of ``hub.halving_doubling``."""
    return build_halving_doubling(params)


def produce_double_binary_tree(params: DoubleBinaryTreeParams, ctx: Any = None) -> Algorithm:
    """Producer factory of ``hub.double_binary_tree``."""
    return build_double_binary_tree(params)


def produce_hierarchical(params: HierarchicalParams, ctx: Any = None) -> Algorithm:
    """Producer factory of ``hub.hierarchical``."""
    return build_hierarchical(params)
