"""The two trees of the double binary tree are trees, and complementary."""

from __future__ import annotations

import pytest

from hub.algorithms._tree import btree, trees


def _check_tree(parent: list[int], children: list[list[int]], root: int) -> None:
    n = len(parent)
    assert parent[root] == -1 and parent.count(-1) == 1
    for r in range(n):
        assert len(children[r]) <= 2
        for c in children[r]:
            assert parent[c] == r
        seen, x = set(), r
        while x != root:  # every rank reaches the root without a cycle
            assert x not in seen
            seen.add(x)
            x = parent[x]


def test_btree_small_by_hand() -> None:
    # NCCL's picture for 12 ranks: 0 -> 8; 8 -> 4, 10; 4 -> 2, 6; 2 -> 1, 3; 10 -> 9, 11
    parent, children = btree(12)
    assert children[0] == [8] and children[8] == [4, 10] and children[4] == [2, 6]
    assert children[2] == [1, 3] and children[10] == [9, 11] and children[6] == [5, 7]


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6, 7, 8, 12, 13, 31, 64, 100])
def test_both_trees_are_trees(n: int) -> None:
    t0, t1 = trees(n)
    _check_tree(*t0, root=0)
    _check_tree(*t1, root=n - 1 if n % 2 == 0 else 1)
    if n >= 4:  # complementary: a rank is an inner node in at most one tree
        inner_both = [r for r in range(n) if t0[1][r] and t1[1][r]]
        assert len(inner_both) <= 1
    for root in (0, n - 1, n // 2):
        a, b = trees(n, root)
        _check_tree(*a, root=root)
        _check_tree(*b, root=root)


def _depth(parent: list[int], r: int) -> int:
    d = 0
    while parent[r] != -1:
        r, d = parent[r], d + 1
    return d


@pytest.mark.parametrize("n", [2, 3, 7, 8, 9, 100, 1000])
def test_tree_depth_is_logarithmic(n: int) -> None:
    import math

    for parent, _children in trees(n):
        assert max(_depth(parent, r) for r in range(n)) <= math.ceil(math.log2(n)) + 1
