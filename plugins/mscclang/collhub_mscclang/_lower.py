"""Vectorized lowering of one parsed ``<gpu>`` to a columnar rank graph.

Each step expands into a fixed list of nodes that depends only on its type (``_EXPAND``), so
the whole gpu is expanded with numpy ``repeat``/table look-ups instead of a Python loop per step.
Node order is document order (tb by tb, step by step); when a cross-tb dependency points at a
later node, the graph is re-ordered topologically (and a cycle is reported).
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

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
    _S: [_Role(_SEND, _NONE, 1, 1, 0, "")],
    _R: [_Role(_RECV, _COPY, 2, 0, 2, "")],
    _RCS: [_Role(_RECV, _COPY, 2, 0, 2, ".recv"), _Role(_SEND, _NONE, 1, 2, 0, ".send")],
    _RRC: [_Role(_RECV, _REDUCE, 2, 0, 2, ".recv"), _Role(_COMP, _NONE, 0, 0, 0, ".comp")],
    _RRCS: [
        _Role(_RECV, _REDUCE, 2, 0, 2, ".recv"),
        _Role(_COMP, _NONE, 0, 0, 0, ".comp"),
        _Role(_SEND, _NONE, 1, 2, 0, ".send"),
    ],
    # rrs stores nothing locally: receive into the tb's temporary, reduce src into it, forward it
    _RRS: [
        _Role(_RECV, _COPY, 2, 0, 3, ".recv"),
        _Role(_COMP, _REDUCE, 0, 1, 3, ".comp"),
        _Role(_SEND, _NONE, 1, 3, 0, ".send"),
    ],
    _CPY: [_Role(_COMP, _COPY, 0, 1, 2, "")],
    _RE: [_Role(_COMP, _REDUCE, 0, 1, 2, "")],
    _NOP: [],
    # dst := received (+) src with src != dst: a copy-receive, then a real local reduction
    _RRC_X: [_Role(_RECV, _COPY, 2, 0, 2, ".recv"), _Role(_COMP, _REDUCE, 0, 1, 2, ".comp")],
    _RRCS_X: [
        _Role(_RECV, _COPY, 2, 0, 2, ".recv"),
        _Role(_COMP, _REDUCE, 0, 1, 2, ".comp"),
        _Role(_SEND, _NONE, 1, 2, 0, ".send"),
    ],
}
_NT = 11
#: the type a step was written as, for messages (the two-node rrc/rrcs forms keep their name)
_CODE_NAME = (*TYPE_NAMES, "rrc", "rrcs")
# C-level look-ups for map(): unknown keys give -1 (step type) / 9 (buffer)
_TYPE_GET = defaultdict(lambda: -1, TYPE_CODE).__getitem__
_BUF_GET = defaultdict(lambda: 9, {"i": 0, "o": 1, "s": 2}).__getitem__
#: attributes of a <step>, in the order of the reader's rows (_reader._STEP_ATTRS)
_ATTR = ("s", "type", "srcbuf", "srcoff", "dstbuf", "dstoff", "cnt", "depid", "deps", "hasdep")


def _isint(v: str) -> bool:
    return INT_RE.fullmatch(v) is not None and INT_MIN <= int(v) <= INT_MAX


_NNODES = np.array([len(_EXPAND[t]) for t in range(_NT)], dtype=np.int64)
_ROLE_BASE = np.concatenate([[0], np.cumsum(_NNODES)[:-1]])
_ROLES = [r for t in range(_NT) for r in _EXPAND[t]]  # row _ROLE_BASE[type] + k: k-th node of type
_ROLE_KIND, _ROLE_OP, _ROLE_PEER, _ROLE_SRC, _ROLE_DST = (
    np.array([getattr(r, f) for r in _ROLES], dtype=np.int64) for f in ("kind", "op", "peer", "src", "dst")
)
_ROLE_NAME = [r.suffix for r in _ROLES]
_TYPE_OF_ROLE = [_CODE_NAME[t] for t in range(_NT) for _ in _EXPAND[t]]

_SEND_T = np.zeros(_NT, bool)
_SEND_T[[_S, _RCS, _RRCS, _RRS, _RRCS_X]] = True
_RECV_T = np.zeros(_NT, bool)
_RECV_T[[_R, _RCS, _RRC, _RRCS, _RRS, _RRC_X, _RRCS_X]] = True
_USES_SRC = np.zeros(_NT, bool)
_USES_SRC[[_S, _RRC, _RRCS, _RRS, _CPY, _RE, _RRC_X, _RRCS_X]] = True
_USES_DST = np.zeros(_NT, bool)
_USES_DST[[_R, _RCS, _RRC, _RRCS, _CPY, _RE, _RRC_X, _RRCS_X]] = True


def _first(mask: np.ndarray) -> int | None:
    """The first position where ``mask`` holds, or None."""
    return int(np.argmax(mask)) if mask.any() else None


def _letter(buf: int) -> str:
    return "ios"[buf] if buf < 3 else "?"


@dataclass(frozen=True)
class _Where:
    """Where each step of one ``<gpu>`` is, in document order (tb by tb): for messages."""

    gid: int
    path: str
    tb_of: np.ndarray  # the step's tb
    s_of: np.ndarray  # the step's position in its tb
    line: np.ndarray

    def at(self, i: int) -> str:
        return f"gpu {self.gid} tb {int(self.tb_of[i])} step {int(self.s_of[i])}"

    def ints(self, name: str, values: tuple[str, ...]) -> np.ndarray:
        """Attribute ``name`` of every step as 32-bit integers (atoi's grammar, not int()'s)."""
        n = len(values)
        try:
            joined = "".join(values)  # one C-level pass rules out what int() takes but atoi does not
            if "_" in joined or not joined.isascii():
                raise ValueError
            arr = np.fromiter(map(int, values), dtype=np.int64, count=n)
            if n and (int(arr.min()) < INT_MIN or int(arr.max()) > INT_MAX):
                raise ValueError
            return arr
        except (ValueError, OverflowError):
            i = next(i for i, v in enumerate(values) if not _isint(v))
            what = "is out of range (32-bit)" if INT_RE.fullmatch(values[i]) else "is not an integer"
            raise ImportFormatError(
                f"{self.at(i)}: attribute {name}={values[i]!r} of <step> {what}", path=self.path, line=int(self.line[i])
            ) from None


@dataclass
class _Steps:
    """The steps of one ``<gpu>`` as named columns."""

    where: _Where
    code: np.ndarray  # step type (TYPE_CODE; _RRC_X/_RRCS_X once the buffers are checked)
    src_buf: np.ndarray  # 0 i, 1 o, 2 s, 9 anything else
    src_off: np.ndarray
    dst_buf: np.ndarray
    dst_off: np.ndarray
    cnt: np.ndarray
    depid: np.ndarray
    deps: np.ndarray
    hasdep: np.ndarray

    @property
    def tb_of(self) -> np.ndarray:
        return self.where.tb_of

    def error(self, i: int, message: str, hint: str | None = None) -> ImportFormatError:
        """``message`` about step ``i``, prefixed with where it is and its type."""
        w = self.where
        return ImportFormatError(
            f"{w.at(i)} ({_CODE_NAME[int(self.code[i])]}): {message}", path=w.path, line=int(w.line[i]), hint=hint
        )


@dataclass
class _Tbs:
    """The ``<tb>`` elements of one gpu as columns."""

    start: np.ndarray  # first step
    length: np.ndarray  # steps
    send: np.ndarray  # peer, -1 none
    recv: np.ndarray
    chan: np.ndarray

    @classmethod
    def of(cls, g: _Gpu) -> _Tbs:
        def col(attr: str) -> np.ndarray:
            return np.array([getattr(t, attr) for t in g.tbs], dtype=np.int64)

        return cls(col("start"), col("n"), col("send"), col("recv"), col("chan"))


@dataclass
class _Nodes:
    """The nodes the steps expand into (``<copy>`` nodes first), as RankGraph columns."""

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
    step_of: np.ndarray  # the step each step node comes from (copies excluded)
    in_step: np.ndarray  # its position among the step's nodes
    role: np.ndarray  # its row of _ROLES
    first: np.ndarray  # first node of each step
    last: np.ndarray  # last node of each step
    copies: int  # how many <copy> nodes lead

    def columns(self) -> dict[str, np.ndarray]:
        return {c: getattr(self, c) for c in _NODE_COLUMNS}


_NODE_COLUMNS = ("kind", "op", "peer", "tag", "count", "src_buf", "src_off", "dst_buf", "dst_off", "tb", "chan")


def lower_gpu(rd: _Reader, g: _Gpu) -> tuple[RankGraph, int]:
    """Return the rank graph of ``g`` and the end of its scratch use (s_chunks + temporaries)."""
    tbs = _Tbs.of(g)
    st = _read_steps(str(rd.path), g, tbs)
    in_c = rd.in_chunks if rd.in_chunks >= 0 else g.i_chunks
    out_c = rd.out_chunks if rd.out_chunks >= 0 else g.o_chunks
    _check_steps(st, tbs, in_c, out_c, g.s_chunks)
    _register_connections(rd, g, st)
    temp_of_tb, temp_end = _temporaries(st, len(g.tbs), g.s_chunks)
    nodes = _expand(st, tbs, temp_of_tb, g, in_c, out_c)
    en, ed = _dependencies(st, tbs, nodes)
    names = _names(g, st, nodes) if rd.want_names else None
    return _assemble(g, st, nodes, en, ed, names), temp_end


def _read_steps(path: str, g: _Gpu, tbs: _Tbs) -> _Steps:
    """Parse the raw attribute strings of every step: integers, step types, buffers."""
    S = sum(t.n for t in g.tbs)
    tb_of = np.repeat(np.arange(len(g.tbs)), tbs.length)
    s_of = np.arange(S) - tbs.start[tb_of] if S else np.zeros(0, dtype=np.int64)
    w = _Where(g.id, path, tb_of, s_of, np.asarray(g.lines, dtype=np.int64))
    if g.cols is not None:  # the fast path (_scan) read the columns already
        ints = g.cols
        code, src_buf, dst_buf = g.words
        if (i := _first(ints["s"] != s_of)) is not None or (i := _first(code < 0)) is not None:
            raise ImportFormatError(f"{w.at(i)}: refused", path=path)  # the general path says why
    else:
        code, src_buf, dst_buf, ints = _parse_rows(path, g, w, s_of)
    return _Steps(
        w,
        code,
        src_buf,
        ints["srcoff"],
        dst_buf,
        ints["dstoff"],
        ints["cnt"],
        ints["depid"],
        ints["deps"],
        ints["hasdep"],
    )


def _parse_rows(path: str, g: _Gpu, w: _Where, s_of: np.ndarray) -> tuple[Any, Any, Any, dict[str, np.ndarray]]:
    """The general path's step rows (attribute strings) as columns, checked in document order."""
    S = len(s_of)
    raw = dict(zip(_ATTR, zip(*g.rows, strict=True), strict=True)) if S else dict.fromkeys(_ATTR, ())
    s_given = w.ints("s", raw["s"])
    if (i := _first(s_given != s_of)) is not None:
        raise ImportFormatError(
            f"gpu {g.id} tb {int(w.tb_of[i])}: step s={int(s_given[i])} but s={int(s_of[i])} "
            "expected (s counts the tb's steps in document order, nops included)",
            path=path,
            line=int(w.line[i]),
        )
    code = np.fromiter(map(_TYPE_GET, raw["type"]), dtype=np.int64, count=S)
    if (i := _first(code < 0)) is not None:
        t = raw["type"][i]
        if t == "ra":
            raise ImportFormatError(
                f"{w.at(i)}: step type 'ra' (residual add) is not supported",
                path=path,
                line=int(w.line[i]),
                hint="'ra' is parsed by the old microsoft/msccl runtime but never executed",
            )
        raise ImportFormatError(
            f"{w.at(i)}: unknown step type {t!r}",
            path=path,
            line=int(w.line[i]),
            hint="one of: " + ", ".join(TYPE_NAMES),
        )
    src_buf = np.fromiter(map(_BUF_GET, raw["srcbuf"]), dtype=np.int64, count=S)
    dst_buf = np.fromiter(map(_BUF_GET, raw["dstbuf"]), dtype=np.int64, count=S)
    # in the order the attributes are checked (the first bad one is reported)
    names = ("srcoff", "dstoff", "cnt", "depid", "deps", "hasdep")
    ints = {"s": s_given, **{name: w.ints(name, raw[name]) for name in names}}
    return code, src_buf, dst_buf, ints


