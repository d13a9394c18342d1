"""Level "semantics", part 1: races, i.e. results that depend on the schedule.

The walk (:mod:`._walk`) executes ONE schedule. Its result holds for every schedule exactly when
every two conflicting accesses to one chunk (a read and a write, or two writes) are ordered by
happens-before (HB), given the FIFO pairing of messages (consecutive messages of one connection
that HB leaves unordered could pair otherwise at run time: that is returned as a note, an
assumption, not as a race). HB is the transitive closure of

* program order: a node happens after each of its dependencies;
* messages: a SEND happens before its matching RECV, pairing the k-th SEND and the k-th RECV of a
  connection (src, dst, tag), each side in issue order, as the structure level pairs them.

Accesses (see docs/verify.md): a SEND reads its source chunks when it is issued (ASTRA-sim's
eager semantics: the SEND node is the read, so its successors may overwrite the chunk); a RECV
writes its destination (REDUCE reads it too, which makes it a write that conflicts with
everything); COMP COPY reads src and writes dst; COMP REDUCE reads src and updates dst; COMP
NONE touches nothing. In-place aliasing is applied: a chunk is an address in the rank's flat
memory (:func:`._layout.layout_of`).

Encoding and cost. Accesses are sorted per address by HB level (longest path from a root, a
linear extension of HB). If every write is HB-ordered after the previous write, and every read
after the previous write and before the next one, transitivity orders all conflicting pairs, so
O(accesses) queries suffice. A query "a HB b" is answered by vector clocks over a chain cover of
the HB graph: each node claims a predecessor one level below as its chain parent (a greedy
matching in rounds, one claimant per parent), so ``VC[x][c]`` = the highest index on chain c of a node HB-before
or equal to x is exact (chains are totally ordered). Only chains holding a query source get a
column; a source with exactly one HB successor s (a leaf SEND and its RECV) is first replaced by
s, since then "a HB b" iff "s = b or s HB b". Clocks are int16 (int32 for chains of 32k nodes
or more), propagate level by level with numpy in blocks of columns that bound memory, and an
analysis beyond :data:`_MAX_WORK_CELLS` is declined (reported as not checked).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._native import load_verify
from ..chakra import Buffer, NodeType, Op
from ._flat import Flat, csr, ragged_arange
from ._pairing import pairing
from ._report import ProblemSink

__all__ = ["check_races", "happens_before"]

_SEND, _RECV, _COMP = int(NodeType.SEND), int(NodeType.RECV), int(NodeType.COMP)
_COPY, _REDUCE = int(Op.COPY), int(Op.REDUCE)
_BUF = {int(Buffer.INPUT): "input", int(Buffer.OUTPUT): "output", int(Buffer.SCRATCH): "scratch"}

#: cells of one block of vector clocks (nodes x columns): 128 MiB as int16, 256 MiB as int32
_BLOCK_CELLS = 1 << 26
#: most clock cells (columns x nodes) one analysis may propagate, about a minute of numpy at
#: worst; beyond it the races are reported as not checked rather than hanging on hostile input
_MAX_WORK_CELLS = 1 << 33
#: nodes one bounded search may visit before its query goes to the clocks
_REACH_BUDGET = 64
#: rounds of the greedy chain matching (each round matches at least one claimant per parent)
_MATCH_ROUNDS = 8
#: a group of accesses to one chunk is checked pair by pair (every race named) up to this size,
#: and up to this many pairs in all
_ALL_PAIRS_GROUP = 64
_ALL_PAIRS_TOTAL = 100_000


class _TooLarge(Exception):
    """The clocks would exceed :data:`_MAX_WORK_CELLS`; carries the reason."""


@dataclass
class _Graph:
    """The HB graph in CSR form (predecessors and successors) plus levels and the pairing."""

    pred_ptr: np.ndarray
    pred: np.ndarray
    succ_ptr: np.ndarray
    succ: np.ndarray
    level: np.ndarray  # longest-path level; -1 where a cycle left nodes unlevelled
    match: np.ndarray  # RECV -> its SEND, -1 elsewhere
    pairs: list[np.ndarray]  # consecutive (2, k) SEND pairs and RECV pairs of one key


def _graph(f: Flat, order: np.ndarray, R: int) -> _Graph:
    n = f.n
    p = f.pairing if f.pairing is not None else pairing(f, order)
    match, pairs = p.match, p.pairs
    recvs = np.flatnonzero(match >= 0)
    owner = np.concatenate([np.repeat(np.arange(n, dtype=np.int32), np.diff(f.dep_ptr)), recvs.astype(np.int32)])
    other = np.concatenate([f.dep_pos.astype(np.int32), match[recvs].astype(np.int32)])
    pred_ptr, pred = csr(owner, other, n)
    succ_ptr, succ = csr(other, owner, n)
    del owner, other
    # Kahn in C: longest-path levels, -1 behind a cycle (one numpy round per level cost seconds)
    level = np.empty(n, dtype=np.int64)
    load_verify().levels(pred_ptr, succ_ptr, succ, level)
    return _Graph(pred_ptr, pred, succ_ptr, succ, level, match, pairs)


@dataclass
class _Accesses:
    """Chunk accesses sorted by (address, level, node); a node touches an address once (a node
    that reads and writes one address counts as writing it)."""

    node: np.ndarray
    addr: np.ndarray
    write: np.ndarray  # bool
    group: np.ndarray  # index of the first access of the same address


def _accesses(f: Flat, base: np.ndarray, level: np.ndarray, M: int) -> _Accesses:
    """Rank r's chunk at flat address x is the global address r * M + x."""
    kind, op = f.kind, f.op
    cnt = np.maximum(f.count.astype(np.int64), 0)
    data_comp = (kind == _COMP) & ((op == _COPY) | (op == _REDUCE))
    sides = []  # per side: (nodes, first address, chunk count, writes)
    for mask, buf, off, w in (
        ((kind == _SEND) | data_comp, f.src_buf, f.src_off, False),
        ((kind == _RECV) | data_comp, f.dst_buf, f.dst_off, True),
    ):
        v = np.flatnonzero(mask & (cnt > 0))
        rk = f.rank[v]
        start = rk * M + base[rk, np.clip(buf[v].astype(np.int64), 0, 2)] + off[v].astype(np.int64)
        sides.append((v, start, cnt[v], w))
    del cnt, data_comp
    node, addr, write = _sorted(sides, level, f.n)
    keep = np.ones(node.shape[0], dtype=bool)
    keep[1:] = (addr[1:] != addr[:-1]) | (node[1:] != node[:-1])  # the write sorts first
    node, addr, write = node[keep], addr[keep], write[keep]
    idx = np.arange(node.shape[0], dtype=_index_type(node.shape[0]))
    new = np.ones(node.shape[0], dtype=bool)
    new[1:] = addr[1:] != addr[:-1]
    group = np.maximum.accumulate(np.where(new, idx, 0)) if idx.shape[0] else idx
    return _Accesses(node, addr, write, group)


