"""Translation symmetry of regular networks (rings, tori, hypercubes, full meshes, rails).

A network stacked from Ring, FullyConnected and 2-NPU Line blocks is invariant under the
translations ``x -> x + r`` (per coordinate, modulo the block size). They form a group that maps
rank 0 to every rank exactly once, so an all-gather schedule can be chosen translation-invariant:
rank r's chunk follows rank 0's tree, moved by ``t_r``, at the same times. Every translation is
checked to map each logical edge onto one with the same costs before it is used.
"""

from __future__ import annotations

from collections.abc import Sequence

from hub.topology import DimensionOrderRouter, LinkGraph

from ._problem import Problem

__all__ = ["translations"]


def translations(graph: LinkGraph, problem: Problem) -> tuple[list[tuple[int, ...]], list[tuple[int, ...]]] | None:
    """``(t, gens)``: ``t[r]`` (a rank permutation with ``t[r][0] == r``) for every rank r, and
    the unit translations (one per dimension) that generate them; None if there are none."""
    router = graph.router
    if not isinstance(router, DimensionOrderRouter) or graph.switches:
        return None
    shape = []
    for kind, n in router.blocks:
        if kind in ("Ring", "FullyConnected") or (kind == "Line" and n == 2):
            shape.append(n)
        else:
            return None
    p = problem.ranks
    if p != _prod(shape):
        return None

    def coords(x: int) -> list[int]:
        out = []
        for n in shape:
            out.append(x % n)
            x //= n
        return out

    def rank(c: Sequence[int]) -> int:
        x, stride = 0, 1
        for v, n in zip(c, shape, strict=False):
            x += v * stride
            stride *= n
        return x

    cs = [coords(x) for x in range(p)]
    group = []
    for r in range(p):
        cr = cs[r]
        group.append(tuple(rank([(a + b) % n for a, b, n in zip(c, cr, shape, strict=False)]) for c in cs))
    for perm in group:
        for e in problem.edges:
            j = problem.edge_of.get((perm[e.src], perm[e.dst]))
            if j is None:
                return None
            img = problem.edges[j]
            if (img.arrive, img.hold, len(img.resources)) != (e.arrive, e.hold, len(e.resources)):
                return None
    gens, stride = [], 1
    for n in shape:
        gens.append(group[stride])
        stride *= n
    return group, gens


def _prod(xs: Sequence[int]) -> int:
    out = 1
    for x in xs:
        out *= x
    return out