def _check_steps(st: _Steps, tbs: _Tbs, in_c: int, out_c: int, s_chunks: int) -> None:
    """Refuse what MSCCL cannot run; rrc/rrcs with a distinct source take their two-node form."""
    code, cnt = st.code, st.cnt
    nop = code == _NOP
    if (i := _first(nop & (st.depid < 0))) is not None:
        raise st.error(
            i, "nop without a dependency", hint="a nop exists only to carry one extra dependency (msccl-ir.md §6)"
        )
    if (i := _first(~nop & (cnt < 1))) is not None:
        raise st.error(i, f"cnt={cnt[i]} must be >= 1")
    if (i := _first(_SEND_T[code] & (tbs.send[st.tb_of] < 0))) is not None:
        raise st.error(i, "send-type step in a tb with send=-1")
    if (i := _first(_RECV_T[code] & (tbs.recv[st.tb_of] < 0))) is not None:
        raise st.error(i, "receive-type step in a tb with recv=-1")
    limit = np.array([in_c, out_c, s_chunks, 0, 0, 0, 0, 0, 0, 0], dtype=np.int64)
    for uses, b, off, nm in ((_USES_SRC, st.src_buf, st.src_off, "src"), (_USES_DST, st.dst_buf, st.dst_off, "dst")):
        used = uses[code]
        if (i := _first(used & (b > 2))) is not None:
            raise st.error(i, f"{nm}buf={_letter(b[i])} is not i, o or s")
        if (i := _first(used & ((off < 0) | (off + cnt > limit[b])))) is not None:
            raise st.error(
                i,
                f"{nm}off={off[i]} cnt={cnt[i]} out of range for buffer '{_letter(b[i])}' "
                f"(i: {in_c}, o: {out_c}, s: {s_chunks} chunks)",
            )
    # rrc/rrcs with a distinct source get the two-node form; partial overlap has no clear meaning
    sb, so, db, do = st.src_buf, st.src_off, st.dst_buf, st.dst_off
    fused = (code == _RRC) | (code == _RRCS)
    differ = fused & ((sb != db) | (so != do))
    if (i := _first(differ & (sb == db) & (np.abs(so - do) < cnt))) is not None:
        raise st.error(i, "source and destination overlap partially")
    st.code = np.where(differ, np.where(code == _RRC, _RRC_X, _RRCS_X), code)


