"""Vectorized lowering of parsed ``<gpu>`` elements to columnar rank graphs, a batch at a time.

Each step expands into a fixed list of nodes that depends only on its type (``_EXPAND``), so a
whole batch of gpus is expanded with numpy ``repeat``/table look-ups instead of a Python loop per
step, and per gpu only its graph is cut out of the batch's columns. The general (expat) path
lowers each gpu as its ``</gpu>`` closes (a batch of one: memory stays at one gpu); the fast path
(``_scan``) lowers the gpus whose columns it read together, since numpy's cost per call, not per
element, dominates a gpu of a few hundred steps. Node order is document order (tb by tb, step by
step); when a cross-tb dependency points at a later node, that gpu's graph is re-ordered
topologically (and a cycle is reported).
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from hub.chakra import Buffer, NodeType, Op, RankGraph
from hub.errors import ImportFormatError

from ._stepcols import (
    CODE_NAME,
    CPY,
    NOP,
    NT,
    RCS,
    RE,
    RRC,
    RRC_X,
    RRCS,
    RRCS_X,
    RRS,
    R,
    S,
    Steps,
    Tbs,
    check_steps,
    first,
    read_steps,
    register_connections,
)

if TYPE_CHECKING:
    from ._reader import _Gpu, _Reader

__all__ = ["lower_gpus"]

_SEND, _RECV, _COMP = int(NodeType.SEND), int(NodeType.RECV), int(NodeType.COMP)
_NONE, _COPY, _REDUCE = int(Op.NONE), int(Op.COPY), int(Op.REDUCE)
_NB, _IN, _OUT, _SCR = int(Buffer.NONE), int(Buffer.INPUT), int(Buffer.OUTPUT), int(Buffer.SCRATCH)


class _Role(NamedTuple):
    """One node a step type expands into. ``peer``: 0 none, 1 the tb's send peer, 2 its recv
    peer. ``src``/``dst``: 0 unused, 1 the step's src, 2 the step's dst, 3 the tb's temporary."""

    kind: int
    op: int
    peer: int
    src: int
    dst: int
    suffix: str  # of the node's name


_EXPAND: dict[int, list[_Role]] = {
    S: [_Role(_SEND, _NONE, 1, 1, 0, "")],
    R: [_Role(_RECV, _COPY, 2, 0, 2, "")],
    RCS: [_Role(_RECV, _COPY, 2, 0, 2, ".recv"), _Role(_SEND, _NONE, 1, 2, 0, ".send")],
    RRC: [_Role(_RECV, _REDUCE, 2, 0, 2, ".recv"), _Role(_COMP, _NONE, 0, 0, 0, ".comp")],
    RRCS: [
        _Role(_RECV, _REDUCE, 2, 0, 2, ".recv"),
        _Role(_COMP, _NONE, 0, 0, 0, ".comp"),
        _Role(_SEND, _NONE, 1, 2, 0, ".send"),
    ],
    # rrs stores nothing locally: receive into the tb's temporary, reduce src into it, forward it
    RRS: [
        _Role(_RECV, _COPY, 2, 0, 3, ".recv"),
        _Role(_COMP, _REDUCE, 0, 1, 3, ".comp"),
        _Role(_SEND, _NONE, 1, 3, 0, ".send"),
    ],
    CPY: [_Role(_COMP, _COPY, 0, 1, 2, "")],
    RE: [_Role(_COMP, _REDUCE, 0, 1, 2, "")],
    NOP: [],
    # dst := received (+) src with src != dst: a copy-receive, then a real local reduction
    RRC_X: [_Role(_RECV, _COPY, 2, 0, 2, ".recv"), _Role(_COMP, _REDUCE, 0, 1, 2, ".comp")],
    RRCS_X: [
        _Role(_RECV, _COPY, 2, 0, 2, ".recv"),
        _Role(_COMP, _REDUCE, 0, 1, 2, ".comp"),
        _Role(_SEND, _NONE, 1, 2, 0, ".send"),
    ],
}

