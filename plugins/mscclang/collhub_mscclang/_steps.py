"""Forming MSCCL steps from a threadblock's nodes, with fusion (see README "Fusion")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from hub.chakra import Algorithm, Buffer, NodeType, Op
from hub.errors import ExportError

from ._threadblocks import Tb

__all__ = ["ExportStatsLike", "Step", "form_steps", "topo_rank"]

_SEND, _RECV, _COMP = int(NodeType.SEND), int(NodeType.RECV), int(NodeType.COMP)
_NONE, _COPY, _REDUCE = int(Op.NONE), int(Op.COPY), int(Op.REDUCE)
_IN, _OUT, _SCR = int(Buffer.INPUT), int(Buffer.OUTPUT), int(Buffer.SCRATCH)

ExportStatsLike = Any  # anything with an integer ``fused`` attribute


class Step(NamedTuple):
    """One MSCCL step: its type, operands, and the node positions it stands for."""

    type: str
    src_buf: int
    src_off: int
    dst_buf: int
    dst_off: int
    cnt: int
    nodes: tuple[int, ...]


def topo_rank(g: Any) -> np.ndarray | None:
    """Position -> order key when positions are not topological, else None."""
    key = g.topological_rank()
    if key is None:
        raise ExportError("the algorithm has a dependency cycle; nothing to export", hint="run hub.verify to locate it")
    return None if np.array_equal(key, np.arange(len(g))) else key


@dataclass
class _Graph:
    """One rank's node columns as lists (per-node look-ups in the pattern matching), with each
    node's tb and position in it, and its successors."""

    kind: list[int]
    count: list[int]
    op: list[int]
    src_buf: list[int]
    src_off: list[int]
    dst_buf: list[int]
    dst_off: list[int]
    dep_ptr: list[int]
    dep_pos: list[int]
    tb_of: list[int]  # -2: in no tb
    at: list[int]  # position in its tb
    succ_ptr: list[int]
    succ_of: list[int]

    @classmethod
    def of(cls, g: Any, tbs: list[Tb], alias_out: bool) -> _Graph:
        sb, db = g.src_buf.tolist(), g.dst_buf.tolist()
        if alias_out:  # in-place: the output is the input; MSCCLang writes only "i"
            sb = [_IN if b == _OUT else b for b in sb]
            db = [_IN if b == _OUT else b for b in db]
        n = len(g)
        tb_of, at = [-2] * n, [0] * n
        for ti, t in enumerate(tbs):
            for k, p in enumerate(t.nodes):
                tb_of[p] = ti
                at[p] = k
        succ_ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(g.dep_pos, minlength=n), out=succ_ptr[1:])
        succ_of = np.repeat(np.arange(n), np.diff(g.dep_ptr))[np.argsort(g.dep_pos, kind="stable")]
        return cls(
            g.kind.tolist(),
            g.count.tolist(),
            g.op.tolist(),
            sb,
            g.src_off.tolist(),
            db,
            g.dst_off.tolist(),
            g.dep_ptr.tolist(),
            g.dep_pos.tolist(),
            tb_of,
            at,
            succ_ptr.tolist(),
            succ_of.tolist(),
        )

    def private(self, nodes: tuple[int, ...]) -> bool:
        """Whether no other tb waits for a non-final node of ``nodes``: fusing is worth it only
        then (such a waiter would wait for the whole fused step, forward included)."""
        t = self.tb_of[nodes[0]]
        for v in nodes[:-1]:
            for w in self.succ_of[self.succ_ptr[v] : self.succ_ptr[v + 1]]:
                if w not in nodes and self.tb_of[w] != t:
                    return False
        return True

    def only_dep(self, p: int, q: int) -> bool:
        """Whether ``p`` waits for ``q`` and otherwise only for nodes its tb has run before
        ``q`` (program order)."""
        lo, hi = self.dep_ptr[p], self.dep_ptr[p + 1]
        if hi - lo == 1:
            return self.dep_pos[lo] == q
        ds = self.dep_pos[lo:hi]
        if q not in ds:
            return False
        t, k = self.tb_of[q], self.at[q]
        return all(d == q or (self.tb_of[d] == t and self.at[d] < k) for d in ds)

    def forwards(self, x: int, y: int, a: int) -> bool:
        """Whether ``x`` (-1: none) is a SEND waiting only for ``y`` of exactly what RECV ``a``
        wrote."""
        return (
            x >= 0
            and self.kind[x] == _SEND
            and self.only_dep(x, y)
            and self.src_buf[x] == self.dst_buf[a]
            and self.src_off[x] == self.dst_off[a]
            and self.count[x] == self.count[a]
        )


