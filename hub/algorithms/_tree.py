"""Double binary tree (``hub.double_binary_tree``), NCCL style.

Two binary trees over the same ranks, built so that (almost) every rank that is a leaf in one is
an inner node in the other; each tree carries half of the data, cut into ``pipeline`` chunks that
flow independently (reduce up, then broadcast down). The first tree is the in-order "btree" NCCL
uses: a rank's parent is found by flipping its lowest set bit and setting the next one. For
all-reduce the second tree is the mirror image (even rank counts) or the shift by one (odd), as in
NCCL. For rooted collectives both trees must share the root, so ranks are renumbered v = r - root,
the first tree is the btree in v, and the second hangs a mirrored (or shifted) btree over
v = 1..n-1 below v = 0.
"""

from __future__ import annotations

from dataclasses import replace

from ..chakra import Algorithm, AlgorithmMeta, Buffer, Collective, Op, RankGraphBuilder, build_algorithm
from ._common import check_collective, check_ranks, check_root
from ._params import DoubleBinaryTreeParams, validated

__all__ = ["DOUBLE_BINARY_TREE_COLLECTIVES", "btree", "build_double_binary_tree", "double_binary_tree", "trees"]

DOUBLE_BINARY_TREE_COLLECTIVES = frozenset({"allreduce", "broadcast", "reduce"})

Tree = tuple[list[int], list[list[int]]]  # parent per rank (-1 = root), children per rank


def double_binary_tree(
    collective: str | Collective,
    ranks: int,
    *,
    pipeline: int = 1,
    reduction_comp: bool = True,
    inplace: bool = True,
    root: int = 0,
) -> Algorithm:
    """Two complementary binary trees, each carrying half of the data in ``pipeline`` chunks."""
    params = validated(
        DoubleBinaryTreeParams,
        collective=collective,
        ranks=ranks,
        pipeline=pipeline,
        reduction_comp=reduction_comp,
        inplace=inplace,
        root=root,
    )
    return build_double_binary_tree(params)  # type: ignore[arg-type]


def btree(n: int) -> Tree:
    """The in-order binary tree over 0..n-1 rooted at 0 (0 has one child, the largest power of
    two below n)."""
    parent = [-1] * n
    children: list[list[int]] = [[] for _ in range(n)]
    for rank in range(1, n):
        bit = rank & -rank  # lowest set bit
        up = (rank ^ bit) | (bit << 1)
        parent[rank] = up if up < n else rank ^ bit
        children[parent[rank]].append(rank)
    for kids in children:
        kids.sort()
    return parent, children


def _relabel(tree: Tree, f: dict[int, int], n: int) -> Tree:
    """Apply the rank map ``f`` (old label -> new label) to a tree."""
    parent_old, children_old = tree
    parent = [-1] * n
    children: list[list[int]] = [[] for _ in range(n)]
    for old, new in f.items():
        parent[new] = -1 if parent_old[old] == -1 else f[parent_old[old]]
        children[new] = sorted(f[x] for x in children_old[old])
    return parent, children


def trees(n: int, root: int | None = None) -> tuple[Tree, Tree]:
    """The two trees over ``n`` ranks: NCCL's double binary tree for ``root=None``, else two trees
    that share ``root``."""
    if root is None:
        first = btree(n)
        if n % 2 == 0:
            second = _relabel(first, {x: n - 1 - x for x in range(n)}, n)
        else:
            second = _relabel(first, {x: (x + 1) % n for x in range(n)}, n)
        return first, second
    v_to_r = {v: (v + root) % n for v in range(n)}
    first = _relabel(btree(n), v_to_r, n)
    m = n - 1  # the second tree: a btree over x = 0..m-1 mapped onto v = 1..n-1, below v = 0
    sub_parent, sub_children = btree(m)
    x_to_v = {x: (m - x if n % 2 == 0 else x + 1) for x in range(m)}
    parent_v = [-1] * n
    children_v: list[list[int]] = [[] for _ in range(n)]
    for x in range(m):
        v = x_to_v[x]
        parent_v[v] = 0 if sub_parent[x] == -1 else x_to_v[sub_parent[x]]
        children_v[v] = [x_to_v[c] for c in sub_children[x]]
    children_v[0] = [x_to_v[0]]
    second = _relabel((parent_v, children_v), v_to_r, n)
    return first, second


def build_double_binary_tree(p: DoubleBinaryTreeParams) -> Algorithm:
    coll = check_collective("double_binary_tree", p.collective, DOUBLE_BINARY_TREE_COLLECTIVES)
    n = check_ranks("double_binary_tree", p.ranks)
    P = p.pipeline
    c = 2 * P
    meta = AlgorithmMeta(
        collective=coll,
        ranks=n,
        in_chunks=c,
        out_chunks=c,
        inplace=p.inplace,
        name="double_binary_tree",
        producer="hub.double_binary_tree",
        extra=(("pipeline", P),),
    )
    rooted = coll != Collective.ALLREDUCE
    root = check_root("double_binary_tree", p.root, n) if rooted else 0
    if rooted:
        meta = replace(meta, root=root)
    up = coll in (Collective.ALLREDUCE, Collective.REDUCE)
    down = coll in (Collective.ALLREDUCE, Collective.BROADCAST)
    tree_pair = trees(n, root if rooted else None)
    builders = [RankGraphBuilder(r) for r in range(n)]
    for r, b in enumerate(builders):
        inner = any(tree[1][r] for tree in tree_pair)
        work = Buffer.INPUT if p.inplace else Buffer.OUTPUT
        start: list[int] = []
        if not p.inplace and ((up and inner) or (not up and r == root)):
            # reductions accumulate in the output (or the broadcast root copies its data over)
            start = [b.comp(Op.COPY, src=(Buffer.INPUT, 0), dst=(Buffer.OUTPUT, 0), count=c)]
        for t, (parent, children) in enumerate(tree_pair):
            par, kids = parent[r], children[r]
            last_up: dict[int, int | None] = {k: None for k in kids}  # previous up-RECV per child (keeps chunk order)
            last_down: int | None = None
            for j in range(P):
                o = t * P + j
                tag_up, tag_down = (2 * t) * P + j, (2 * t + 1) * P + j
                ready: list[int] = list(start)
                sent_up: list[int] = []
                if up:
                    for k in kids:
                        prev = last_up[k]
                        deps = ready + ([prev] if prev is not None else [])
                        rv = b.recv(k, dst=(work, o), op=Op.REDUCE, tag=tag_up, chan=t, deps=deps)
                        last_up[k] = rv
                        ready = [b.comp(Op.NONE, count=1, deps=[rv], chan=t)] if p.reduction_comp else [rv]
                    if par != -1:
                        src = work if kids else Buffer.INPUT
                        sent_up = [b.send(par, src=(src, o), tag=tag_up, chan=t, deps=ready)]
                if not down:
                    continue
                if par == -1:
                    src_down = work if up else Buffer.INPUT
                else:
                    dst = work if up else Buffer.OUTPUT
                    deps = sent_up + ([last_down] if last_down is not None else [])
                    last_down = b.recv(par, dst=(dst, o), tag=tag_down, chan=t, deps=deps)
                    ready, src_down = [last_down], dst
                for k in kids:
                    b.send(k, src=(src_down, o), tag=tag_down, chan=t, deps=ready)
    return build_algorithm(meta, builders)