def _sorted(
    sides: list[tuple[np.ndarray, np.ndarray, np.ndarray, bool]], level: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The accesses of ``sides`` (per side: nodes, first address, chunk count, whether they
    write) one per chunk, sorted by (address, level, node, write first). The four fit one int64
    key whenever their bit widths sum to at most 63 (a 1024-rank ring needs 58); one sort of that
    key, built side by side, costs a fraction of a four-key lexsort and of its index arrays."""
    top = max((int((s + c).max()) for _, s, c, _ in sides if s.shape[0]), default=0)
    wa, wl, wn = (max(x, 1).bit_length() for x in (top, int(level.max(initial=0)), n - 1))
    if wa + wl + wn + 1 > 63:
        node = np.concatenate([np.repeat(v, c) for v, _, c, _ in sides])
        addr = np.concatenate([ragged_arange(s, c) for _, s, c, _ in sides])
        write = np.concatenate([np.full(int(c.sum()), w) for _, _, c, w in sides])
        o = np.lexsort((~write, node, level[node], addr))
        return node[o], addr[o], write[o]
    keys = []
    while sides:
        v, start, c, w = sides.pop(0)  # each side's tables go as soon as its keys are built
        nodes = np.repeat(v, c)
        key = ragged_arange(start, c)
        del v, start, c
        key <<= wl + wn + 1
        key |= level[nodes] << (wn + 1)
        key |= nodes << 1
        del nodes
        if not w:
            key |= 1  # a write (0) sorts before a read (1) of the same node
        keys.append(key)
        del key
    key = np.concatenate(keys) if keys else np.zeros(0, np.int64)
    del keys
    key.sort()
    write = (key & 1) == 0
    it = _index_type(max(n, 1 << wa))
    node = ((key >> 1) & ((1 << wn) - 1)).astype(it)
    addr = (key >> (wl + wn + 1)).astype(it)
    return node, addr, write


def _neighbour_queries(acc: _Accesses) -> tuple[np.ndarray, np.ndarray]:
    """Access index pairs (i, j), i before j, whose order implies the order of all conflicts:
    every access after the previous write, and every read before the next write."""
    A = acc.node.shape[0]
    if A == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    it = _index_type(A + 1)  # access indices (and A) in 32 bits when they fit: half the memory
    idx = np.arange(A, dtype=it)
    starts = np.flatnonzero(acc.group == idx).astype(it)
    end = np.repeat(np.append(starts[1:], it(A)), np.diff(np.append(starts, it(A))))  # group's end
    del starts
    pw = np.empty(A, dtype=it)  # the previous write before each access (-1: none)
    pw[0] = -1
    pw[1:] = np.maximum.accumulate(np.where(acc.write, idx, it(-1)))[:-1]
    a1 = np.flatnonzero(pw >= acc.group).astype(it)
    qi1 = pw[a1]
    del pw
    nw = np.empty(A, dtype=it)  # the next write after each access (A: none)
    nw[-1] = A
    nw[:-1] = np.minimum.accumulate(np.where(acc.write, idx, it(A))[::-1])[::-1][1:]
    del idx
    a2 = np.flatnonzero(~acc.write & (nw < end)).astype(it)
    return np.concatenate([qi1, a2]), np.concatenate([a1, nw[a2]])


def _index_type(n: int) -> type[np.signedinteger]:
    """int32 for indices below 2^31, else int64."""
    return np.int32 if n < 2**31 else np.int64


def _all_pair_queries(acc: _Accesses, groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every conflicting pair inside the given address groups (first access indices), for
    groups of at most :data:`_ALL_PAIRS_GROUP` accesses and :data:`_ALL_PAIRS_TOTAL` pairs in all
    (beyond that the neighbouring pairs already name every racing access)."""
    qi: list[int] = []
    qj: list[int] = []
    ends = np.searchsorted(acc.group, groups, side="right").tolist()
    write = acc.write
    for g, e in zip(groups.tolist(), ends, strict=False):
        if e - g > _ALL_PAIRS_GROUP:
            continue
        if len(qi) > _ALL_PAIRS_TOTAL:
            break
        w = write[g:e].tolist()
        for i in range(e - g):
            for j in range(i + 1, e - g):
                if w[i] or w[j]:
                    qi.append(g + i)
                    qj.append(g + j)
    return np.asarray(qi, dtype=np.int64), np.asarray(qj, dtype=np.int64)


@dataclass
class _Chains:
    """A chain cover of the HB graph: ``top`` = chain head of each node, ``index`` = its
    position on the chain (head 0)."""

    top: np.ndarray
    index: np.ndarray


def _chains(g: _Graph) -> _Chains:
    par = _chain_parents(g)
    # a parent lies exactly one level below its child, so a node's position on its chain is its
    # level minus its head's: only the heads need computing
    top = _heads(par)
    del par
    index = (g.level - g.level[top]).astype(np.int32)  # node indices and chain positions: int32
    return _Chains(top.astype(np.int32), index)


def _chain_parents(g: _Graph) -> np.ndarray:
    """Each node's chain parent (an HB predecessor one level below; -1 for a chain head), each
    parent claimed by at most one node, so the chains are disjoint paths.

    A greedy matching in rounds (in C, ``hub._native._verify.chain_parents``): each unmatched node
    claims its first free predecessor one level below (which keeps chains dense), and each parent
    takes one claimant, the one with most HB successors (an inner node continues the chain better
    than a leaf), then the lowest index. Rounds let the losers try their other candidates (pieces
    of a chunked step all wait for all pieces). Any such matching gives exact clocks; this one
    keeps the number of clock columns low."""
    n = g.level.shape[0]
    par = np.full(n, -1, dtype=np.int64)
    load_verify().chain_parents(g.pred_ptr, g.pred, g.succ_ptr, g.level, _MATCH_ROUNDS, par)
    return par


def _heads(par: np.ndarray) -> np.ndarray:
    """The head of each node's chain (in C, ``hub._native._verify.chain_heads``, O(n))."""
    top = np.empty(par.shape[0], dtype=np.int64)
    load_verify().chain_heads(par, top)
    return top


def _ordered(g: _Graph, ch: _Chains, qa: np.ndarray, qb: np.ndarray) -> np.ndarray:
    """For each query, whether qa[i] happens before qb[i] (distinct nodes, qa not after qb in
    level order)."""
    n = g.level.shape[0]
    if n > _MAX_WORK_CELLS:  # even one clock column is beyond the budget
        raise _TooLarge(f"the happens-before analysis would propagate 1 or more clocks over {n} nodes")
    ok = np.zeros(qa.shape[0], dtype=bool)
    outdeg = np.diff(g.succ_ptr)
    s = qa.copy()
    # lift sources with one HB successor: a HB b iff succ(a) = b or succ(a) HB b
    for _ in range(2 if g.succ.shape[0] else 0):
        one = outdeg[s] == 1
        s = np.where(one, g.succ[np.minimum(g.succ_ptr[s], g.succ.shape[0] - 1)], s)
        ok |= one & (s == qb)
    # on one chain the chain order is HB, so no clock is needed (most conflicting accesses of a
    # chunk are one rank's, whose nodes share a few chains): at scale this leaves few queries
    ok |= (ch.top[s] == ch.top[qb]) & (ch.index[s] <= ch.index[qb])
    todo = np.flatnonzero(~ok & (outdeg[s] > 0))  # a sink happens before nothing
    if not todo.shape[0]:
        return ok
    # most remaining queries are decided by a short search (consecutive messages of one key are
    # close in levels: the search stays below the target's level); the clocks take the rest
    found = np.empty(todo.shape[0], dtype=np.int8)
    load_verify().reach(
        g.succ_ptr,
        g.succ,
        g.level,
        ch.top,
        ch.index,
        s[todo].astype(np.int64),
        qb[todo].astype(np.int64),
        _REACH_BUDGET,
        found,
    )
    ok[todo[found == 1]] = True
    todo = todo[found < 0]
    del found
    if not todo.shape[0]:
        return ok
    roots, col = np.unique(ch.top[s[todo]], return_inverse=True)
    col = col.reshape(-1)
    need = ch.index[s[todo]]
    # nodes on a tracked chain and their column
    tracked_root = np.full(n, -1, dtype=np.int64)
    tracked_root[roots] = np.arange(roots.shape[0])
    node_col = tracked_root[ch.top]
    dtype = np.int16 if int(ch.index.max(initial=0)) < np.iinfo(np.int16).max else np.int32
    lorder = np.argsort(g.level, kind="stable")
    L = int(g.level.max()) + 1
    lptr = np.searchsorted(g.level[lorder], np.arange(L + 1))
    # rows of the clocks are level-sorted positions, so a level is a slice; per level, each row's
    # first predecessor is gathered at once, then the k-th extra predecessors of the level's rows
    # (k = 1, 2, ...; rarely more than one round) are folded in with a maximum: most nodes have
    # one or two predecessors, so this beats a segmented reduction
    pos = np.empty(n, dtype=np.int64)
    pos[lorder] = np.arange(n, dtype=np.int64)
    npred = np.diff(g.pred_ptr)[lorder]
    first = pos[g.pred[np.minimum(g.pred_ptr[lorder], max(g.pred.shape[0] - 1, 0))]]
    extra_n = np.maximum(npred - 1, 0)
    x_row = np.repeat(np.arange(n, dtype=np.int64), extra_n)
    x_pred = pos[g.pred[ragged_arange(g.pred_ptr[lorder] + 1, extra_n)]]
    x_k = ragged_arange(np.zeros(n, dtype=np.int64), extra_n)
    x_lv = g.level[lorder][x_row]
    o = np.lexsort((x_row, x_k, x_lv))
    x_row, x_pred, x_k, x_lv = x_row[o], x_pred[o], x_k[o], x_lv[o]
    brk = np.flatnonzero(np.diff(x_lv) | np.diff(x_k)) + 1  # starts of (level, k) blocks
    bstart = np.concatenate([[0], brk]) if x_row.shape[0] else np.zeros(0, np.int64)
    bend = np.append(bstart[1:], x_row.shape[0]) if x_row.shape[0] else bstart
    bptr = np.searchsorted(x_lv[bstart], np.arange(L + 1)) if x_row.shape[0] else np.zeros(L + 1, np.int64)
    bstart_l, bend_l = bstart.tolist(), bend.tolist()
    own_pos_all = pos
    C = roots.shape[0]
    if C * n > _MAX_WORK_CELLS:
        raise _TooLarge(f"the happens-before analysis would propagate {C} clocks over {n} nodes")
    B = max(1, min(C, _BLOCK_CELLS // max(n, 1)))
    vc = np.empty((n, B), dtype=dtype)
    for c0 in range(0, C, B):
        c1 = min(C, c0 + B)
        w = c1 - c0
        mine = (node_col >= c0) & (node_col < c1)
        own = lorder[mine[lorder]]  # tracked nodes of this block, by level
        optr = np.searchsorted(g.level[own], np.arange(L + 1)).tolist()
        own_row = own_pos_all[own]
        own_col = node_col[own] - c0
        own_idx = ch.index[own].astype(dtype)
        v = vc[:, :w] if w < B else vc
        v[: lptr[1]] = -1
        bp = bptr.tolist()
        lp = lptr.tolist()
        for lv in range(L):
            a, b = lp[lv], lp[lv + 1]
            if lv:
                v[a:b] = v[first[a:b]]
                for k in range(bp[lv], bp[lv + 1]):
                    x0, x1 = bstart_l[k], bend_l[k]
                    r_ = x_row[x0:x1]
                    v[r_] = np.maximum(v[r_], v[x_pred[x0:x1]])
            o0, o1 = optr[lv], optr[lv + 1]
            if o1 > o0:
                v[own_row[o0:o1], own_col[o0:o1]] = own_idx[o0:o1]
        sel = np.flatnonzero((col >= c0) & (col < c1))
        q = todo[sel]
        ok[q] = v[pos[qb[q]], col[sel] - c0] >= need[sel]
    return ok


def _what(f: Flat, v: int) -> str:
    k, op = int(f.kind[v]), int(f.op[v])
    if k == _SEND:
        return f"SEND to rank {int(f.peer[v])}"
    if k == _RECV:
        return f"RECV{' REDUCE' if op == _REDUCE else ''} from rank {int(f.peer[v])}"
    return f"COMP {'REDUCE' if op == _REDUCE else 'COPY'}"


def _chunk_name(f: Flat, base: np.ndarray, v: int, addr: int, write: bool, M: int) -> str:
    """``input chunk 3`` for the address as node v names it (its destination if it writes)."""
    r = int(f.rank[v])
    buf = int(f.dst_buf[v]) if write else int(f.src_buf[v])
    return f"{_BUF.get(buf, '?')} chunk {addr - r * M - int(base[r, buf])}"


def happens_before(f: Flat, order: np.ndarray, ranks: int) -> _Graph:
    """The HB graph of ``f`` (program order plus the static message pairing), levelled."""
    return _graph(f, order, ranks)


def check_races(
    f: Flat, order: np.ndarray, base: np.ndarray, memory: int, sink: ProblemSink, graph: _Graph | None = None
) -> tuple[list[str], str | None]:
    """Report every pair of conflicting chunk accesses that happens-before leaves unordered
    (see the module docstring). Return notes on what was assumed (consecutive messages of one
    (src, dst, tag, size) key that are unordered, whose pairing the DAG alone does not fix), and
    why the races could not be checked (None when they were).

    ``order`` is each node's position in its rank's issue order, ``base`` the (ranks, 3) buffer
    base addresses and ``memory`` an upper bound of any rank's flat memory size; ``graph`` is
    :func:`happens_before` of the same arguments when the caller already built it."""
    R = int(base.shape[0])
    M = int(memory)
    notes: list[str] = []
    g = graph if graph is not None else _graph(f, order, R)
    if f.n and int(g.level.min()) < 0:
        stuck = np.flatnonzero(g.level < 0)
        r, i = f.where(int(stuck[0]))
        sink.add(
            f"{stuck.shape[0]} node(s) lie on a cycle of dependencies and message pairings "
            "(the k-th SEND of a connection pairs with its k-th RECV, in issue order)",
            r,
            i,
        )
        return notes, None
    ch = _chains(g)
    acc = _accesses(f, base, g.level, M)
    ia, ib = _neighbour_queries(acc)
    pairs = g.pairs
    mq = np.concatenate(pairs, axis=1) if pairs else np.zeros((2, 0), np.int64)
    qa = np.concatenate([acc.node[ia], mq[0].astype(acc.node.dtype)])
    qb = np.concatenate([acc.node[ib], mq[1].astype(acc.node.dtype)])
    try:
        ok = _ordered(g, ch, qa, qb)
    except _TooLarge as e:
        return notes, str(e)
    nd = ia.shape[0]
    bad_d = np.flatnonzero(~ok[:nd])
    if bad_d.shape[0]:
        # name every racing pair: all conflicting pairs of the affected chunks
        ja, jb = _all_pair_queries(acc, np.unique(acc.group[ia[bad_d]]))
        try:
            ok2 = _ordered(g, ch, acc.node[ja], acc.node[jb])
        except _TooLarge:  # the neighbouring pairs are reported; the rest would be more of the same
            ja, jb, ok2 = ja[:0], jb[:0], np.zeros(0, dtype=bool)
        ia = np.concatenate([ia[bad_d], ja[~ok2]])
        ib = np.concatenate([ib[bad_d], jb[~ok2]])
        _report_data(f, base, acc, ia, ib, M, sink)
    loose = np.flatnonzero(~ok[nd:])
    if loose.shape[0]:
        # name the first by (SENDs first, src, dst, tag, size, issue order)
        la = mq[0, loose]
        is_send = f.kind[la] == _SEND
        src, dst = np.where(is_send, f.rank[la], f.peer[la]), np.where(is_send, f.peer[la], f.rank[la])
        first = loose[np.lexsort((order[la], f.size[la], f.tag[la], dst, src, ~is_send))[0]]
        a, b = int(mq[0, first]), int(mq[1, first])
        r, i = f.where(a)
        what = "SEND" if int(f.kind[a]) == _SEND else "RECV"
        notes.append(
            f"assumed: {loose.shape[0]} pair(s) of messages on one connection are unordered and were "
            f"matched in file order (first: rank {r} {what}s {'to' if what == 'SEND' else 'from'} rank "
            f"{int(f.peer[a])} tag {int(f.tag[a])}, nodes {i} and {int(f.ids[b])}); ASTRA-sim "
            "matches them in the order they are issued at run time, which the dependencies alone do "
            "not fix"
        )
    return notes, None


def _report_data(
    f: Flat, base: np.ndarray, acc: _Accesses, ia: np.ndarray, ib: np.ndarray, M: int, sink: ProblemSink
) -> None:
    """One problem per racing node pair, naming its first chunk and how many chunks race."""
    a, b = acc.node[ia].astype(np.int64), acc.node[ib].astype(np.int64)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    key = lo * f.n + hi
    o = np.lexsort((acc.addr[ia], key))
    key, ia, ib = key[o], ia[o], ib[o]
    first = np.ones(key.shape[0], dtype=bool)
    first[1:] = key[1:] != key[:-1]
    starts = np.flatnonzero(first)  # key order is rank, then position, of the first node
    addrs = acc.addr[ia]
    new_addr = first.copy()
    new_addr[1:] |= addrs[1:] != addrs[:-1]
    chunks = np.add.reduceat(new_addr.astype(np.int64), starts) if starts.shape[0] else starts
    room = max(0, sink.limit - len(sink.kept))
    sink.total += max(0, starts.shape[0] - room)  # counted, not formatted
    for s, nchunks in zip(starts[:room].tolist(), chunks[:room].tolist(), strict=False):
        i, j = int(ia[s]), int(ib[s])
        u, v = int(acc.node[i]), int(acc.node[j])
        if u > v:
            u, v, i, j = v, u, j, i
        addr = int(acc.addr[i])
        r, uid = f.where(u)
        name_u = _chunk_name(f, base, u, addr, bool(acc.write[i]), M)
        name_v = _chunk_name(f, base, v, addr, bool(acc.write[j]), M)
        alias = "" if name_v == name_u else f" (= {name_v})"
        more = f" (and {nchunks - 1} more chunk{'s' if nchunks > 2 else ''})" if nchunks > 1 else ""
        sink.add(
            f"race on {name_u}{alias}{more}: {_what(f, u)} (node {uid}) "
            f"{'writes' if acc.write[i] else 'reads'} it and {_what(f, v)} (node {int(f.ids[v])}) "
            f"{'writes' if acc.write[j] else 'reads'} it, and no chain of dependencies and "
            "messages orders them",
            r,
            uid,
        )