def form_steps(
    alg: Algorithm, r: int, tbs: list[Tb], fuse: bool, skip: set[int], alias_out: bool, stats: ExportStatsLike
) -> tuple[list[list[Step]], dict[int, tuple[int, int]], dict[int, list[int]], int]:
    """Turn each tb's nodes into steps. Returns steps per tb, node -> (tb, step), deps of
    dropped nodes, and the scratch extent used."""
    g = alg.graphs[r]
    gr = _Graph.of(g, tbs, alias_out)
    rrs_ok = _rrs_temporaries(g, gr, tbs) if fuse else set()
    kind, op, count, sb, so, db, do = gr.kind, gr.op, gr.count, gr.src_buf, gr.src_off, gr.dst_buf, gr.dst_off
    steps_of: list[list[Step]] = []
    where: dict[int, tuple[int, int]] = {}
    dropped: dict[int, list[int]] = {p: [] for p in skip}
    scratch = 0
    for ti, t in enumerate(tbs):
        nd = t.nodes
        steps: list[Step] = []
        i = 0
        L = len(nd)
        while i < L:  # a hot loop (one pass per node): the patterns of RECVs are in _recv_step
            a = nd[i]
            ka = kind[a]
            if ka == _RECV:
                step = _recv_step(gr, a, nd[i + 1] if i + 1 < L else -1, nd[i + 2] if i + 2 < L else -1, fuse, rrs_ok)
            elif ka == _SEND:
                step = Step("s", sb[a], so[a], sb[a], so[a], count[a], (a,))
            elif ka == _COMP and op[a] in (_COPY, _REDUCE):
                step = Step("cpy" if op[a] == _COPY else "re", sb[a], so[a], db[a], do[a], count[a], (a,))
            else:
                # a cost-only COMP outside an rrc has no MSCCL step: it passes its deps through
                dropped[a] = gr.dep_pos[gr.dep_ptr[a] : gr.dep_ptr[a + 1]]
                i += 1
                continue
            typ, b1, o1, b2, o2, cnt, nodes = step
            if len(nodes) > 1 and typ != "rrc":
                stats.fused += 1
            si = len(steps)
            for p in nodes:
                where[p] = (ti, si)
            steps.append(step)
            i += len(nodes)
            if typ != "rrs":
                if b1 == _SCR:
                    scratch = max(scratch, o1 + cnt)
                if b2 == _SCR:
                    scratch = max(scratch, o2 + cnt)
        steps_of.append(steps)
    return steps_of, where, dropped, scratch


def _rrs_temporaries(g: Any, gr: _Graph, tbs: list[Tb]) -> set[int]:
    """RECVs that start an rrs: RECV(COPY) -> COMP(REDUCE) -> SEND runs through a scratch slot
    that nothing else references (a temporary the rrs step does without)."""
    if not bool(np.any((g.kind == _RECV) & (g.op == _COPY) & (g.dst_buf == _SCR))):
        return set()
    kind, op, count = gr.kind, gr.op, gr.count
    sb, so, db, do = gr.src_buf, gr.src_off, gr.dst_buf, gr.dst_off
    cands: list[int] = []
    for t in tbs:
        nd = t.nodes
        for i in range(len(nd) - 2):
            a, b, c = nd[i], nd[i + 1], nd[i + 2]
            if (
                kind[a] == _RECV
                and op[a] == _COPY
                and db[a] == _SCR
                and kind[b] == _COMP
                and op[b] == _REDUCE
                and kind[c] == _SEND
                and gr.only_dep(b, a)
                and gr.only_dep(c, b)
                and db[b] == _SCR
                and do[b] == do[a]
                and sb[c] == _SCR
                and so[c] == do[a]
                and count[a] == count[b] == count[c]
            ):
                cands.append(a)
    if not cands:
        return set()
    refs: dict[int, int] = {}  # scratch chunk -> references by any node
    for p in range(len(kind)):
        for buf, off in ((sb[p], so[p]), (db[p], do[p])):
            if buf == _SCR and off >= 0:
                for k in range(count[p] or 1):
                    refs[off + k] = refs.get(off + k, 0) + 1
    mine: dict[int, int] = {}  # scratch chunk -> references by the candidate runs (3 each)
    for a in cands:
        for k in range(count[a]):
            mine[do[a] + k] = mine.get(do[a] + k, 0) + 3
    return {a for a in cands if all(refs.get(do[a] + k) == mine.get(do[a] + k) for k in range(count[a]))}


def _recv_step(gr: _Graph, a: int, b: int, c: int, fuse: bool, rrs_ok: set[int]) -> Step:
    """The step of RECV ``a``, fused with the tb's next nodes ``b`` and ``c`` (-1: none) where
    they form rrc, rrcs, rrs or rcs."""
    kind, op, count = gr.kind, gr.op, gr.count
    sb, so, db, do = gr.src_buf, gr.src_off, gr.dst_buf, gr.dst_off
    n_a, da, oa = count[a], db[a], do[a]
    # RECV(REDUCE) -> COMP(NONE): rrc (+ SEND of the result: rrcs)
    if op[a] == _REDUCE and b >= 0 and kind[b] == _COMP and op[b] == _NONE and gr.only_dep(b, a):
        if fuse and gr.forwards(c, b, a) and gr.private((a, b, c)):
            return Step("rrcs", da, oa, da, oa, n_a, (a, b, c))
        return Step("rrc", da, oa, da, oa, n_a, (a, b))
    if op[a] == _REDUCE:
        return Step("rrc", da, oa, da, oa, n_a, (a,))
    if fuse and a in rrs_ok:
        return Step("rrs", sb[b], so[b], sb[b], so[b], n_a, (a, b, c))
    if (
        fuse
        and b >= 0
        and kind[b] == _COMP
        and op[b] == _REDUCE
        and gr.only_dep(b, a)
        and db[b] == da
        and do[b] == oa
        and count[b] == n_a
        and (sb[b] != da or abs(so[b] - oa) >= n_a)
    ):
        # dst := received (+) src with a distinct src: an rrc (rrcs if forwarded)
        if gr.forwards(c, b, a) and gr.private((a, b, c)):
            return Step("rrcs", sb[b], so[b], da, oa, n_a, (a, b, c))
        return Step("rrc", sb[b], so[b], da, oa, n_a, (a, b))
    if fuse and gr.forwards(b, a, a) and gr.private((a, b)):
        return Step("rcs", da, oa, da, oa, n_a, (a, b))
    return Step("r", da, oa, da, oa, n_a, (a,))
