"""Per-rank node lists under construction: columns as Python lists, dependencies that may point
forward (a semaphore acquire on a release in a later block), names and one-sided attributes.

Kept apart from the lowering rules so that those read as rules: ``add`` appends a node,
``dep`` adds an edge, ``graph`` freezes a rank into a :class:`hub.chakra.RankGraph`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hub.chakra import Buffer, NodeType, RankGraph

__all__ = ["Ancestors", "RankNodes"]

#: the integer columns after ``kind``, in row order
_COLS = ("peer", "tag", "count", "src_buf", "src_off", "dst_buf", "dst_off", "op", "tb", "chan")


class RankNodes:
    """The nodes of one rank, appended one at a time (rows of the integer columns in one list:
    a plan's big ranks hold a few thousand nodes, and one tuple per node is the cheap form)."""

    def __init__(self, rank: int) -> None:
        self.rank = rank
        self.rows: list[tuple[int, ...]] = []
        self.deps: list[list[int]] = []
        self.names: list[str] = []
        self.attrs: list[tuple[tuple[str, Any], ...]] = []
        self.sync_msgs: list[int] = []  # positions of signal/wait messages (sized 8 B when bound)

    def __len__(self) -> int:
        return len(self.rows)

    def add(
        self,
        kind: NodeType,
        name: str,
        attrs: tuple[tuple[str, Any], ...],
        deps: list[int],
        *,
        peer: int = -1,
        tag: int = 0,
        count: int = 0,
        src: tuple[int, int] = (int(Buffer.NONE), -1),
        dst: tuple[int, int] = (int(Buffer.NONE), -1),
        op: int = 0,
        tb: int = -1,
        chan: int = 0,
    ) -> int:
        rows = self.rows
        pos = len(rows)
        rows.append((int(kind), peer, tag, count, src[0], src[1], dst[0], dst[1], op, tb, chan))
        self.deps.append(deps)
        self.names.append(name)
        self.attrs.append(attrs)
        return pos

    def dep(self, node: int, on: int) -> None:
        """Add the edge node -> on (duplicates are dropped when the graph is frozen)."""
        if on != node:
            self.deps[node].append(on)

    def graph(self) -> RankGraph:
        n = len(self.rows)
        deps = [list(dict.fromkeys(d)) if len(d) > 1 else d for d in self.deps]
        ptr = np.zeros(n + 1, dtype=np.int64)
        ptr[1:] = np.cumsum([len(d) for d in deps], dtype=np.int64)
        flat = [p for d in deps for p in d]
        extra = {i: a for i, a in enumerate(self.attrs) if a}
        table = np.asarray(self.rows, dtype=np.int64).reshape(n, len(_COLS) + 1)
        return RankGraph.from_columns(
            n,
            kind=table[:, 0].astype(np.int8),
            dep_ptr=ptr,
            dep_pos=np.asarray(flat, dtype=np.int32),
            names=list(self.names),
            extra=extra,
            **{c: table[:, i + 1] for i, c in enumerate(_COLS)},
        )


class Ancestors:
    """Happens-before inside one rank: for each node, the set of nodes with a dependency path to
    it, as a Python int bit set (cheap for the few thousand nodes of a plan's rank).

    A cycle leaves its nodes without ancestors; the verifier reports the cycle itself."""

    def __init__(self, nodes: RankNodes) -> None:
        n = len(nodes)
        deps = nodes.deps
        users: list[list[int]] = [[] for _ in range(n)]
        indeg = [0] * n
        for v, ds in enumerate(deps):
            indeg[v] = len(ds)
            for d in ds:
                users[d].append(v)
        anc = [0] * n
        ready = [v for v in range(n) if indeg[v] == 0]
        while ready:
            v = ready.pop()
            a = 0
            for d in deps[v]:
                a |= anc[d] | (1 << d)
            anc[v] = a
            for u in users[v]:
                indeg[u] -= 1
                if indeg[u] == 0:
                    ready.append(u)
        self.anc = anc

    def before(self, a: int, b: int) -> bool:
        """``a`` happens before ``b`` (a path a -> ... -> b)."""
        return bool(self.anc[b] & (1 << a))