def _register_connections(rd: _Reader, g: _Gpu, st: _Steps) -> None:
    """Record each tb's send and receive connection (checked across gpus once all are read)."""
    gid = g.id
    for tid, tb in enumerate(g.tbs):
        lo, hi = tb.start, tb.start + tb.n
        c = st.code[lo:hi]
        for table, peer, store, key in (
            (_SEND_T, tb.send, rd.sends, (gid, tb.send, tb.chan)),
            (_RECV_T, tb.recv, rd.recvs, (tb.recv, gid, tb.chan)),
        ):
            m = table[c]
            if not m.any():
                continue
            if key in store:
                other = store[key][0].id
                what = f"send to gpu {peer}" if store is rd.sends else f"receive from gpu {peer}"
                raise ImportFormatError(
                    f"gpu {gid}: tb {other} and tb {tid} both {what} on channel {tb.chan}",
                    path=st.where.path,
                    line=tb.line,
                    hint="one tb per (peer, channel, direction): MSCCL opens one connection each",
                )
            store[key] = (tb, st.cnt[lo:hi][m].tolist(), st.where.line[lo:hi][m].tolist())
            (rd.has_send if store is rd.sends else rd.has_recv).add(gid)


def _temporaries(st: _Steps, ntb: int, s_chunks: int) -> tuple[np.ndarray, int]:
    """Scratch for rrs: one region per tb that has rrs steps, sized by its largest cnt, after the
    gpu's own scratch. Returns each tb's region offset (-1 none) and the end of scratch use."""
    is_rrs = st.code == _RRS
    if not is_rrs.any():
        return np.full(ntb, -1, dtype=np.int64), s_chunks
    tsize = np.zeros(ntb, dtype=np.int64)
    np.maximum.at(tsize, st.tb_of[is_rrs], st.cnt[is_rrs])
    offs = np.concatenate([[0], np.cumsum(tsize)[:-1]]) + s_chunks
    return np.where(tsize > 0, offs, -1), int(s_chunks + tsize.sum())


