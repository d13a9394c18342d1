"""NCCL's rings and trees, per channel and rank (``src/graph/trees.cc``, ``connect.cc``).

* ``dtree``: the double binary tree over node indices (``ncclGetDtree``). Tree 0: node r > 0 with
  lowest set bit b has parent ``(r ^ b) | 2b`` (``r ^ b`` if that is out of range), children
  ``r - b/2`` and the first of ``r + b/2, r + b/2, r + b/4, ...`` inside the range (NCCL's loop
  repeats its first candidate); node 0's only child (``down1``) is the largest power of two below N.
  Tree 1 mirrors tree 0 (r -> N-1-r) for even N and shifts it by one for odd N.
* ``intra_orders``: the GPU order of each search channel on an NVSwitch node, as NCCL's search
  returns it (neighbours first): ring channel c starts at local GPU c and runs down for even c,
  up for odd c; the tree graph runs the other way; one NVSwitch node alone: 0..ppn-1 on every
  channel ("sameChannels"). One GPU per node: the GPU itself. The DGX-1 (Volta) hybrid cube mesh's
  orders come from a search over its uneven links and are not modelled.
* ``gpu_trees``: NCCL's connection of the chains and the node trees (pattern 1 "balanced": the
  parent link on intra[0], child 0 on intra[1], child 1 on intra[0]; pattern 2 "split": both
  children on intra[1]; pattern 3 "tree": everything on intra[0]); channel c < C/2 uses tree 0,
  the others tree 1, with the same chains.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["TreeLinks", "btree", "dtree", "gpu_rings", "gpu_trees", "intra_orders"]


def btree(n: int, r: int) -> tuple[int, int, int, int]:
    """(up, down0, down1, childType) of node ``r`` in NCCL's btree over ``n`` nodes."""
    bit = 1
    while bit < n:
        if bit & r:
            break
        bit <<= 1
    if r == 0:
        return -1, -1, (bit >> 1) if n > 1 else -1, -1
    up = (r ^ bit) | (bit << 1)
    if up >= n:
        up = r ^ bit
    child_type = 0 if r < up else 1
    low = bit >> 1
    d0 = -1 if low == 0 else r - low
    d1 = -1 if low == 0 else r + low
    while d1 >= n:
        d1 = -1 if low == 0 else r + low
        low >>= 1
    return up, d0, d1, child_type


def dtree(n: int, r: int) -> tuple[tuple[int, int, int, int], tuple[int, int, int, int]]:
    """Both trees of node ``r``: ((up, down0, down1, childType) of tree 0, the same of tree 1)."""
    t0 = btree(n, r)
    if n % 2 == 1:
        u, d0, d1, ct = btree(n, (r - 1 + n) % n)
        t1 = (
            -1 if u == -1 else (u + 1) % n,
            -1 if d0 == -1 else (d0 + 1) % n,
            -1 if d1 == -1 else (d1 + 1) % n,
            ct,
        )
    else:
        u, d0, d1, ct = btree(n, n - 1 - r)
        t1 = (-1 if u == -1 else n - 1 - u, -1 if d0 == -1 else n - 1 - d0, -1 if d1 == -1 else n - 1 - d1, ct)
    return t0, t1


def intra_orders(ppn: int, channels: int, *, tree: bool = False, same: bool = False) -> list[list[int]]:
    """Per search channel, the local GPU order (see the module docstring); ``same``: every channel
    ``0..ppn-1`` (the search's "sameChannels" result, NVSwitch nodes alone)."""
    if same:
        return [list(range(ppn)) for _ in range(channels)]
    orders = []
    for c in range(channels):
        start = c % ppn
        down = (c % 2 == 0) != tree
        step = -1 if down else 1
        orders.append([(start + step * k) % ppn for k in range(ppn)])
    return orders


def gpu_rings(ppn: int, nodes: int, search_channels: int, channels: int, *, same: bool = False) -> list[list[int]]:
    """Per channel, the ring order of all ranks starting at rank 0 (``ncclBuildRings``' layout)."""
    out = []
    intra = intra_orders(ppn, search_channels, same=same)
    for c in range(channels):
        order = [m * ppn + g for m in range(nodes) for g in intra[c % search_channels]]
        k = order.index(0)
        out.append(order[k:] + order[:k])
    return out


@dataclass(frozen=True)
class TreeLinks:
    up: int
    down: tuple[int, ...]


def gpu_trees(
    ppn: int, nodes: int, search_channels: int, channels: int, pattern: int, *, same: bool = False
) -> list[list[TreeLinks]]:
    """``[channel][rank]``: NCCL's tree links (chain inside nodes, double binary tree across)."""
    intra = intra_orders(ppn, search_channels, tree=True, same=same)
    node_trees = [dtree(nodes, m) for m in range(nodes)]
    out: list[list[TreeLinks]] = []
    for c in range(channels):
        order = intra[c % search_channels]
        which = 0 if c < channels // 2 else 1
        parent_gpu = order[0]
        child_gpu = (order[0], order[0]) if pattern == 3 else (order[1 % ppn], order[0 if pattern == 1 else 1 % ppn])
        ups = [-1] * (ppn * nodes)
        downs: list[list[int]] = [[] for _ in range(ppn * nodes)]
        for m in range(nodes):
            base = m * ppn
            for i, g in enumerate(order):
                if i > 0:
                    ups[base + g] = base + order[i - 1]
                if i + 1 < ppn:
                    downs[base + g].append(base + order[i + 1])
            up, d0, d1, ctype = node_trees[m][which]
            if up != -1:
                ups[base + parent_gpu] = up * ppn + child_gpu[ctype]
            for slot, d in ((0, d0), (1, d1)):
                if d != -1:
                    downs[base + child_gpu[slot]].append(d * ppn + parent_gpu)
        out.append([TreeLinks(ups[r], tuple(downs[r])) for r in range(ppn * nodes)])
    return out
