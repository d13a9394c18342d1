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

import os
from dataclasses import dataclass

import numpy as np

from .._native import load_verify
from ..chakra import Buffer, NodeType, Op
from ._accesses import Accesses, accesses, all_pair_queries, batches, neighbour_queries
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
#: worst; beyond it the races are reported as not checked, naming the cells they would need,
#: rather than hanging on hostile input (``COLLHUB_MAX_RACE_CELLS`` sets another budget)
_MAX_WORK_CELLS = 1 << 33
#: nodes one bounded search may visit before its query goes to the clocks
_REACH_BUDGET = 64
#: rounds of the greedy chain matching (each round matches at least one claimant per parent)
_MATCH_ROUNDS = 8


class _TooLarge(Exception):
    """The clocks would exceed :func:`_budget`; carries the reason."""


def _budget() -> int:
    """Clock cells one analysis may propagate: ``COLLHUB_MAX_RACE_CELLS`` where it is set (a
    user who can wait pays for a larger one), else :data:`_MAX_WORK_CELLS`."""
    raw = os.environ.get("COLLHUB_MAX_RACE_CELLS", "").strip().replace("_", "")
    return int(raw) if raw.isdigit() and int(raw) > 0 else _MAX_WORK_CELLS


def _too_large(clocks: int, n: int, more: bool = False) -> _TooLarge:
    """The reason the races are not checked, naming the budget they would need: ``clocks``
    columns (at least, with ``more``) propagated over ``n`` nodes."""
    cells = clocks * n
    return _TooLarge(
        f"the happens-before analysis would propagate {'at least ' if more else ''}{cells:,} clock cells, "
        f"beyond the budget of {_budget():,} (set COLLHUB_MAX_RACE_CELLS to {cells} or more to check them; "
        f"time grows with the cells): {clocks}{' or more' if more else ''} clocks over {n} nodes"
    )


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


def _check_size(n: int) -> None:
    if n > _budget():  # even one clock column is beyond the budget
        raise _too_large(1, n, more=True)


def _ordered(g: _Graph, ch: _Chains, qa: np.ndarray, qb: np.ndarray) -> np.ndarray:
    """For each query, whether qa[i] happens before qb[i] (distinct nodes, qa not after qb in
    level order)."""
    _check_size(g.level.shape[0])
    ok, s, todo = _decided(g, ch, qa, qb)
    if todo.shape[0]:
        ok[todo] = _clocks(g, ch, s[todo], qb[todo])
    return ok


