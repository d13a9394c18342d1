"""Decode the Node messages of rank files into :class:`RankGraph` objects, column-wise.

The fast path handles many ranks in one pass with numpy. It walks the fields of all nodes at
once (one loop iteration per field *position*, not per node), decodes varints on shrinking
subsets, decodes attributes whose bytes have the usual layout (``0a <len> name <key> varint``)
by matching an 8+8-byte window of the name against a hash table of the profile's names, and
decodes packed dependency lists as one byte stream. A node the fast path does not fully
understand (a foreign attribute, a non-integer value, an unpacked dependency list, IOInfo) is
decoded again by the general codec in :mod:`._wire`, which handles every field of the schema;
its foreign attributes go to ``RankGraph.extra``.

Problems raise :class:`NodeError` with the rank and node id; :mod:`._reader` adds the file.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from . import _profile as P
from ._model import NodeType, RankGraph
from ._template import match_templates
from ._validate import ATTR_RANGES, attr_hint
from ._wire import TypedValue, WireError, decode_node, read_varints

__all__ = ["NodeError", "decode_ranks", "frame_many"]


class NodeError(Exception):
    """A problem with one node (``node`` = its Chakra id when known) of rank index ``rank``."""

    def __init__(self, message: str, node: int | None = None, hint: str | None = None, rank: int = 0) -> None:
        super().__init__(message)
        self.node = node
        self.hint = hint
        self.rank = rank


# -- attribute name table ------------------------------------------------------------------------
_KNOWN: tuple[tuple[str, str], ...] = (
    (P.ATTR_COMM_SIZE, "size"),
    (P.ATTR_COMM_SRC, "_src"),
    (P.ATTR_COMM_DST, "_dst"),
    (P.ATTR_COMM_TAG, "tag"),
    *((attr, column) for attr, column, _d in P.SEMANTIC_ATTRS),
)
_KNOWN_COLUMN = dict(_KNOWN)
# the allowed range of each known attribute, row-aligned with _KNOWN: checked on the int64
# values before the columns are narrowed (int32/int8), so no value wraps into a plausible one
_RANGE_LO = np.array([[ATTR_RANGES[name][1]] for name, _c in _KNOWN], np.int64)
_RANGE_HI = np.array([[ATTR_RANGES[name][2]] for name, _c in _KNOWN], np.int64)
_COL_INDEX = {column: k for k, (_name, column) in enumerate(_KNOWN)}
_KNOWN_BYTES = {name.encode(): k for k, (name, _c) in enumerate(_KNOWN)}
_HASH_BITS = 10
_M64 = (1 << 64) - 1


def _name_words(name: bytes) -> tuple[int, int]:
    padded = name.ljust(16, b"\0")
    return int.from_bytes(padded[:8], "little"), int.from_bytes(padded[8:16], "little")


def _hash(w0: Any, w1: Any, ln: Any) -> Any:
    """A multiplicative hash of a name's two words and length (numpy arrays or ints)."""
    if isinstance(w0, int):
        h = ((w0 ^ ((w1 * 0x9E3779B97F4A7C15) & _M64) ^ ln) * 0xFF51AFD7ED558CCD) & _M64
        return h >> (64 - _HASH_BITS)
    with np.errstate(over="ignore"):
        h = (w0 ^ (w1 * np.uint64(0x9E3779B97F4A7C15)) ^ ln.astype(np.uint64)) * np.uint64(0xFF51AFD7ED558CCD)
    return (h >> np.uint64(64 - _HASH_BITS)).astype(np.int64)


_TABLE = np.full(1 << _HASH_BITS, -1, np.int64)
_K_W0 = np.zeros(len(_KNOWN), np.uint64)
_K_W1 = np.zeros(len(_KNOWN), np.uint64)
_K_LEN = np.zeros(len(_KNOWN), np.int64)
for _k, (_name, _col) in enumerate(_KNOWN):
    _w0, _w1 = _name_words(_name.encode())
    _K_W0[_k], _K_W1[_k], _K_LEN[_k] = _w0, _w1, len(_name)
    _slot = _hash(_w0, _w1, len(_name))
    assert _TABLE[_slot] < 0, "hash collision among the profile's attribute names"
    _TABLE[_slot] = _k
