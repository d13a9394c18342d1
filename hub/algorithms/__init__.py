"""The built-in algorithm library: first-party producers of collective algorithms.

Plain functions for library users (``ring("allreduce", 8)``), the generic
:func:`make`, the :data:`CATALOG` of supported collectives, and the producer factories with
their params models that the core plugin registers as ``hub.ring``, ``hub.direct``,
``hub.halving_doubling``, ``hub.double_binary_tree`` and ``hub.hierarchical``.
Every algorithm is symbolic (sizes unbound); bind it with ``Algorithm.bind(bytes)``.
See ``docs/algorithms.md``.
"""

from __future__ import annotations

from ._catalog import (
    CATALOG,
    PARAMS,
    make,
    produce_direct,
    produce_double_binary_tree,
    produce_halving_doubling,
    produce_hierarchical,
    produce_ring,
)
from ._direct import direct
from ._halving_doubling import halving_doubling
from ._hierarchical import hierarchical
from ._params import (
    AlgorithmParams,
    DirectParams,
    DoubleBinaryTreeParams,
    HalvingDoublingParams,
    HierarchicalParams,
    RingParams,
)
from ._ring import ring
from ._tree import double_binary_tree

__all__ = [
    "CATALOG",
    "PARAMS",
    "AlgorithmParams",
    "DirectParams",
    "DoubleBinaryTreeParams",
    "HalvingDoublingParams",
    "HierarchicalParams",
    "RingParams",
    "direct",
    "double_binary_tree",
    "halving_doubling",
    "hierarchical",
    "make",
    "produce_direct",
    "produce_double_binary_tree",
    "produce_halving_doubling",
    "produce_hierarchical",
    "produce_ring",
    "ring",
]