def _expand(st: _Steps, tbs: _Tbs, temp_of_tb: np.ndarray, g: _Gpu, in_c: int, out_c: int) -> _Nodes:
    """Every step's nodes (per its type's _EXPAND entry), after the gpu's <copy> nodes."""
    S, C = len(st.code), len(g.copies)
    nn = _NNODES[st.code]
    first = np.concatenate([[0], np.cumsum(nn)[:-1]]).astype(np.int64) + C if S else np.zeros(0, np.int64)
    N = int(nn.sum()) + C
    step_of = np.repeat(np.arange(S), nn)
    in_step = np.arange(C, N) - first[step_of]
    role = _ROLE_BASE[st.code[step_of]] + in_step
    tbn = st.tb_of[step_of]
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
        tb=tbn,
        chan=chan,
        step_of=step_of,
        in_step=in_step,
        role=role,
        first=first,
        last=first + nn - 1,
        copies=C,
    )
    if C:
        _prepend_copies(nodes, g, in_c, out_c, st.where.path)
    return nodes


def _prepend_copies(nodes: _Nodes, g: _Gpu, in_c: int, out_c: int, path: str) -> None:
    """The gpu's ``<copy i_off o_off>`` elements (out of place: input chunk -> output chunk) as
    one-chunk COMP copies ahead of every step node."""
    C = len(g.copies)
    cp = np.array([(c[0], c[1]) for c in g.copies], dtype=np.int64)
    i_off, o_off = cp[:, 0], cp[:, 1]
    bad = (i_off < 0) | (i_off >= in_c) | (o_off < 0) | (o_off >= out_c)
    if (k := _first(bad)) is not None:
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