# byte masks that keep the first L bytes of the two name words (index: name length 0..16)
_MASK0 = np.array([(1 << (8 * min(n, 8))) - 1 for n in range(17)], np.uint64)
_MASK1 = np.array([(1 << (8 * max(n - 8, 0))) - 1 for n in range(17)], np.uint64)
# one-byte attribute value keys (varint wire type) -> oneof field number, 0 = not handled here
_VALUE_KEY = np.zeros(256, np.int64)
for _f in (7, 9, 11, 13, 15, 17):
    _VALUE_KEY[_f << 3] = _f


def _words(buf: np.ndarray) -> np.ndarray:
    """An overlapping view: element p is the little-endian uint64 of buf[p:p+8]."""
    return np.ndarray(shape=(buf.size - 7,), dtype="<u8", buffer=buf, offset=0, strides=(1,))


def _int_value(field: np.ndarray, raw: np.ndarray) -> np.ndarray:
    """Interpret raw varints as the integer their oneof field holds (feeder_v3 converts any)."""
    out = raw.view(np.int64).copy()
    is32 = field == 7
    out[is32] = out[is32].astype(np.int32)
    u32 = field == 11
    out[u32] = (raw[u32] & np.uint64(0xFFFFFFFF)).view(np.int64)
    zz = (field == 15) | (field == 17)
    out[zz] = (raw[zz] >> np.uint64(1)).view(np.int64) ^ -((raw[zz] & np.uint64(1)).view(np.int64))
    return out


