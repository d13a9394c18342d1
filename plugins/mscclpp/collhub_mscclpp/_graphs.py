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

_INT_COLS = ("peer", "tag", "count", "src_buf", "src_off", "dst_buf", "dst_off", "op", "tb", "chan")
_DEFAULT = {"peer": -1, "tag": 0, "count": 0, "src_buf": -1, "src_off": -1, "dst_buf": -1, "dst_off": -1}


class RankNodes:
    """The nodes of one rank, appended one at a time."""

    def __init__(self, rank: int) -> None:
        self.rank = rank
        self.kind: list[int] = []
        self.cols: dict[str, list[int]] = {c: [] for c in _INT_COLS}
        self.deps: list[list[int]] = []
        self.names: list[str] = []
        self.attrs: list[tuple[tuple[str, Any], ...]] = []
        self.sync_msgs: list[int] = []  # positions of signal/wait messages (sized 8 B when bound)

    def __len__(self) -> int:
        return len(self.kind)

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
        pos = len(self.kind)
        self.kind.append(int(kind))
        c = self.cols
        c["peer"].append(peer)
        c["tag"].append(tag)
        c["count"].append(count)
        c["src_buf"].append(src[0])
        c["src_off"].append(src[1])
        c["dst_buf"].append(dst[0])
        c["dst_off"].append(dst[1])
        c["op"].append(op)
        c["tb"].append(tb)
        c["chan"].append(chan)
        self.deps.append([d for d in dict.fromkeys(deps) if d is not None and d >= 0])
        self.names.append(name)
        self.attrs.append(attrs)
        return pos

    def dep(self, node: int, on: int) -> None:
        if on != node and on not in self.deps[node]:
            self.deps[node].append(on)

    def graph(self) -> RankGraph:
        n = len(self.kind)
        ptr = np.zeros(n + 1, dtype=np.int64)
        ptr[1:] = np.cumsum([len(d) for d in self.deps], dtype=np.int64)
        flat = [p for d in self.deps for p in d]
        extra = {i: a for i, a in enumerate(self.attrs) if a}
        return RankGraph.from_columns(
            n,
            kind=np.asarray(self.kind, dtype=np.int8),
            dep_ptr=ptr,
            dep_pos=np.asarray(flat, dtype=np.int32),
            names=list(self.names),
            extra=extra,
            **{c: np.asarray(v) for c, v in self.cols.items()},
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
        return bool((self.anc[b] >> a) & 1)