def _dependencies(st: _Steps, tbs: _Tbs, nodes: _Nodes) -> tuple[np.ndarray, np.ndarray]:
    """All dependency edges as (node, dependency) arrays: within a step, program order in a tb,
    and across tbs."""
    C = nodes.copies
    nop = st.code == _NOP
    real = np.flatnonzero(~nop)
    # inside a step: a chain
    inner = np.flatnonzero(nodes.in_step > 0) + C
    e_node: list[np.ndarray] = [inner]
    e_dep: list[np.ndarray] = [inner - 1]
    # program order: a step after the previous real step of its tb; a tb's first step after <copy>s
    if real.size:
        prev = np.concatenate([[-1], real[:-1]])
        same = np.zeros(real.size, bool)
        same[1:] = st.tb_of[prev[1:]] == st.tb_of[real[1:]]
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


def _cross_tb(st: _Steps, tbs: _Tbs, nop: np.ndarray, real: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each step's own cross-tb dependency, and those of the nop run just before it: the steps
    that wait (holders) and the steps they wait for (targets), checked."""
    S, ntb = len(st.code), len(tbs.start)
    depid, deps, has = st.depid, st.deps, st.depid >= 0
    if (i := _first(has & (depid >= ntb))) is not None:
        raise st.error(i, f"depid={depid[i]} names no tb of this gpu (it has {ntb})")
    dclip = np.clip(depid, 0, max(ntb - 1, 0))
    if (i := _first(has & ((deps < 0) | (deps >= tbs.length[dclip])))) is not None:
        raise st.error(i, f"deps={deps[i]} names no step of tb {depid[i]}")
    target = np.clip(tbs.start[dclip] + deps, 0, S - 1)
    if (i := _first(has & nop[target])) is not None:
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
        ok = (k < pub_idx.size) & (st.tb_of[nxt] == st.tb_of[target]) if pub_idx.size else np.zeros(S, bool)
        if (i := _first(unpub & ~ok)) is not None:
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
        valid = (idx < real.size) & (st.tb_of[nxt] == st.tb_of)
        holder = np.where(nop, np.where(valid, nxt, -1), holder)
        has &= holder >= 0
    waiting = np.flatnonzero(has)
    return holder[waiting], target[waiting]


def _names(g: _Gpu, st: _Steps, nodes: _Nodes) -> list[str]:
    """``copy/i0->o1`` and ``tb0/s3/rrcs.recv``: a name per node."""
    names = [f"copy/i{c[0]}->o{c[1]}" for c in g.copies]
    names += [
        f"tb{t}/s{s}/{_TYPE_OF_ROLE[r]}{_ROLE_NAME[r]}"
        for t, s, r in zip(
            nodes.tb[nodes.copies :].tolist(), st.where.s_of[nodes.step_of].tolist(), nodes.role.tolist(), strict=True
        )
    ]
    return names


def _assemble(g: _Gpu, st: _Steps, nodes: _Nodes, en: np.ndarray, ed: np.ndarray, names: list[str] | None) -> RankGraph:
    """The rank graph, its nodes re-ordered when a dependency points forward in document order."""
    C, N = nodes.copies, len(nodes.kind)
    extra: dict[int, tuple[tuple[str, Any], ...]] = {p: (("msccl.copy", 1),) for p in range(C)}
    if names is not None:
        from hub.verify import SOURCE_LINE as LINE_ATTR  # only here: hub.verify is a large import

        # the XML line of each node's <copy>/<step>, with the names (same cost rationale), so a
        # verification problem can point at the line to fix (hub.verify's origins read it)
        extra = {p: (*v, (LINE_ATTR, c[2])) for (p, v), c in zip(extra.items(), g.copies, strict=True)}
        extra.update((C + i, ((LINE_ATTR, ln),)) for i, ln in enumerate(st.where.line[nodes.step_of].tolist()))
    cols = nodes.columns()
    if en.size and np.any(ed >= en):
        # cross-tb dependencies point forward in document order; try step-major order (all
        # tbs' step 0, then step 1, ...), which fits most schedules, before a general sort
        ntb = len(g.tbs)
        node_key = np.concatenate(
            [np.full(C, -1, dtype=np.int64), st.where.s_of[nodes.step_of] * (ntb + 1) + st.tb_of[nodes.step_of]]
        )
        perm = np.argsort(node_key, kind="stable")
        inv = np.empty(N, dtype=np.int64)
        inv[perm] = np.arange(N)
        if np.any(inv[ed] >= inv[en]):
            perm = _topo_order(g, N, en, ed, names, st.where.path)
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
    return RankGraph.from_columns(N, dep_ptr=dep_ptr, dep_pos=ed.astype(np.int32), names=names, extra=extra, **cols)


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
