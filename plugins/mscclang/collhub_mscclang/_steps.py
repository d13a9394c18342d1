"""Forming MSCCL steps from a threadblock's nodes, with fusion (see README "Fusion")."""

from __future__ import annotations

from typing import Any

import numpy as np

from hub.chakra import Algorithm, Buffer, NodeType, Op
from hub.errors import ExportError

from ._threadblocks import Tb

__all__ = ["ExportStatsLike", "form_steps", "topo_rank"]

_SEND, _RECV, _COMP = int(NodeType.SEND), int(NodeType.RECV), int(NodeType.COMP)
_NONE, _COPY, _REDUCE = int(Op.NONE), int(Op.COPY), int(Op.REDUCE)
_IN, _OUT, _SCR = int(Buffer.INPUT), int(Buffer.OUTPUT), int(Buffer.SCRATCH)

ExportStatsLike = Any  # anything with an integer ``fused`` attribute

#: a step: [type, srcbuf, srcoff, dstbuf, dstoff, cnt, (node positions...)]
Step = list


def topo_rank(g: Any) -> np.ndarray | None:
    """Position -> order key when positions are not topological, else None."""
    key = g.topological_rank()
    if key is None:
        raise ExportError("the algorithm has a dependency cycle; nothing to export",
                          hint="run hub.verify to locate it")
    return None if np.array_equal(key, np.arange(len(g))) else key


