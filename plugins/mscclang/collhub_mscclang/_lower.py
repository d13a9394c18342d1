"""Vectorized lowering of one parsed ``<gpu>`` to a columnar rank graph.

Each step expands into a fixed list of nodes that depends only on its type (``_EXPAND``), so
the whole gpu is expanded with numpy ``repeat``/table look-ups instead of a Python loop per step.
Node order is document order (tb by tb, step by step); when a cross-tb dependency points at a
later node, the graph is re-ordered topologically (and a cycle is reported).
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from typing import TYPE_CHECKING, Any

import numpy as np

from hub.chakra import Buffer, NodeType, Op, RankGraph
from hub.errors import ImportFormatError

from ._ir import INT_MAX, INT_MIN, INT_RE

if TYPE_CHECKING:
    from ._reader import _Gpu, _Reader

__all__ = ["TYPE_CODE", "TYPE_NAMES", "lower_gpu"]

TYPE_NAMES = ("s", "r", "rcs", "rrc", "rrcs", "rrs", "cpy", "re", "nop")
TYPE_CODE = {t: i for i, t in enumerate(TYPE_NAMES)}
_S, _R, _RCS, _RRC, _RRCS, _RRS, _CPY, _RE, _NOP = range(9)
_RRC_X, _RRCS_X = 9, 10  # rrc/rrcs whose source differs from the destination

_SEND, _RECV, _COMP = int(NodeType.SEND), int(NodeType.RECV), int(NodeType.COMP)
_NONE, _COPY, _REDUCE = int(Op.NONE), int(Op.COPY), int(Op.REDUCE)
_NB = int(Buffer.NONE)

# Per type: nodes as (kind, op, peer, src, dst, role). peer: 0 none, 1 the tb's send peer,
# 2 its recv peer. src/dst: 0 unused, 1 the step's src, 2 the step's dst, 3 the tb's temporary.
_EXPAND: dict[int, list[tuple[int, int, int, int, int, str]]] = {
    _S: [(_SEND, _NONE, 1, 1, 0, "")],
    _R: [(_RECV, _COPY, 2, 0, 2, "")],
    _RCS: [(_RECV, _COPY, 2, 0, 2, ".recv"), (_SEND, _NONE, 1, 2, 0, ".send")],
    _RRC: [(_RECV, _REDUCE, 2, 0, 2, ".recv"), (_COMP, _NONE, 0, 0, 0, ".comp")],
    _RRCS: [(_RECV, _REDUCE, 2, 0, 2, ".recv"), (_COMP, _NONE, 0, 0, 0, ".comp"), (_SEND, _NONE, 1, 2, 0, ".send")],
    # rrs stores nothing locally: receive into the tb's temporary, reduce src into it, forward it
    _RRS: [(_RECV, _COPY, 2, 0, 3, ".recv"), (_COMP, _REDUCE, 0, 1, 3, ".comp"), (_SEND, _NONE, 1, 3, 0, ".send")],
    _CPY: [(_COMP, _COPY, 0, 1, 2, "")],
    _RE: [(_COMP, _REDUCE, 0, 1, 2, "")],
    _NOP: [],
    # dst := received (+) src with src != dst: a copy-receive, then a real local reduction
    _RRC_X: [(_RECV, _COPY, 2, 0, 2, ".recv"), (_COMP, _REDUCE, 0, 1, 2, ".comp")],
    _RRCS_X: [(_RECV, _COPY, 2, 0, 2, ".recv"), (_COMP, _REDUCE, 0, 1, 2, ".comp"), (_SEND, _NONE, 1, 2, 0, ".send")],
}
_NT = 11
# C-level look-ups for map(): unknown keys give -1 (step type) / 9 (buffer)
_TYPE_GET = defaultdict(lambda: -1, TYPE_CODE).__getitem__
_BUF_GET = defaultdict(lambda: 9, {"i": 0, "o": 1, "s": 2}).__getitem__
_ATTR = ("s", "type", "srcbuf", "srcoff", "dstbuf", "dstoff", "cnt", "depid", "deps", "hasdep")


def _isint(v: str) -> bool:
    return INT_RE.fullmatch(v) is not None and INT_MIN <= int(v) <= INT_MAX


_NNODES = np.array([len(_EXPAND[t]) for t in range(_NT)], dtype=np.int64)
_ROLE_BASE = np.concatenate([[0], np.cumsum(_NNODES)[:-1]])
_TABLE = np.array([n[:5] for t in range(_NT) for n in _EXPAND[t]], dtype=np.int64)  # (role row, 5)
_ROLE_NAME = [n[5] for t in range(_NT) for n in _EXPAND[t]]
_TYPE_OF_ROLE = [TYPE_NAMES[t] if t < 9 else TYPE_NAMES[t - 6] for t in range(_NT) for _ in _EXPAND[t]]

_SEND_T = np.zeros(_NT, bool)
_SEND_T[[_S, _RCS, _RRCS, _RRS, _RRCS_X]] = True
_RECV_T = np.zeros(_NT, bool)
_RECV_T[[_R, _RCS, _RRC, _RRCS, _RRS, _RRC_X, _RRCS_X]] = True
_USES_SRC = np.zeros(_NT, bool)
_USES_SRC[[_S, _RRC, _RRCS, _RRS, _CPY, _RE, _RRC_X, _RRCS_X]] = True
_USES_DST = np.zeros(_NT, bool)
_USES_DST[[_R, _RCS, _RRC, _RRCS, _CPY, _RE, _RRC_X, _RRCS_X]] = True


def lower_gpu(rd: _Reader, g: _Gpu) -> tuple[RankGraph, int]:
    """Return the rank graph of ``g`` and the end of its scratch use (s_chunks + temporaries)."""
    path = str(rd.path)
    gid = g.id
    S = len(g.rows)
    ntb = len(g.tbs)
    tb_len = np.array([t.n for t in g.tbs], dtype=np.int64)
    tb_start = np.array([t.start for t in g.tbs], dtype=np.int64)
    tb_of = np.repeat(np.arange(ntb), tb_len)
    s_of = np.arange(S) - tb_start[tb_of] if S else np.zeros(0, dtype=np.int64)
    line = np.array(g.lines, dtype=np.int64)
    cols = list(zip(*g.rows,
                    strict=False)) if S else [()] * 10  # s type srcbuf srcoff dstbuf dstoff cnt depid deps hasdep

    def ints(k: int) -> np.ndarray:
        col = cols[k]
        try:
            joined = "".join(col)  # one C-level pass rules out what int() takes but atoi does not
            if "_" in joined or not joined.isascii():
                raise ValueError
            arr = np.fromiter(map(int, col), dtype=np.int64, count=S)
            if S and (int(arr.min()) < INT_MIN or int(arr.max()) > INT_MAX):
                raise ValueError
            return arr
        except (ValueError, OverflowError):
            i = next(i for i, v in enumerate(col) if not _isint(v))
            what = "is out of range (32-bit)" if INT_RE.fullmatch(col[i]) else "is not an integer"
            raise ImportFormatError(f"gpu {gid} tb {int(tb_of[i])} step {int(s_of[i])}: attribute "
                                    f"{_ATTR[k]}={col[i]!r} of <step> {what}",
                                    path=path, line=int(line[i])) from None

    s_given = ints(0)
    bad_s = s_given != s_of
    if bad_s.any():
        i = int(np.argmax(bad_s))
        raise ImportFormatError(f"gpu {gid} tb {int(tb_of[i])}: step s={int(s_given[i])} but s={int(s_of[i])} expected "
                                "(s counts the tb's steps in document order, nops included)", path=path,
                                line=int(line[i]))
    code = np.fromiter(map(_TYPE_GET, cols[1]), dtype=np.int64, count=S)
    if S and code.min() < 0:
        i = int(np.argmax(code < 0))
        t = cols[1][i]
        where = f"gpu {gid} tb {int(tb_of[i])} step {int(s_of[i])}"
        if t == "ra":
            raise ImportFormatError(f"{where}: step type 'ra' (residual add) is not supported", path=path,
                                    line=int(line[i]),
                                    hint="'ra' is parsed by the old microsoft/msccl runtime but never executed")
        raise ImportFormatError(f"{where}: unknown step type {t!r}", path=path, line=int(line[i]),
                                hint="one of: " + ", ".join(TYPE_NAMES))
    sb = np.fromiter(map(_BUF_GET, cols[2]), dtype=np.int64, count=S)
    db = np.fromiter(map(_BUF_GET, cols[4]), dtype=np.int64, count=S)
    so, do, cnt, depid, deps, hasdep = ints(3), ints(5), ints(6), ints(7), ints(8), ints(9)
    t_send = np.array([t.send for t in g.tbs], dtype=np.int64)
    t_recv = np.array([t.recv for t in g.tbs], dtype=np.int64)
    t_chan = np.array([t.chan for t in g.tbs], dtype=np.int64)

    def fail(mask: np.ndarray, msg: str, hint: str | None = None) -> None:
        if mask.any():
            i = int(np.argmax(mask))
            where = f"gpu {gid} tb {int(tb_of[i])} step {int(s_of[i])} ({TYPE_NAMES[int(code[i])]})"
            raise ImportFormatError(f"{where}: " + msg.format(i=i, sb="ios"[sb[i]] if sb[i] < 3 else "?",
                                                             db="ios"[db[i]] if db[i] < 3 else "?",
                                                             so=so[i], do=do[i], cnt=cnt[i], depid=depid[i],
                                                             deps=deps[i]),
                                    path=path, line=int(line[i]), hint=hint)

    nop = code == _NOP
    fail(nop & (depid < 0), "nop without a dependency",
         hint="a nop exists only to carry one extra dependency (msccl-ir.md §6)")
    fail(~nop & (cnt < 1), "cnt={cnt} must be >= 1")
    fail(_SEND_T[code] & (t_send[tb_of] < 0), "send-type step in a tb with send=-1")
    fail(_RECV_T[code] & (t_recv[tb_of] < 0), "receive-type step in a tb with recv=-1")
    in_c = rd.in_chunks if rd.in_chunks >= 0 else g.i_chunks
    out_c = rd.out_chunks if rd.out_chunks >= 0 else g.o_chunks
    limit = np.array([in_c, out_c, g.s_chunks, 0, 0, 0, 0, 0, 0, 0], dtype=np.int64)
    for uses, b, off, nm in ((_USES_SRC, sb, so, "src"), (_USES_DST, db, do, "dst")):
        used = uses[code]
        fail(used & (b > 2), f"{nm}buf={{{nm[0]}b}} is not i, o or s")
        fail(used & ((off < 0) | (off + cnt > limit[b])),
             f"{nm}off={{{nm[0]}o}} cnt={{cnt}} out of range for buffer '{{{nm[0]}b}}' "
             f"(i: {in_c}, o: {out_c}, s: {g.s_chunks} chunks)")
    # rrc/rrcs with a distinct source get the two-node form; partial overlap has no clear meaning
    fused = (code == _RRC) | (code == _RRCS)
    differ = fused & ((sb != db) | (so != do))
    fail(differ & (sb == db) & (np.abs(so - do) < cnt), "source and destination overlap partially")
    code = np.where(differ, np.where(code == _RRC, _RRC_X, _RRCS_X), code)

    # connections (checked across gpus once all are read)
    for tid, tb in enumerate(g.tbs):
        lo, hi = tb.start, tb.start + tb.n
        c = code[lo:hi]
        for table, peer, store, key in ((_SEND_T, tb.send, rd.sends, (gid, tb.send, tb.chan)),
                                        (_RECV_T, tb.recv, rd.recvs, (tb.recv, gid, tb.chan))):
            m = table[c]
            if not m.any():
                continue
            if key in store:
                other = store[key][0].id
                what = f"send to gpu {peer}" if store is rd.sends else f"receive from gpu {peer}"
                raise ImportFormatError(
                    f"gpu {gid}: tb {other} and tb {tid} both {what} on channel {tb.chan}", path=path, line=tb.line,
                    hint="one tb per (peer, channel, direction): MSCCL opens one connection each")
            store[key] = (tb, cnt[lo:hi][m].tolist(), line[lo:hi][m].tolist())
            (rd.has_send if store is rd.sends else rd.has_recv).add(gid)

    # temporaries for rrs: one region per tb that has rrs steps, sized by its largest cnt
    is_rrs = code == _RRS
    temp_of_tb = np.full(ntb, -1, dtype=np.int64)
    temp_end = g.s_chunks
    if is_rrs.any():
        tsize = np.zeros(ntb, dtype=np.int64)
        np.maximum.at(tsize, tb_of[is_rrs], cnt[is_rrs])
        offs = np.concatenate([[0], np.cumsum(tsize)[:-1]]) + g.s_chunks
        temp_of_tb = np.where(tsize > 0, offs, -1)
        temp_end = int(g.s_chunks + tsize.sum())

    # -- expand steps into nodes ---------------------------------------------------------------
    C = len(g.copies)
    nn = _NNODES[code]
    first = np.concatenate([[0], np.cumsum(nn)[:-1]]).astype(np.int64) + C if S else np.zeros(0, np.int64)
    N = int(nn.sum()) + C
    step_of = np.repeat(np.arange(S), nn)
    role = np.arange(C, N) - first[step_of]
    spec = _TABLE[_ROLE_BASE[code[step_of]] + role]  # (nodes, 5)
    tbn = tb_of[step_of]
    kind = spec[:, 0]
    op = spec[:, 1]
    peer = np.choose(spec[:, 2], [np.full(len(tbn), -1), t_send[tbn], t_recv[tbn]])
    chan = t_chan[tbn]
    tag = np.where(kind == _COMP, 0, chan)
    temp = temp_of_tb[tbn]
    sbn, son, dbn, don = sb[step_of], so[step_of], db[step_of], do[step_of]
    scr = int(Buffer.SCRATCH)

    def pick(sel: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        b = np.choose(sel, [np.full(len(sel), _NB), sbn, dbn, np.full(len(sel), scr)])
        o = np.choose(sel, [np.full(len(sel), -1), son, don, temp])
        return b, o

    src_b, src_o = pick(spec[:, 3])
    dst_b, dst_o = pick(spec[:, 4])
    count = cnt[step_of]
    if C:
        cp = np.array([(c[0], c[1]) for c in g.copies], dtype=np.int64)
        bad = (cp[:, 0] < 0) | (cp[:, 0] >= in_c) | (cp[:, 1] < 0) | (cp[:, 1] >= out_c)
        if bad.any():
            k = int(np.argmax(bad))
            raise ImportFormatError(f"gpu {gid} <copy i_off={cp[k, 0]} o_off={cp[k, 1]}>: offset out of range "
                                    f"(i: {in_c}, o: {out_c} chunks)", path=path, line=g.copies[k][2])
        pre = lambda v, arr: np.concatenate([np.full(C, v, dtype=np.int64), arr])  # noqa: E731
        kind, op, peer, tag, chan = pre(_COMP, kind), pre(_COPY, op), pre(-1, peer), pre(0, tag), pre(0, chan)
        src_b, src_o = pre(int(Buffer.INPUT), src_b), np.concatenate([cp[:, 0], src_o])
        dst_b, dst_o = pre(int(Buffer.OUTPUT), dst_b), np.concatenate([cp[:, 1], dst_o])
        count, tbn = pre(1, count), pre(-1, tbn)

    # -- dependencies --------------------------------------------------------------------------
    last = first + nn - 1
    real = np.flatnonzero(~nop)
    e_node: list[np.ndarray] = []
    e_dep: list[np.ndarray] = []
    # inside a step: a chain
    inner = np.flatnonzero(role > 0) + C
    e_node.append(inner)
    e_dep.append(inner - 1)
    # program order: a step after the previous real step of its tb; a tb's first step after <copy>s
    if real.size:
        prev = np.concatenate([[-1], real[:-1]])
        same = np.zeros(real.size, bool)
        same[1:] = tb_of[prev[1:]] == tb_of[real[1:]]
        e_node.append(first[real[same]])
        e_dep.append(last[prev[same]])
        heads = real[~same]
        if C:
            e_node.append(np.repeat(first[heads], C))
            e_dep.append(np.tile(np.arange(C), heads.size))
    # cross-tb: the step's own dependency, and those of the nop run just before it
    has = depid >= 0
    if has.any():
        fail(has & (depid >= ntb), "depid={depid} names no tb of this gpu" + f" (it has {ntb})")
        dclip = np.clip(depid, 0, max(ntb - 1, 0))
        fail(has & ((deps < 0) | (deps >= tb_len[dclip])),
             "deps={deps} names no step of tb {depid}")
        target = np.clip(tb_start[dclip] + deps, 0, S - 1)
        fail(has & nop[target], "depends on tb {depid} step {deps}, which is a nop",
             hint="a nop never publishes a completion flag; depend on a real step")
        # Only steps with hasdep=1 publish a completion flag, and flags only grow, so a waiter on
        # a step without hasdep is released by the first later publishing step of that tb (the
        # runtime's real release point); with none, the GPU would wait forever.
        pub_idx = np.flatnonzero((hasdep != 0) & ~nop)
        unpub = has & (hasdep[target] == 0)
        if unpub.any():
            k = np.searchsorted(pub_idx, target)
            nxt = pub_idx[np.minimum(k, max(pub_idx.size - 1, 0))] if pub_idx.size else target
            ok = (k < pub_idx.size) & (tb_of[nxt] == tb_of[target]) if pub_idx.size else np.zeros(S, bool)
            fail(unpub & ~ok, "depends on tb {depid} step {deps}, which has hasdep=0, and no later step of "
                 "tb {depid} has hasdep=1: the runtime publishes no flag to release it (deadlock)",
                 hint="set hasdep=1 on every step another threadblock depends on (msccl-ir.md §6)")
            target = np.where(unpub, nxt, target)
        holder = np.arange(S)
        if nop.any():
            # each nop hands its dependency to the next real step of its tb (trailing ones are lost)
            idx = np.searchsorted(real, np.arange(S))
            nxt = real[np.minimum(idx, real.size - 1)] if real.size else np.zeros(S, np.int64)
            valid = (idx < real.size) & (tb_of[nxt] == tb_of)
            holder = np.where(nop, np.where(valid, nxt, -1), holder)
            has &= holder >= 0
        src_steps = np.flatnonzero(has)
        e_node.append(first[holder[src_steps]])
        e_dep.append(last[target[src_steps]])
    en = np.concatenate(e_node) if e_node else np.zeros(0, np.int64)
    ed = np.concatenate(e_dep) if e_dep else np.zeros(0, np.int64)

    names: list[str] | None = None
    if rd.want_names:
        names = [f"copy/i{c[0]}->o{c[1]}" for c in g.copies]
        rb = (_ROLE_BASE[code[step_of]] + role).tolist()
        names += [f"tb{t}/s{s}/{_TYPE_OF_ROLE[r]}{_ROLE_NAME[r]}"
                  for t, s, r in zip(tbn[C:].tolist(), s_of[step_of].tolist(), rb, strict=False)]
    extra: dict[int, tuple[tuple[str, Any], ...]] = {p: (("msccl.copy", 1),) for p in range(C)}
    cols = dict(kind=kind, peer=peer, tag=tag, count=count, src_buf=src_b, src_off=src_o, dst_buf=dst_b,
                dst_off=dst_o, op=op, tb=tbn, chan=chan)
    if en.size and np.any(ed >= en):
        # cross-tb dependencies point forward in document order; try step-major order (all
        # tbs' step 0, then step 1, ...), which fits most schedules, before a general sort
        node_key = np.concatenate([np.full(C, -1, dtype=np.int64), s_of[step_of] * (ntb + 1) + tb_of[step_of]])
        perm = np.argsort(node_key, kind="stable")
        inv = np.empty(N, dtype=np.int64)
        inv[perm] = np.arange(N)
        if np.any(inv[ed] >= inv[en]):
            perm = _topo_order(g, N, en, ed, names, path)
        inv = np.empty(N, dtype=np.int64)
        inv[perm] = np.arange(N)
        cols = {k: v[perm] for k, v in cols.items()}
        en, ed = inv[en], inv[ed]
        if names is not None:
            names = [names[p] for p in perm.tolist()]
        extra = {int(inv[p]): v for p, v in extra.items()}
    order = np.lexsort((ed, en))
    en, ed = en[order], ed[order]
    dep_ptr = np.zeros(N + 1, dtype=np.int64)
    np.cumsum(np.bincount(en, minlength=N), out=dep_ptr[1:])
    graph = RankGraph.from_columns(N, dep_ptr=dep_ptr, dep_pos=ed.astype(np.int32), names=names, extra=extra, **cols)
    return graph, temp_end


def _topo_order(g: _Gpu, n: int, en: np.ndarray, ed: np.ndarray, names: list[str] | None, path: str) -> np.ndarray:
    """A topological order of the nodes (Kahn, smallest position first); a cycle is an error."""
    indeg = np.bincount(en, minlength=n).tolist()
    order = np.argsort(ed, kind="stable")
    succ = en[order].tolist()
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(ed, minlength=n), out=ptr[1:])
    ptr_l = ptr.tolist()
    heap = [i for i in range(n) if indeg[i] == 0]
    heapq.heapify(heap)
    out: list[int] = []
    while heap:
        v = heapq.heappop(heap)
        out.append(v)
        for k in range(ptr_l[v], ptr_l[v + 1]):
            w = succ[k]
            indeg[w] -= 1
            if indeg[w] == 0:
                heapq.heappush(heap, w)
    if len(out) != n:
        stuck = next(i for i in range(n) if indeg[i] > 0)
        label = names[stuck] if names is not None else f"node {stuck}"
        raise ImportFormatError(
            f"gpu {g.id}: the dependencies between threadblocks form a cycle (through {label})",
            path=path, line=g.line, hint="such a file deadlocks on the GPU")
    return np.asarray(out, dtype=np.int64)