_NNODES = np.array([len(_EXPAND[t]) for t in range(NT)], dtype=np.int64)
_ROLE_BASE = np.cumsum(_NNODES) - _NNODES
_ROLES = [r for t in range(NT) for r in _EXPAND[t]]  # row _ROLE_BASE[type] + k: k-th node of type
_ROLE_KIND, _ROLE_OP, _ROLE_PEER, _ROLE_SRC, _ROLE_DST = (
    np.array([getattr(r, f) for r in _ROLES], dtype=np.int64) for f in ("kind", "op", "peer", "src", "dst")
)
_ROLE_NAME = [r.suffix for r in _ROLES]
_TYPE_OF_ROLE = [CODE_NAME[t] for t in range(NT) for _ in _EXPAND[t]]
_NODE_COLUMNS = ("kind", "op", "peer", "tag", "count", "src_buf", "src_off", "dst_buf", "dst_off", "tb", "chan")
# RankGraph's dtype of each column: converted once per batch, so each gpu's columns are views
_EMPTY = RankGraph.from_columns(0)
_DTYPES = {c: getattr(_EMPTY, c).dtype for c in _NODE_COLUMNS}


class _Nodes:
    """The nodes a batch's steps expand into (``<copy>`` nodes first), as RankGraph columns."""

    __slots__ = (*_NODE_COLUMNS, "step_of", "in_step", "role", "first", "last", "copies")
    kind: np.ndarray
    op: np.ndarray
    peer: np.ndarray
    tag: np.ndarray
    count: np.ndarray
    src_buf: np.ndarray
    src_off: np.ndarray
    dst_buf: np.ndarray
    dst_off: np.ndarray
    tb: np.ndarray
    chan: np.ndarray
    step_of: np.ndarray
    in_step: np.ndarray
    role: np.ndarray
    first: np.ndarray
    last: np.ndarray
    copies: int

    # step_of: the step each step node comes from (copies excluded); in_step: its position among
    # the step's nodes; role: its row of _ROLES; first/last: first and last node of each step;
    # copies: how many <copy> nodes lead (only a batch of one gpu has them)
    def __init__(self, **cols: Any) -> None:
        for k, v in cols.items():
            setattr(self, k, v)


def lower_gpus(rd: _Reader, gpus: list[_Gpu], cols: Any = None) -> list[tuple[RankGraph, int]]:
    """The rank graph of each gpu of the batch and the end of its scratch use (s_chunks +
    temporaries). ``cols``: the batch's step columns as the fast path read them (see
    :func:`._stepcols.read_steps`); None parses the raw rows of a batch of one gpu."""
    assert len(gpus) == 1 or not any(g.copies for g in gpus), "a gpu with <copy> elements is lowered alone"
    tbs = Tbs(gpus)
    st = read_steps(str(rd.path), gpus, tbs, cols)
    limits = np.array(
        [
            (rd.in_chunks if rd.in_chunks >= 0 else g.i_chunks, rd.out_chunks if rd.out_chunks >= 0 else g.o_chunks)
            + (g.s_chunks,)
            for g in gpus
        ],
        dtype=np.int64,
    ).reshape(-1, 3)
    check_steps(st, tbs, limits)
    register_connections(rd, st, tbs)
    temp_of_tb, temp_end = _temporaries(st, tbs, limits[:, 2])
    nodes = _expand(st, tbs, temp_of_tb, gpus, limits)
    en, ed = _dependencies(st, tbs, nodes)
    names = _names(gpus, st, nodes) if rd.want_names else None
    graphs = _assemble(gpus, st, nodes, en, ed, names)
    return list(zip(graphs, temp_end.tolist(), strict=True))