def form_steps(alg: Algorithm, r: int, tbs: list[Tb], fuse: bool, skip: set[int],
               alias_out: bool, stats: ExportStatsLike) -> tuple[list[list[Step]], dict[int, tuple[int, int]], dict[int,
                                                                                                                    list[int]], int]:
    """Turn each tb's nodes into steps. Returns steps per tb, node -> (tb, step), deps of
    dropped nodes, and the scratch extent used."""
    g = alg.graphs[r]
    kind = g.kind.tolist()
    peer = g.peer.tolist()
    count = g.count.tolist()
    op = g.op.tolist()
    sb = g.src_buf.tolist()
    so = g.src_off.tolist()
    db = g.dst_buf.tolist()
    do = g.dst_off.tolist()
    ptr = g.dep_ptr.tolist()
    dpos = g.dep_pos.tolist()
    if alias_out:  # in-place: the output is the input; MSCCLang writes only "i"
        sb = [_IN if b == _OUT else b for b in sb]
        db = [_IN if b == _OUT else b for b in db]

    tb_of = [-2] * len(g)
    at = [0] * len(g)
    for ti, t in enumerate(tbs):
        for k, p in enumerate(t.nodes):
            tb_of[p] = ti
            at[p] = k

    n_all = len(g)
    succ_ptr = np.zeros(n_all + 1, dtype=np.int64)
    np.cumsum(np.bincount(g.dep_pos, minlength=n_all), out=succ_ptr[1:])
    succ_of = np.repeat(np.arange(n_all), np.diff(g.dep_ptr))[np.argsort(g.dep_pos, kind="stable")].tolist()
    succ_ptr_l = succ_ptr.tolist()

    def private(nodes: tuple[int, ...]) -> bool:
        # fusing is worth it only if no other tb waits for a non-final node of the pattern:
        # it would then wait for the whole fused step, forward included
        t = tb_of[nodes[0]]
        for v in nodes[:-1]:
            for w in succ_of[succ_ptr_l[v]:succ_ptr_l[v + 1]]:
                if w not in nodes and tb_of[w] != t:
                    return False
        return True

    def only_dep(p: int, q: int) -> bool:
        # p waits for q and otherwise only for nodes its tb has run before q (program order)
        lo, hi = ptr[p], ptr[p + 1]
        if hi - lo == 1:
            return dpos[lo] == q
        ds = dpos[lo:hi]
        if q not in ds:
            return False
        t, k = tb_of[q], at[q]
        return all(d == q or (tb_of[d] == t and at[d] < k) for d in ds)

    # rrs temporaries: scratch slots referenced only by RECV(COPY)->COMP(REDUCE)->SEND runs
    rrs_ok: set[int] = set()
    if fuse and bool(np.any((g.kind == _RECV) & (g.op == _COPY) & (g.dst_buf == _SCR))):
        cands: list[tuple[int, int, int]] = []
        for t in tbs:
            nd = t.nodes
            for i in range(len(nd) - 2):
                a, b, c = nd[i], nd[i + 1], nd[i + 2]
                if (kind[a] == _RECV and op[a] == _COPY and db[a] == _SCR and kind[b] == _COMP and op[b] == _REDUCE
                        and kind[c] == _SEND and only_dep(b, a) and only_dep(c, b)
                        and db[b] == _SCR and do[b] == do[a] and sb[c] == _SCR and so[c] == do[a]
                        and count[a] == count[b] == count[c]):
                    cands.append((a, b, c))
        if cands:
            refs: dict[int, int] = {}
            for p in range(len(g)):
                for buf, off in ((sb[p], so[p]), (db[p], do[p])):
                    if buf == _SCR and off >= 0:
                        for k in range(count[p] or 1):
                            refs[off + k] = refs.get(off + k, 0) + 1
            mine: dict[int, int] = {}
            for a, _b, _c in cands:
                for k in range(count[a]):
                    mine[do[a] + k] = mine.get(do[a] + k, 0) + 3
            for a, _b, _c in cands:
                if all(refs.get(do[a] + k) == mine.get(do[a] + k) for k in range(count[a])):
                    rrs_ok.add(a)

    steps_of: list[list[Step]] = []
    where: dict[int, tuple[int, int]] = {}
    dropped: dict[int, list[int]] = {p: [] for p in skip}
    scratch = 0
    for ti, t in enumerate(tbs):
        nd = t.nodes
        steps: list[Step] = []
        i = 0
        L = len(nd)
        while i < L:
            a = nd[i]
            b = nd[i + 1] if i + 1 < L else -1
            c = nd[i + 2] if i + 2 < L else -1
            ka = kind[a]
            step: Step | None = None
            if ka == _RECV:
                n_a = count[a]
                # RECV(REDUCE) -> COMP(NONE): rrc (+ SEND of the result: rrcs)
                if op[a] == _REDUCE and b >= 0 and kind[b] == _COMP and op[b] == _NONE and only_dep(b, a):
                    if (fuse and c >= 0 and kind[c] == _SEND and only_dep(c, b) and sb[c] == db[a]
                            and so[c] == do[a] and count[c] == n_a and private((a, b, c))):
                        step = ["rrcs", db[a], do[a], db[a], do[a], n_a, (a, b, c)]
                    else:
                        step = ["rrc", db[a], do[a], db[a], do[a], n_a, (a, b)]
                elif op[a] == _REDUCE:
                    step = ["rrc", db[a], do[a], db[a], do[a], n_a, (a,)]
                elif fuse and a in rrs_ok:
                    step = ["rrs", sb[b], so[b], sb[b], so[b], n_a, (a, b, c)]
                elif (fuse and b >= 0 and kind[b] == _COMP and op[b] == _REDUCE and only_dep(b, a)
                      and db[b] == db[a] and do[b] == do[a] and count[b] == n_a
                      and (sb[b] != db[a] or abs(so[b] - do[a]) >= n_a)):
                    # dst := received (+) src with a distinct src: an rrc (rrcs if forwarded)
                    if (c >= 0 and kind[c] == _SEND and only_dep(c, b) and sb[c] == db[a]
                            and so[c] == do[a] and count[c] == n_a and private((a, b, c))):
                        step = ["rrcs", sb[b], so[b], db[a], do[a], n_a, (a, b, c)]
                    else:
                        step = ["rrc", sb[b], so[b], db[a], do[a], n_a, (a, b)]
                elif (fuse and b >= 0 and kind[b] == _SEND and only_dep(b, a) and sb[b] == db[a]
                      and so[b] == do[a] and count[b] == n_a and private((a, b))):
                    step = ["rcs", db[a], do[a], db[a], do[a], n_a, (a, b)]
                else:
                    step = ["r", db[a], do[a], db[a], do[a], n_a, (a,)]
            elif ka == _SEND:
                step = ["s", sb[a], so[a], sb[a], so[a], count[a], (a,)]
            elif ka == _COMP and op[a] in (_COPY, _REDUCE):
                step = ["cpy" if op[a] == _COPY else "re", sb[a], so[a], db[a], do[a], count[a], (a,)]
            else:
                # a cost-only COMP outside an rrc has no MSCCL step: it passes its deps through
                dropped[a] = dpos[ptr[a]:ptr[a + 1]]
                i += 1
                continue
            if len(step[6]) > 1 and step[0] not in ("rrc",):
                stats.fused += 1
            si = len(steps)
            for p in step[6]:
                where[p] = (ti, si)
            steps.append(step)
            i += len(step[6])
            for buf, off in ((step[1], step[2]), (step[3], step[4])):
                if buf == _SCR and step[0] != "rrs":
                    scratch = max(scratch, off + step[5])
        steps_of.append(steps)
    return steps_of, where, dropped, scratch