def _decided(g: _Graph, ch: _Chains, qa: np.ndarray, qb: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The queries that the cheap tests decide: (ok, the lifted sources s, the indices of the
    queries left to the clocks, for which "s HB qb" is the answer)."""
    ok = np.zeros(qa.shape[0], dtype=bool)
    sp = g.succ_ptr
    s = qa.astype(np.int64)
    # lift sources with one HB successor: a HB b iff succ(a) = b or succ(a) HB b
    for _ in range(2 if g.succ.shape[0] else 0):
        one = (sp[s + 1] - sp[s]) == 1
        s = np.where(one, g.succ[np.minimum(sp[s], g.succ.shape[0] - 1)], s)
        ok |= one & (s == qb)
    # on one chain the chain order is HB, so no clock is needed (most conflicting accesses of a
    # chunk are one rank's, whose nodes share a few chains): at scale this leaves few queries
    ok |= (ch.top[s] == ch.top[qb]) & (ch.index[s] <= ch.index[qb])
    todo = np.flatnonzero(~ok & (sp[s + 1] > sp[s]))  # a sink happens before nothing
    if not todo.shape[0]:
        return ok, s, todo
    # most remaining queries are decided by a short search (consecutive messages of one key are
    # close in levels: the search stays below the target's level); the clocks take the rest
    found = np.empty(todo.shape[0], dtype=np.int8)
    load_verify().reach(
        g.succ_ptr,
        g.succ,
        g.level,
        ch.top,
        ch.index,
        s[todo],
        qb[todo].astype(np.int64),
        _REACH_BUDGET,
        found,
    )
    ok[todo[found == 1]] = True
    return ok, s, todo[found < 0]


def _clocks(g: _Graph, ch: _Chains, s: np.ndarray, qb: np.ndarray) -> np.ndarray:
    """Whether s[i] HB qb[i], by vector clocks over the chains holding a source (see the module
    docstring)."""
    n = g.level.shape[0]
    ok = np.zeros(s.shape[0], dtype=bool)
    if not s.shape[0]:
        return ok
    todo = np.arange(s.shape[0])
    roots, col = np.unique(ch.top[s[todo]], return_inverse=True)
    col = col.reshape(-1)
    need = ch.index[s[todo]]
    C = roots.shape[0]
    if C * n > _budget():  # before the tables below, which cost ~60 bytes a node
        raise _too_large(C, n)
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
    pairs = g.pairs
    mq = np.concatenate(pairs, axis=1) if pairs else np.zeros((2, 0), np.int64)
    try:
        _check_size(f.n)
        ok = _data_races(f, g, ch, base, M, mq, sink)
    except _TooLarge as e:
        return notes, str(e)
    loose = np.flatnonzero(~ok)
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


@dataclass
class _Open:
    """A batch of ranks whose data queries the cheap tests did not all prove ordered, as node
    pair keys ``a * n + b``: the pairs found unordered (``bad``) and those left to the clocks
    (``todo``, with their lifted sources ``s`` and targets ``qb``)."""

    r0: int
    r1: int
    bad: np.ndarray
    todo: np.ndarray
    s: np.ndarray
    qb: np.ndarray


def _pair_keys(acc: Accesses, ia: np.ndarray, ib: np.ndarray, n: int) -> np.ndarray:
    """``a * n + b`` of each query's node pair (below 2^62, as n < 2^31)."""
    key = acc.node[ia].astype(np.int64)
    key *= n
    key += acc.node[ib]
    return key


def _distinct(key: np.ndarray) -> np.ndarray:
    """The distinct values of ``key``, sorted (in place; np.unique's hashing cost 14 s for the 5M
    queries of a 1024-rank ring, a sort 0.4 s)."""
    key.sort()
    keep = np.ones(key.shape[0], dtype=bool)
    keep[1:] = key[1:] != key[:-1]
    return key[keep]


def _data_races(
    f: Flat, g: _Graph, ch: _Chains, base: np.ndarray, M: int, mq: np.ndarray, sink: ProblemSink
) -> np.ndarray:
    """Report the data races batch of ranks by batch (see :mod:`._accesses`) and return, per
    consecutive message pair ``mq``, whether HB orders it. A batch's queries are node pairs, each
    asked once (a message of k chunks asks the same pair k times) of the cheap tests as the batch
    is sorted; the few left open wait for one run of the clocks over all batches (the clocks cost
    a pass over every node per column, so they run once); then the batches with races are
    sorted again to name them, in batch order, which is the order of their nodes."""
    n = f.n
    m_ok, m_s, m_todo = _decided(g, ch, mq[0], mq[1])
    opened: list[_Open] = []
    # the chains holding an open query's source: once they are too many for the clocks, the
    # analysis stops here rather than sorting every remaining batch for nothing
    tracked = np.zeros(n, dtype=bool)
    tracked[ch.top[m_s[m_todo]]] = True
    for r0, r1 in batches(f):
        acc = accesses(f, base, g.level, M, r0, r1)
        ia, ib = neighbour_queries(acc)
        key = _distinct(_pair_keys(acc, ia, ib, n))
        del acc, ia, ib
        qb = key % n
        ok, s, todo = _decided(g, ch, key // n, qb)
        if not ok.all():
            ok[todo] = True  # for the moment: the clocks decide them
            opened.append(_Open(r0, r1, key[~ok], key[todo], s[todo], qb[todo]))
            tracked[ch.top[s[todo]]] = True
            C = int(np.count_nonzero(tracked))
            if C * n > _budget():
                raise _too_large(C, n, more=True)
        del key, qb, ok, s, todo
    got = _clocks(
        g,
        ch,
        np.concatenate([o.s for o in opened] + [m_s[m_todo]]),
        np.concatenate([o.qb for o in opened] + [mq[1][m_todo].astype(np.int64)]),
    )
    k, used = 0, 0
    for o in opened:
        t = o.todo.shape[0]
        bad = np.concatenate([o.bad, o.todo[~got[k : k + t]]])
        k += t
        if bad.shape[0]:
            used = _report_batch(f, g, ch, base, M, o.r0, o.r1, bad, used, sink)
    m_ok[m_todo] = got[k:]
    return m_ok


def _report_batch(
    f: Flat,
    g: _Graph,
    ch: _Chains,
    base: np.ndarray,
    M: int,
    r0: int,
    r1: int,
    bad: np.ndarray,
    used: int,
    sink: ProblemSink,
) -> int:
    """Report the races of ranks [r0, r1), whose node pairs ``bad`` (keys) are unordered;
    return how many all-pair queries are used so far (``used`` before this batch)."""
    acc = accesses(f, base, g.level, M, r0, r1)
    ia, ib = neighbour_queries(acc)
    bad = np.flatnonzero(np.isin(_pair_keys(acc, ia, ib, f.n), bad))
    # name every racing pair: all conflicting pairs of the affected chunks
    ja, jb = all_pair_queries(acc, np.unique(acc.group[ia[bad]]), used)
    used += ja.shape[0]
    try:
        ok2 = _ordered(g, ch, acc.node[ja], acc.node[jb])
    except _TooLarge:  # the neighbouring pairs are reported; the rest would be more of the same
        ja, jb, ok2 = ja[:0], jb[:0], np.zeros(0, dtype=bool)
    _report_data(f, base, acc, np.concatenate([ia[bad], ja[~ok2]]), np.concatenate([ib[bad], jb[~ok2]]), M, sink)
    return used


def _report_data(
    f: Flat, base: np.ndarray, acc: Accesses, ia: np.ndarray, ib: np.ndarray, M: int, sink: ProblemSink
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
    chunks = np.add.reduceat(new_addr * acc.span[ia].astype(np.int64), starts) if starts.shape[0] else starts
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