def _temporaries(st: Steps, tbs: Tbs, s_chunks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Scratch for rrs: one region per tb that has rrs steps, sized by its largest cnt, after its
    gpu's own scratch. Returns each tb's region offset (-1 none) and each gpu's end of scratch use."""
    ntb = len(tbs.all)
    is_rrs = st.code == RRS
    if not is_rrs.any():
        return np.full(ntb, -1, dtype=np.int64), s_chunks
    tsize = np.zeros(ntb, dtype=np.int64)
    np.maximum.at(tsize, st.tbg[is_rrs], st.cnt[is_rrs])
    upto = np.concatenate([[0], np.cumsum(tsize)])  # the regions of the batch's tbs before each one
    offs = upto[:-1] - upto[tbs.base[tbs.gpu]] + s_chunks[tbs.gpu]
    end = s_chunks + upto[tbs.base + tbs.ntb] - upto[tbs.base]
    return np.where(tsize > 0, offs, -1), end


def _expand(st: Steps, tbs: Tbs, temp_of_tb: np.ndarray, gpus: list[_Gpu], limits: np.ndarray) -> _Nodes:
    """Every step's nodes (per its type's _EXPAND entry), after the gpu's <copy> nodes."""
    S, C = len(st.code), sum(len(g.copies) for g in gpus)
    nn = _NNODES[st.code]
    first = np.cumsum(nn) - nn + C
    N = int(nn.sum()) + C
    step_of = np.repeat(np.arange(S), nn)
    in_step = np.arange(C, N) - first[step_of]
    role = _ROLE_BASE[st.code[step_of]] + in_step
    tbn = st.tbg[step_of]
    kind = _ROLE_KIND[role]
    chan = tbs.chan[tbn]
    none = np.full(len(tbn), -1)
    peer = np.choose(_ROLE_PEER[role], [none, tbs.send[tbn], tbs.recv[tbn]])
    # operand selector 0 unused, 1 the step's src, 2 its dst, 3 the tb's temporary
    bufs = [np.full(len(tbn), _NB), st.src_buf[step_of], st.dst_buf[step_of], np.full(len(tbn), _SCR)]
    offs = [none, st.src_off[step_of], st.dst_off[step_of], temp_of_tb[tbn]]
    src_sel, dst_sel = _ROLE_SRC[role], _ROLE_DST[role]
    nodes = _Nodes(
        kind=kind,
        op=_ROLE_OP[role],
        peer=peer,
        tag=np.where(kind == _COMP, 0, chan),
        count=st.cnt[step_of],
        src_buf=np.choose(src_sel, bufs),
        src_off=np.choose(src_sel, offs),
        dst_buf=np.choose(dst_sel, bufs),
        dst_off=np.choose(dst_sel, offs),
        tb=st.tb_of[step_of],
        chan=chan,
        step_of=step_of,
        in_step=in_step,
        role=role,
        first=first,
        last=first + nn - 1,
        copies=C,
    )
    if C:
        (g,) = gpus
        _prepend_copies(nodes, g, int(limits[0, 0]), int(limits[0, 1]), st.path)
    return nodes


def _prepend_copies(nodes: _Nodes, g: _Gpu, in_c: int, out_c: int, path: str) -> None:
    """The gpu's ``<copy i_off o_off>`` elements (out of place: input chunk -> output chunk) as
    one-chunk COMP copies ahead of every step node."""
    C = len(g.copies)
    cp = np.array([(c[0], c[1]) for c in g.copies], dtype=np.int64)
    i_off, o_off = cp[:, 0], cp[:, 1]
    bad = (i_off < 0) | (i_off >= in_c) | (o_off < 0) | (o_off >= out_c)
    if (k := first(bad)) is not None:
        raise ImportFormatError(
            f"gpu {g.id} <copy i_off={i_off[k]} o_off={o_off[k]}>: offset out of range (i: {in_c}, o: {out_c} chunks)",
            path=path,
            line=g.copies[k][2],
        )
    lead = {
        "kind": _COMP,
        "op": _COPY,
        "peer": -1,
        "tag": 0,
        "chan": 0,
        "src_buf": _IN,
        "dst_buf": _OUT,
        "count": 1,
        "tb": -1,
    }
    for col, value in lead.items():
        setattr(nodes, col, np.concatenate([np.full(C, value, dtype=np.int64), getattr(nodes, col)]))
    nodes.src_off = np.concatenate([i_off, nodes.src_off])
    nodes.dst_off = np.concatenate([o_off, nodes.dst_off])


def _dependencies(st: Steps, tbs: Tbs, nodes: _Nodes) -> tuple[np.ndarray, np.ndarray]:
    """All dependency edges as (node, dependency) arrays: within a step, program order in a tb,
    and across tbs."""
    C = nodes.copies
    nop = st.code == NOP
    real = np.flatnonzero(~nop)
    # inside a step: a chain
    inner = np.flatnonzero(nodes.in_step > 0) + C
    e_node: list[np.ndarray] = [inner]
    e_dep: list[np.ndarray] = [inner - 1]
    # program order: a step after the previous real step of its tb; a tb's first step after <copy>s
    if real.size:
        prev = np.concatenate([[-1], real[:-1]])
        same = np.zeros(real.size, bool)
        same[1:] = st.tbg[prev[1:]] == st.tbg[real[1:]]
        e_node.append(nodes.first[real[same]])
        e_dep.append(nodes.last[prev[same]])
        heads = real[~same]
        if C:
            e_node.append(np.repeat(nodes.first[heads], C))
            e_dep.append(np.tile(np.arange(C), heads.size))
    if (st.depid >= 0).any():
        holder, target = _cross_tb(st, tbs, nop, real)
        e_node.append(nodes.first[holder])
        e_dep.append(nodes.last[target])
    return np.concatenate(e_node), np.concatenate(e_dep)


def _cross_tb(st: Steps, tbs: Tbs, nop: np.ndarray, real: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each step's own cross-tb dependency, and those of the nop run just before it: the steps
    that wait (holders) and the steps they wait for (targets), checked."""
    S = len(st.code)
    depid, deps, has = st.depid, st.deps, st.depid >= 0
    ntb = tbs.ntb[st.gpu_of]  # tbs of each step's gpu (>= 1: the step is in one)
    if (i := first(has & (depid >= ntb))) is not None:
        raise st.error(i, f"depid={depid[i]} names no tb of this gpu (it has {ntb[i]})")
    dtb = tbs.base[st.gpu_of] + np.clip(depid, 0, ntb - 1)  # the named tb, in the batch
    if (i := first(has & ((deps < 0) | (deps >= tbs.length[dtb])))) is not None:
        raise st.error(i, f"deps={deps[i]} names no step of tb {depid[i]}")
    target = np.clip(tbs.start[dtb] + deps, 0, S - 1)
    if (i := first(has & nop[target])) is not None:
        raise st.error(
            i,
            f"depends on tb {depid[i]} step {deps[i]}, which is a nop",
            hint="a nop never publishes a completion flag; depend on a real step",
        )
    # Only steps with hasdep=1 publish a completion flag, and flags only grow, so a waiter on
    # a step without hasdep is released by the first later publishing step of that tb (the
    # runtime's real release point); with none, the GPU would wait forever.
    pub_idx = np.flatnonzero((st.hasdep != 0) & ~nop)
    unpub = has & (st.hasdep[target] == 0)
    if unpub.any():
        k = np.searchsorted(pub_idx, target)
        nxt = pub_idx[np.minimum(k, max(pub_idx.size - 1, 0))] if pub_idx.size else target
        ok = (k < pub_idx.size) & (st.tbg[nxt] == st.tbg[target]) if pub_idx.size else np.zeros(S, bool)
        if (i := first(unpub & ~ok)) is not None:
            raise st.error(
                i,
                f"depends on tb {depid[i]} step {deps[i]}, which has hasdep=0, and no later step of "
                f"tb {depid[i]} has hasdep=1: the runtime publishes no flag to release it (deadlock)",
                hint="set hasdep=1 on every step another threadblock depends on (msccl-ir.md §6)",
            )
        target = np.where(unpub, nxt, target)
    holder = np.arange(S)
    if nop.any():
        # each nop hands its dependency to the next real step of its tb (trailing ones are lost)
        idx = np.searchsorted(real, np.arange(S))
        nxt = real[np.minimum(idx, real.size - 1)] if real.size else np.zeros(S, np.int64)
        valid = (idx < real.size) & (st.tbg[nxt] == st.tbg)
        holder = np.where(nop, np.where(valid, nxt, -1), holder)
        has &= holder >= 0
    waiting = np.flatnonzero(has)
    return holder[waiting], target[waiting]


def _names(gpus: list[_Gpu], st: Steps, nodes: _Nodes) -> list[str]:
    """``copy/i0->o1`` and ``tb0/s3/rrcs.recv``: a name per node of the batch."""
    names = [f"copy/i{c[0]}->o{c[1]}" for g in gpus for c in g.copies]
    names += [
        f"tb{t}/s{s}/{_TYPE_OF_ROLE[r]}{_ROLE_NAME[r]}"
        for t, s, r in zip(
            nodes.tb[nodes.copies :].tolist(), st.s_of[nodes.step_of].tolist(), nodes.role.tolist(), strict=True
        )
    ]
    return names


def _assemble(
    gpus: list[_Gpu], st: Steps, nodes: _Nodes, en: np.ndarray, ed: np.ndarray, names: list[str] | None
) -> list[RankGraph]:
    """Each gpu's rank graph: its range of the batch's nodes (document order, gpu by gpu) and the
    edges of that range, as CSR."""
    C = nodes.copies
    count = np.bincount(st.gpu_of[nodes.step_of], minlength=len(gpus))
    count[0] += C
    lo = np.concatenate([[0], np.cumsum(count)]).tolist()  # gpu k's nodes: lo[k]..lo[k+1]
    order = np.lexsort((ed, en))  # by node, so each gpu's edges are a range too
    en, ed = en[order], ed[order].astype(np.int32)
    elo = np.searchsorted(en, lo).tolist()
    cols = {c: np.asarray(getattr(nodes, c), dtype=_DTYPES[c]) for c in _NODE_COLUMNS}
    # the step-major sort key of the nodes (copies first), needed only when an edge points forward
    key = None
    if en.size and np.any(ed >= en):
        key = np.concatenate([np.full(C, -1, dtype=np.int64), st.s_of[nodes.step_of]]), nodes.tb
    lines = None
    if names is not None:
        from hub.verify import SOURCE_LINE as LINE_ATTR  # only here: hub.verify is a large import

        lines = [c[2] for g in gpus for c in g.copies] + st.line[nodes.step_of].tolist()
    graphs = []
    for k, g in enumerate(gpus):
        a, b, ea, eb = lo[k], lo[k + 1], elo[k], elo[k + 1]
        local = {c: v[a:b] for c, v in cols.items()}
        extra: dict[int, tuple[tuple[str, Any], ...]] = {p: (("msccl.copy", 1),) for p in range(len(g.copies))}
        if lines is not None:
            # the XML line of each node's <copy>/<step>, with the names (same cost rationale), so a
            # verification problem can point at the line to fix (hub.verify's origins read it)
            extra = {p: (*extra.get(p, ()), (LINE_ATTR, lines[a + p])) for p in range(b - a)}
        graph_names = names[a:b] if names is not None else None
        part_key = None if key is None else (key[0][a:b], key[1][a:b])
        graphs.append(_graph(g, st.path, local, en[ea:eb] - a, ed[ea:eb] - np.int32(a), graph_names, extra, part_key))
    return graphs


def _graph(
    g: _Gpu,
    path: str,
    cols: dict[str, np.ndarray],
    en: np.ndarray,
    ed: np.ndarray,
    names: list[str] | None,
    extra: dict[int, tuple[tuple[str, Any], ...]],
    key: tuple[np.ndarray, np.ndarray] | None,
) -> RankGraph:
    """One gpu's graph from its columns and its edges (sorted by node), re-ordered when a
    dependency points forward in document order."""
    N = len(cols["kind"])
    if key is not None and en.size and np.any(ed >= en):
        # cross-tb dependencies point forward in document order; try step-major order (all
        # tbs' step 0, then step 1, ...), which fits most schedules, before a general sort
        s_of, tb = key
        perm = np.argsort(s_of * (len(g.tbs) + 1) + tb, kind="stable")
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
        en, ed = en[order], ed[order].astype(np.int32)
    dep_ptr = np.zeros(N + 1, dtype=np.int64)
    np.cumsum(np.bincount(en, minlength=N), out=dep_ptr[1:])
    return RankGraph.from_columns(N, dep_ptr=dep_ptr, dep_pos=ed, names=names, extra=extra, **cols)


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
            path=path,
            line=g.line,
            hint="such a file deadlocks on the GPU",
        )
    return np.asarray(out, dtype=np.int64)
