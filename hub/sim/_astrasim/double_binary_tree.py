"""ASTRA-sim's native ``doubleBinaryTree`` (``DoubleBinaryTreeAllReduce.cc`` on
``DoubleBinaryTreeTopology``): a reduce up a binary tree and a broadcast down it, whole chunks.

The trees (``BinaryTree``): for ``n = 2^k`` NPUs, a complete binary tree of ``n-1`` nodes hangs
under one more root with a single child, numbered in order (left subtree, node, right subtree).
Chunks alternate between two trees, counted per NPU over every chunk of the collective kind
(``DoubleBinaryTreeTopology::get_topology``): even chunks use the tree whose root (hanging the
subtree on its left) is NPU ``n-1``, odd ones the tree whose root (subtree on its right) is NPU 0.
Any other ``n`` leaves NPUs outside the tree (ASTRA-sim then crashes): refused.

Per chunk of ``c`` bytes, every message ``c`` bytes, ``P`` = bus + reduction of ``c``:

* leaf: bus; send to the parent and post the receive from it; on receipt, bus; end;
* intermediate: post receives from both children; ``P`` after the later of them, send to the
  parent and post the receive from it; ``P`` after that receipt, send to both children and end
  at once (the sends' arrival is not waited for);
* root: post the receive from its child; ``P`` after it, send back and end at once.

ASTRA-sim runs this all-reduce pattern whichever collective names ``doubleBinaryTree``.
"""

from __future__ import annotations

from .._engine.program import K_COMP, K_RECV, K_SEND
from .ops import Op, Schedule, processing, reduce_ns

__all__ = ["dbt_schedule", "tree"]


def tree(n: int, root_max: bool) -> tuple[list[int], list[tuple[int, int]]]:
    """(parent, (left, right) children) per NPU of one of the two trees; -1 = none."""
    parent, kids = [-1] * n, [(-1, -1)] * n

    def build(lo: int, size: int, up: int) -> int:  # a complete subtree of ``size`` nodes from ``lo``
        if size == 0:
            return -1
        half = size // 2
        me = lo + half
        parent[me] = up
        kids[me] = (build(lo, half, me), build(me + 1, half, me))
        return me

    if root_max:
        top = n - 1
        kids[top] = (build(0, n - 1, top), -1)
    else:
        top = 0
        kids[top] = (-1, build(1, n - 1, top))
    return parent, kids


def dbt_schedule(n: int, pos: int, chunk: int, chunk_no: int, delay: int, bw_GBps: float) -> Schedule:
    """The chunk schedule of NPU ``pos`` of ``n`` for its ``chunk_no``-th chunk of this collective
    kind (module doc)."""
    parent, kids = tree(n, chunk_no % 2 == 0)
    up, (left, right) = parent[pos], kids[pos]
    red = reduce_ns(chunk, bw_GBps)
    ops: list[Op] = []
    if up < 0:  # root: one child
        child = left if left >= 0 else right
        ops.append(Op(K_RECV, peer=child, size=chunk))
        end = processing(ops, delay, red, (0,))
        ops.append(Op(K_SEND, peer=child, size=chunk, deps=(end,)))
        return tuple(ops), (end,)
    if left < 0:  # leaf
        ops.append(Op(K_COMP, dur=delay))
        ops.append(Op(K_SEND, peer=up, size=chunk, deps=(0,)))
        ops.append(Op(K_RECV, peer=up, size=chunk, deps=(0,)))
        ops.append(Op(K_COMP, dur=delay, deps=(2,)))
        return tuple(ops), (3,)
    ops.append(Op(K_RECV, peer=left, size=chunk))
    ops.append(Op(K_RECV, peer=right, size=chunk))
    mid = processing(ops, delay, red, (0, 1))
    ops.append(Op(K_SEND, peer=up, size=chunk, deps=(mid,)))
    ops.append(Op(K_RECV, peer=up, size=chunk, deps=(mid,)))
    end = processing(ops, delay, red, (len(ops) - 1,))
    ops.append(Op(K_SEND, peer=left, size=chunk, deps=(end,)))
    ops.append(Op(K_SEND, peer=right, size=chunk, deps=(end,)))
    return tuple(ops), (end,)