# -- framing -----------------------------------------------------------------------------------
def frame_many(buf: np.ndarray, file_start: np.ndarray,
               file_end: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Split many delimited streams (files laid end to end in ``buf``) into messages at once.

    One iteration advances every unfinished file by one message, so the loop runs as many times
    as the longest file has messages. Returns (starts, ends, counts per file, bad file mask).
    """
    nf = file_start.size
    cur = file_start.astype(np.int64).copy()
    counts = np.zeros(nf, np.int64)
    bad = np.zeros(nf, bool)
    recs: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    active = np.flatnonzero(cur < file_end)
    while active.size:
        p = cur[active]
        end = file_end[active]
        length, ll, ok = read_varints(buf, p, end)
        body = p + ll
        stop = body + length.astype(np.int64)
        ok &= (stop <= end) & (length < np.uint64(1 << 40)) & ((length > 0) | (counts[active] == 0))
        if not ok.all():
            bad[active[~ok]] = True
            active, body, stop = active[ok], body[ok], stop[ok]
        recs.append((active, body, stop))
        counts[active] += 1
        cur[active] = stop
        active = active[stop < file_end[active]]
    base = np.concatenate(([0], np.cumsum(counts)))
    starts = np.empty(int(base[-1]), np.int64)
    ends = np.empty(int(base[-1]), np.int64)
    seen = np.zeros(nf, np.int64)
    for act, body, stop in recs:
        idx = base[act] + seen[act]
        starts[idx] = body
        ends[idx] = stop
        seen[act] += 1
    return starts, ends, counts, bad


# -- node decoding -----------------------------------------------------------------------------
def _walk(buf: np.ndarray, s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    """Walk every field of the messages buf[s:e] at once.

    Returns (bad, (message index, field number, wire type, varint value or length, payload
    start)) with one entry per field; ``bad`` marks messages with a malformed field.
    """
    bad = np.zeros(s.size, bool)
    cur = s.copy()
    recs = []
    active = np.flatnonzero(cur < e)
    while active.size:
        p = cur[active]
        end = e[active]
        # the common step inside a node's attribute run: every message is at an attribute field
        # (key 0x52) shorter than 128 bytes, so key and length are one byte each
        k0 = buf[p]
        l0 = buf[p + 1]
        if (k0 == 0x52).all() and (l0 < 0x80).all():
            pay = p + 2
            nxt = pay + l0
            good = nxt <= end
            if not good.all():
                bad[active[~good]] = True
                active, pay, l0, nxt = active[good], pay[good], l0[good], nxt[good]
            recs.append((active, np.full(active.size, 10, np.int64), np.full(active.size, 2, np.int64),
                         l0.astype(np.uint64), pay))
            cur[active] = nxt
            active = active[nxt < e[active]]
            continue
        key, kl, ok = read_varints(buf, p, end)
        p2 = p + kl
        val, vl, ok2 = read_varints(buf, p2, end)
        wt = (key & np.uint64(7)).astype(np.int64)
        field = (key >> np.uint64(3)).astype(np.int64)
        pay = p2 + vl
        nxt = np.where(wt == 2, pay + val.astype(np.int64), pay)
        fixed = (wt == 1) | (wt == 5)
        if fixed.any():
            nxt = np.where(wt == 1, p2 + 8, np.where(wt == 5, p2 + 4, nxt))
        good = ok & (field > 0) & ((wt == 0) | (wt == 2) | fixed) & (nxt <= end) & (ok2 | fixed)
        good &= val < np.uint64(1 << 40)
        if not good.all():
            bad[active[~good]] = True
            active, field, wt, val, pay, nxt = (a[good] for a in (active, field, wt, val, pay, nxt))
        recs.append((active, field, wt, val, pay))
        cur[active] = nxt
        active = active[nxt < e[active]]
    if not recs:
        z = np.zeros(0, np.int64)
        return bad, (z, z, z, np.zeros(0, np.uint64), z)
    return bad, tuple(np.concatenate(x) for x in zip(*recs, strict=False))


def _packed(flat: np.ndarray, span_lens: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    """Decode concatenated packed-varint spans: (values, count per span, ok)."""
    if flat.size == 0:
        return np.zeros(0, np.uint64), np.zeros(span_lens.size, np.int64), True
    term = flat < 0x80
    span_end = np.cumsum(span_lens)
    nonempty = span_lens > 0
    if not term[span_end[nonempty] - 1].all():  # every span ends on a varint terminator
        return np.zeros(0, np.uint64), span_lens, False
    tpos = np.flatnonzero(term)
    gstart = np.concatenate(([0], tpos[:-1] + 1))
    glen = tpos - gstart + 1
    if glen.max() > 10:
        return np.zeros(0, np.uint64), span_lens, False
    if glen.max() == 1:
        vals = flat[tpos].astype(np.uint64)
    else:
        within = np.arange(flat.size) - np.repeat(gstart, glen)
        contrib = (flat & 0x7F).astype(np.uint64) << (7 * within).astype(np.uint64)
        vals = np.bitwise_or.reduceat(contrib, gstart)
    tcum = np.concatenate(([0], np.cumsum(term)))
    counts = tcum[span_end] - tcum[span_end - span_lens]
    return vals, counts, True


def _gather_spans(buf: np.ndarray, starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    total = int(lens.sum())
    if total == 0:
        return np.zeros(0, np.uint8)
    out_start = np.cumsum(lens) - lens
    return buf[np.repeat(starts - out_start, lens) + np.arange(total)]


class _State:
    """Per-node results of one batch, filled by the template path and the field walker."""

    def __init__(self, n: int, rank_of: np.ndarray, node_base: np.ndarray) -> None:
        self.n = n
        self.rank_of = rank_of
        self.node_base = node_base
        self.ids = np.zeros(n, np.uint64)
        self.kind = np.zeros(n, np.int64)
        self.duration = np.zeros(n, np.uint64)
        #: known attribute values, one row per entry of _KNOWN, and whether each was present
        self.colmat = np.empty((len(_KNOWN), n), np.int64)
        for k, (_name, column) in enumerate(_KNOWN):
            self.colmat[k] = _DEFAULT[column]
        self.seen = np.zeros((len(_KNOWN), n), bool)
        self.per_node = np.zeros(n, np.int64)
        self.dep_chunks: list[tuple[np.ndarray, np.ndarray | None, np.ndarray]] = []
        self.names: list[str] | None = None
        self.extra: dict[int, tuple[tuple[str, Any], ...]] = {}

    def fail(self, i: int, message: str, node: int | None = None, hint: str | None = None) -> NodeError:
        return NodeError(message, node=node, hint=hint, rank=int(self.rank_of[i]))

    def set_names(self, idx: Any, values: list[str]) -> None:
        if self.names is None:
            self.names = [""] * self.n
        for i, name in zip(np.atleast_1d(idx).tolist(), values, strict=False):
            self.names[i] = name


_DEFAULT: dict[str, int] = {"size": -1, "_src": -1, "_dst": -1, "tag": 0, "count": 0}
_DEFAULT.update({column: default for _a, column, default in P.SEMANTIC_ATTRS if column != "count"})


def decode_ranks(data: bytes, buf: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                 counts: Sequence[int] | np.ndarray) -> list[RankGraph]:
    """Decode node messages buf[starts[i]:ends[i]]; ``counts[r]`` consecutive ones per rank.

    ``data`` is the same bytes as ``buf``, which carries >= 32 bytes of zero padding.
    """
    n = starts.size
    counts_a = np.asarray(counts, np.int64)
    node_base = np.concatenate(([0], np.cumsum(counts_a)))
    st = _State(n, np.repeat(np.arange(counts_a.size), counts_a), node_base)

    matches, covered = match_templates(data, buf, starts, ends, _KNOWN_BYTES, _VALUE_KEY)
    for mt in matches:
        idx = mt.nodes
        st.ids[idx] = mt.ids
        st.kind[idx] = mt.template.kind
        st.duration[idx] = mt.duration
        for col, vfield, raw in mt.attrs:
            st.colmat[col, idx] = _int_value(np.full(raw.size, vfield), raw)
            st.seen[col, idx] = True
        st.per_node[idx] = mt.deps.shape[1]
        st.dep_chunks.append((idx, None, mt.deps))
        if mt.names is not None:
            st.set_names(idx, mt.names)
    rest = np.flatnonzero(~covered)
    if rest.size:
        _walk_decode(data, buf, starts[rest], ends[rest], rest, st)
    return _finish(st, counts_a)


def _walk_decode(data: bytes, buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, gidx: np.ndarray,
                 st: _State) -> None:
    """Decode the nodes buf[starts:ends] (global indices ``gidx``) by walking their fields."""
    n = starts.size
    bad, (node_i, field, wt, val, pay) = _walk(buf, starts, ends)
    if bad.any():
        raise _general_error(data, starts, ends, int(np.argmax(bad)), gidx, st)
    ids = np.zeros(n, np.uint64)
    kind = np.zeros(n, np.int64)
    duration = np.zeros(n, np.uint64)
    slow = np.zeros(n, bool)
    v0 = wt == 0
    for f, arr in ((1, ids), (3, kind), (7, duration)):
        m = field == f
        mv = m & v0
        arr[node_i[mv]] = val[mv]
        slow[node_i[m & ~v0]] = True
    # unpacked dependency lists and IOInfo are rare: the general decoder handles them
    slow[node_i[v0 & ((field == 4) | (field == 5))]] = True
    slow[node_i[(field == 8) | (field == 9)]] = True
    is_dep = (wt == 2) & ((field == 5) | (field == 4))
    dep_node, dep_start, dep_len, dep_field = node_i[is_dep], pay[is_dep], val[is_dep].astype(np.int64), field[is_dep]
    if (dep_field == 4).any() or (np.diff(dep_node) < 0).any():  # data deps before ctrl deps, per node
        order = np.lexsort((dep_field != 5, dep_node))
        dep_node, dep_start, dep_len = dep_node[order], dep_start[order], dep_len[order]
    name_m = (wt == 2) & (field == 2)
    attr_m = (wt == 2) & (field == 10)

    a_node = node_i[attr_m]
    if a_node.size:
        a_s = pay[attr_m]
        a_e = a_s + val[attr_m].astype(np.int64)
        words = _words(buf)
        nl = buf[a_s + 1].astype(np.int64)
        layout = (buf[a_s] == 0x0A) & (nl <= 16) & (a_s + 3 + nl <= a_e)
        nl_c = np.minimum(nl, 16)
        w0 = words[a_s + 2] & _MASK0[nl_c]
        w1 = words[a_s + 10] & _MASK1[nl_c]
        k = _TABLE[_hash(w0, w1, nl_c)]
        kc = np.maximum(k, 0)
        known = layout & (k >= 0) & (_K_W0[kc] == w0) & (_K_W1[kc] == w1) & (_K_LEN[kc] == nl)
        vfield = _VALUE_KEY[buf[a_s + 2 + nl_c]]
        vpos = a_s + 3 + nl_c
        raw, vlen, vok = read_varints(buf, vpos, a_e)
        fast = known & (vfield > 0) & vok & (vpos + vlen == a_e)
        slow[a_node[~fast]] = True
        values = _int_value(vfield[fast], raw[fast])
        # one scatter into the (known attribute, node) matrix fills every column at once
        g = gidx[a_node[fast]]
        st.colmat[k[fast], g] = values
        st.seen[k[fast], g] = True

    # dependencies (ids) of fast nodes from their packed spans
    keep = ~slow[dep_node]
    flat = _gather_spans(buf, dep_start[keep], dep_len[keep])
    dep_ids, dcounts, ok = _packed(flat, dep_len[keep])
    if not ok:
        raise _general_error(data, starts, ends, int(dep_node[keep][0]), gidx, st)
    per_node = np.bincount(dep_node[keep], weights=dcounts, minlength=n).astype(np.int64)

    if name_m.any():
        for i, s0, ln in zip(node_i[name_m].tolist(), pay[name_m].tolist(), val[name_m].tolist(), strict=False):
            try:
                st.set_names(gidx[i], [data[s0 : s0 + ln].decode("utf-8")])
            except UnicodeDecodeError:
                raise st.fail(int(gidx[i]), "node name is not valid UTF-8", node=int(ids[i]),
                              hint="names are UTF-8 strings") from None

    if slow.any():
        slow_pos = np.flatnonzero(slow)
        per_node[slow_pos] = 0
        slow_deps: list[list[int]] = []
        for i in slow_pos.tolist():
            gi = int(gidx[i])
            try:
                nd = decode_node(data, int(starts[i]), int(ends[i]))
            except WireError as exc:
                raise st.fail(gi, f"{exc} (byte {exc.pos - int(starts[i])} of the node)", node=int(ids[i]),
                              hint="the file is corrupt") from None
            ids[i], kind[i], duration[i] = nd["id"], nd["type"], nd["duration_micros"]
            if nd["name"]:
                st.set_names(gi, [nd["name"]])
            deps = nd["data_deps"] + nd["ctrl_deps"]
            slow_deps.append(deps)
            per_node[i] = len(deps)
            try:
                _apply_general_attrs(nd, gi, st)
            except NodeError as exc:
                exc.rank = int(st.rank_of[gi])
                raise
        # merge the two dependency streams back into node order
        fast_node = np.repeat(np.arange(n), np.where(slow, 0, per_node))
        slow_node = np.repeat(slow_pos, [len(d) for d in slow_deps])
        order = np.argsort(np.concatenate((fast_node, slow_node)), kind="stable")
        dep_ids = np.concatenate((dep_ids, np.array([d for ds in slow_deps for d in ds], np.uint64)))[order]
    st.ids[gidx] = ids
    st.kind[gidx] = kind
    st.duration[gidx] = duration
    st.per_node[gidx] = per_node
    st.dep_chunks.append((gidx, per_node, dep_ids))


def _finish(st: _State, counts_a: np.ndarray) -> list[RankGraph]:
    """Check the decoded nodes and cut them into one RankGraph per rank."""
    n = st.n
    ids, kind, node_base = st.ids, st.kind, st.node_base
    fail = st.fail
    bad_type = (kind < 1) | (kind > 7)
    if bad_type.any():
        i = int(np.argmax(bad_type))
        raise fail(i, f"unknown node type {int(kind[i])}", node=int(ids[i]),
                   hint="algorithm ETs hold COMM_SEND_NODE (5), COMM_RECV_NODE (6) and COMP_NODE (4)")
    _check_ranges(st)
    send = kind == NodeType.SEND
    recv = kind == NodeType.RECV
    cols = {column: st.colmat[k] for k, (_name, column) in enumerate(_KNOWN)}
    ci = _COL_INDEX["count"]
    cols["count"] = np.where(st.seen[ci], st.colmat[ci], (send | recv).astype(np.int64))
    for mask, column, attr, what in ((send, "_dst", P.ATTR_COMM_DST, "COMM_SEND_NODE"),
                                     (recv, "_src", P.ATTR_COMM_SRC, "COMM_RECV_NODE")):
        missing = mask & ~st.seen[_COL_INDEX[column]]
        if missing.any():
            i = int(np.argmax(missing))
            raise fail(i, f"{what} has no {attr} attribute", node=int(ids[i]),
                       hint=f"every {what} needs {attr} (int32) naming the peer rank")
    if n and (ids >= np.uint64(1 << 63)).any():
        i = int(np.argmax(ids >= np.uint64(1 << 63)))
        raise fail(i, "node id does not fit in int64", node=int(ids[i]), hint="Chakra node ids are < 2^63 here")
    peer = np.where(send, cols["_dst"], np.where(recv, cols["_src"], -1))
    ids64 = ids.view(np.int64)
    dur64 = np.where(st.duration > 0, st.duration.view(np.int64), -1)

    # the dependency ids of every node, in node order
    dep_base = np.concatenate(([0], np.cumsum(st.per_node)))
    dep_ids64 = np.empty(int(dep_base[-1]), np.int64)
    for idx, per_node, values in st.dep_chunks:
        if per_node is None:  # a template's (m, c) matrix
            if values.shape[1]:
                dep_ids64[dep_base[idx][:, None] + np.arange(values.shape[1])[None, :]] = values.view(np.int64)
        elif values.size:
            sub_base = np.cumsum(per_node) - per_node
            dep_ids64[np.repeat(dep_base[idx] - sub_base, per_node) + np.arange(values.size)] = values.view(np.int64)

    # ids -> positions, per rank; ids equal to positions is the common, vectorized case
    local = np.arange(n) - node_base[st.rank_of]
    dense = ids64 == local
    graphs = []
    for r in range(counts_a.size):
        a, b = int(node_base[r]), int(node_base[r + 1])
        da, db = int(dep_base[a]), int(dep_base[b])
        rid = dep_ids64[da:db]
        if dense[a:b].all():
            pos = rid
            missing = (rid < 0) | (rid >= b - a)
        else:
            sid_order = np.argsort(ids64[a:b], kind="stable")
            sid = ids64[a:b][sid_order]
            dup = np.flatnonzero(sid[1:] == sid[:-1])
            if dup.size:
                raise NodeError("duplicate node id", node=int(sid[dup[0]]), rank=r,
                                hint="node ids must be unique within a rank file (feeder_v3 indexes nodes by id)")
            loc = np.minimum(np.searchsorted(sid, rid), max(b - a - 1, 0))
            missing = (sid[loc] != rid) if b > a else np.ones(rid.size, bool)
            pos = sid_order[loc] if b > a else loc
        if missing.any():
            j = int(np.argmax(missing))
            owner = a + int(np.searchsorted(dep_base[a + 1 : b + 1] - da, j, side="right"))
            raise NodeError(f"data dependency on node id {int(rid[j])}, which is not in this file",
                            node=int(ids64[owner]), rank=r,
                            hint="every id in data_deps/ctrl_deps must name a node of the same rank file")
        graphs.append(RankGraph.from_columns(
            b - a, dep_ptr=dep_base[a : b + 1] - da, dep_pos=pos.astype(np.int32),
            names=st.names[a:b] if st.names is not None else None,
            extra={p - a: v for p, v in st.extra.items() if a <= p < b},
            ids=ids64[a:b], kind=kind[a:b], peer=peer[a:b], tag=cols["tag"][a:b], count=cols["count"][a:b],
            src_buf=cols["src_buf"][a:b], src_off=cols["src_off"][a:b], dst_buf=cols["dst_buf"][a:b],
            dst_off=cols["dst_off"][a:b], op=cols["op"][a:b], size=cols["size"][a:b], duration=dur64[a:b],
            tb=cols["tb"][a:b], chan=cols["chan"][a:b],
        ))
    return graphs


def _check_ranges(st: _State) -> None:
    """Every known attribute within its range (two reductions per attribute when all are fine)."""
    if st.n == 0:
        return
    mat = st.colmat
    bad_rows = np.flatnonzero((mat.min(axis=1) < _RANGE_LO[:, 0]) | (mat.max(axis=1) > _RANGE_HI[:, 0]))
    size_k = _COL_INDEX["size"]
    neg_size = st.seen[size_k] & (mat[size_k] < 0)  # -1 is "unset", never a value on the wire
    if neg_size.any():
        bad_rows = np.union1d(bad_rows, [size_k])
    if not bad_rows.size:
        return
    k = int(bad_rows[0])
    name = _KNOWN[k][0]
    row = mat[k]
    bad = (row < _RANGE_LO[k, 0]) | (row > _RANGE_HI[k, 0])
    if k == size_k:
        bad |= neg_size
    i = int(np.argmax(bad))
    raise st.fail(i, f"attribute {name} = {int(row[i])} is out of range", node=int(st.ids[i]), hint=attr_hint(name))


def _apply_general_attrs(nd: dict[str, Any], i: int, st: _State) -> None:
    """Fill node ``i``'s columns from generally decoded attributes; foreign ones go to extra."""
    for k, (_name, known) in enumerate(_KNOWN):
        st.colmat[k, i] = _DEFAULT[known]
    st.seen[:, i] = False
    foreign: list[tuple[str, Any]] = []
    for name, tv in nd["attrs"]:
        if tv is None:
            continue  # an attribute with no value set carries nothing
        column = _KNOWN_COLUMN.get(name)
        if column is None or not _is_int(tv):
            if column is not None and tv.field in ("double_val", "float_val"):
                raise NodeError(f"attribute {name} holds a floating-point value ({tv.field})", node=nd["id"],
                                hint="feeder_v3 refuses float -> integer conversion; store it as int32/int64")
            foreign.append((name, tv))
            continue
        k = _COL_INDEX[column]
        st.colmat[k, i] = int(tv.value)
        st.seen[k, i] = True
    if foreign:
        st.extra[i] = tuple(foreign)


def _is_int(tv: TypedValue) -> bool:
    return isinstance(tv.value, (int, bool)) and not tv.field.endswith("_list")


def _general_error(data: bytes, s: np.ndarray, e: np.ndarray, i: int, gidx: np.ndarray, st: _State) -> NodeError:
    """Re-decode node ``i`` with the general codec to report the precise problem."""
    gi = int(gidx[i])
    r = int(st.rank_of[gi])
    k = gi - int(st.node_base[r])
    try:
        nd = decode_node(data, int(s[i]), int(e[i]))
    except WireError as exc:
        return NodeError(f"malformed node message #{k}: {exc} (byte {exc.pos - int(s[i])} of the node)",
                         hint="the file is corrupt or truncated", rank=r)
    return NodeError(f"malformed node message #{k}", node=nd["id"], hint="the file is corrupt", rank=r)
