"""Node messages -> :class:`RankGraph` columns: the one decode path of algorithm files.

Every node goes through the compiled fast path (``hub._native._codec.decode_nodes``), which
reads ids, types, durations, packed ``data_deps`` and the profile's integer attributes into
columns. A node it does not fully understand (a foreign attribute, a non-integer value,
``ctrl_deps``, IOInfo, unpacked dependencies, a malformed field) comes back in its ``slow``
list and is decoded again by the general message decoder (:func:`._decode.decode_node`), which
handles every field of the schema and reports a malformed node precisely; foreign attributes go
to ``RankGraph.extra``. Both fill the same per-batch state, and one set of vectorized checks
(:func:`_finish`) turns it into graphs, so the two can only differ in speed
(tests/chakra/test_fast_paths.py decodes files both ways and compares).

Problems raise :class:`NodeError` with the rank and node id; :mod:`._reader` adds the file.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._native import _codec
from . import _profile as P
from ._decode import decode_node
from ._model import COLUMN_NAMES, NodeType, RankGraph
from ._validate import ATTR_RANGES, attr_hint
from ._wire import TypedValue, WireError

__all__ = ["KNOWN", "NodeError", "decode_ranks", "frame_files"]


class NodeError(Exception):
    """A problem with one node (``node`` = its Chakra id when known) of rank index ``rank``."""

    def __init__(self, message: str, node: int | None = None, hint: str | None = None, rank: int = 0) -> None:
        super().__init__(message)
        self.node = node
        self.hint = hint
        self.rank = rank


# -- the known attributes ------------------------------------------------------------------------
#: (attribute, column) of every node attribute the profile interprets, in the order the codec
#: numbers them: ASTRA-sim's four, then the semantic ones. ``_src``/``_dst`` become ``peer``.
KNOWN: tuple[tuple[str, str], ...] = (
    (P.ATTR_COMM_SIZE, "size"),
    (P.ATTR_COMM_SRC, "_src"),
    (P.ATTR_COMM_DST, "_dst"),
    (P.ATTR_COMM_TAG, "tag"),
    *((attr, column) for attr, column, _d in P.SEMANTIC_ATTRS),
)
_KNOWN_COLUMN = dict(KNOWN)
_DEFAULT: dict[str, int] = {"size": -1, "_src": -1, "_dst": -1, "tag": 0, "count": 0}
_DEFAULT.update({column: default for _a, column, default in P.SEMANTIC_ATTRS if column != "count"})
# the allowed range of each known attribute, row-aligned with KNOWN: checked on the int64
# values before the columns are narrowed (int32/int8), so no value wraps into a plausible one
_RANGE_LO = np.array([[ATTR_RANGES[name][1]] for name, _c in KNOWN], np.int64)
_RANGE_HI = np.array([[ATTR_RANGES[name][2]] for name, _c in KNOWN], np.int64)
_COL_INDEX = {column: k for k, (_name, column) in enumerate(KNOWN)}
# the codec is told the names, defaults, RankGraph columns and ranges once (defined here only);
# a comm_size on the wire is >= 0 (-1 is the model's "unset")
_codec.configure(
    tuple(name.encode() for name, _c in KNOWN),
    tuple(_DEFAULT[column] for _n, column in KNOWN),
    tuple(COLUMN_NAMES.index(column) if column in COLUMN_NAMES else -1 for _n, column in KNOWN),
    tuple(0 if column == "size" else int(_RANGE_LO[k, 0]) for k, (_n, column) in enumerate(KNOWN)),
    tuple(int(_RANGE_HI[k, 0]) for k in range(len(KNOWN))),
)


# -- framing -----------------------------------------------------------------------------------
def frame_files(
    data: bytes | bytearray, bases: np.ndarray, sizes: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Message spans of many delimited streams (files laid end to end in ``data``) at once:
    (starts, ends, counts per file, -1) or, when a file is malformed, (empty, empty, empty, its
    index); :func:`._wire.frame` then says precisely what is wrong with it."""
    starts, ends, counts, bad = _codec.frame_files(
        data, np.ascontiguousarray(bases, np.int64), np.ascontiguousarray(sizes, np.int64)
    )
    if bad >= 0 or starts is None or ends is None or counts is None:
        z = np.zeros(0, np.int64)
        return z, z, z, int(bad)
    return (np.frombuffer(starts, np.int64), np.frombuffer(ends, np.int64), np.frombuffer(counts, np.int64), -1)


class _State:
    """Per-node results of one batch, filled by the compiled pass and the general decoder."""

    def __init__(self, n: int, rank_of: np.ndarray, node_base: np.ndarray) -> None:
        self.n = n
        self.rank_of = rank_of
        self.node_base = node_base
        # filled for every node by the compiled pass (defaults included) or the general decoder
        self.ids = np.empty(n, np.uint64)
        self.kind = np.empty(n, np.int64)
        self.duration = np.empty(n, np.uint64)
        #: known attribute values, one row per entry of KNOWN, and whether each was present:
        #: (attribute, node) views of node-major arrays, which the compiled pass fills a node at a time
        self.colmat_nk = np.empty((n, len(KNOWN)), np.int64)
        self.seen_nk = np.empty((n, len(KNOWN)), bool)
        self.colmat = self.colmat_nk.T
        self.seen = self.seen_nk.T
        self.per_node = np.empty(n, np.int64)
        self.dep_ids = np.zeros(0, np.uint64)  # every node's dependency ids, in node order
        self.slow = np.zeros(0, np.int64)  # the nodes the general decoder took
        self.names: list[str] | None = None
        self.extra: dict[int, tuple[tuple[str, Any], ...]] = {}

    def fail(self, i: int, message: str, node: int | None = None, hint: str | None = None) -> NodeError:
        return NodeError(message, node=node, hint=hint, rank=int(self.rank_of[i]))

    def set_names(self, idx: Any, values: list[str]) -> None:
        if self.names is None:
            self.names = [""] * self.n
        for i, name in zip(np.atleast_1d(idx).tolist(), values, strict=True):
            self.names[i] = name


def decode_ranks(
    data: bytes | bytearray, starts: np.ndarray, ends: np.ndarray, counts: Sequence[int] | np.ndarray
) -> list[RankGraph]:
    """Decode node messages data[starts[i]:ends[i]]; ``counts[r]`` consecutive ones per rank."""
    n = starts.size
    counts_a = np.asarray(counts, np.int64)
    node_base = np.concatenate(([0], np.cumsum(counts_a)))
    st = _State(n, np.repeat(np.arange(counts_a.size), counts_a), node_base)
    name_pos = np.empty(n, np.int64)
    name_len = np.empty(n, np.int64)
    deps, slow, any_name = _fast_decode(
        data, np.ascontiguousarray(starts, np.int64), np.ascontiguousarray(ends, np.int64), st, name_pos, name_len
    )
    dep_ids = np.frombuffer(deps, np.uint64)
    slow_pos = np.frombuffer(slow, np.int64)
    if any_name:
        for i in np.flatnonzero(name_len).tolist():
            s0 = int(name_pos[i])
            try:
                st.set_names(i, [data[s0 : s0 + int(name_len[i])].decode("utf-8")])
            except UnicodeDecodeError:
                raise st.fail(
                    i, "node name is not valid UTF-8", node=int(st.ids[i]), hint="names are UTF-8 strings"
                ) from None
    st.slow = slow_pos
    if slow_pos.size:
        dep_ids = _general_decode(data, starts, ends, slow_pos, dep_ids, st)
    st.dep_ids = dep_ids
    return _finish(st, counts_a)


def _fast_decode(
    data: bytes | bytearray,
    starts: np.ndarray,
    ends: np.ndarray,
    st: _State,
    name_pos: np.ndarray,
    name_len: np.ndarray,
) -> tuple[Any, Any, bool]:
    """The compiled pass over every node: (dependency ids, slow node indices, any name seen)."""
    result: tuple[Any, Any, bool] = _codec.decode_nodes(
        data, starts, ends, st.ids, st.kind, st.duration, st.colmat_nk, st.seen_nk, st.per_node, name_pos, name_len
    )
    return result


def _general_decode(
    data: bytes | bytearray,
    starts: np.ndarray,
    ends: np.ndarray,
    slow_pos: np.ndarray,
    fast_deps: np.ndarray,
    st: _State,
) -> np.ndarray:
    """Decode the nodes ``slow_pos`` with the general decoder; return all dependency ids in node order."""
    slow_deps: list[list[int]] = []
    for i in slow_pos.tolist():
        try:
            nd = decode_node(data, int(starts[i]), int(ends[i]))
        except WireError as exc:
            raise _malformed(i, exc, int(starts[i]), st) from None
        st.ids[i], st.kind[i], st.duration[i] = nd["id"], nd["type"], nd["duration_micros"]
        if nd["name"]:
            st.set_names(i, [nd["name"]])
        elif st.names is not None:
            st.names[i] = ""
        deps = nd["data_deps"] + nd["ctrl_deps"]
        slow_deps.append(deps)
        st.per_node[i] = len(deps)
        try:
            _apply_general_attrs(nd, i, st)
        except NodeError as exc:
            exc.rank = int(st.rank_of[i])
            raise
    # merge the two dependency streams back into node order
    fast_counts = st.per_node.copy()
    fast_counts[slow_pos] = 0
    fast_node = np.repeat(np.arange(st.n), fast_counts)
    slow_node = np.repeat(slow_pos, [len(d) for d in slow_deps])
    order = np.argsort(np.concatenate((fast_node, slow_node)), kind="stable")
    flat = np.array([d for ds in slow_deps for d in ds], np.uint64)
    return np.concatenate((fast_deps, flat))[order]


def _malformed(i: int, exc: WireError, start: int, st: _State) -> NodeError:
    """A node the general decoder cannot parse: its index in its file and the byte in the node."""
    r = int(st.rank_of[i])
    k = i - int(st.node_base[r])
    return NodeError(
        f"malformed node message #{k}: {exc} (byte {exc.pos - start} of the node)",
        hint="the file is corrupt or truncated",
        rank=r,
    )


def _finish(st: _State, counts_a: np.ndarray) -> list[RankGraph]:
    """Check the decoded nodes and cut them into one RankGraph per rank."""
    n = st.n
    ids, kind, node_base = st.ids, st.kind, st.node_base
    fail = st.fail
    bad_type = (kind < 1) | (kind > 7)
    if bad_type.any():
        i = int(np.argmax(bad_type))
        raise fail(
            i,
            f"unknown node type {int(kind[i])}",
            node=int(ids[i]),
            hint="algorithm ETs hold COMM_SEND_NODE (5), COMM_RECV_NODE (6) and COMP_NODE (4)",
        )
    _check_ranges(st)
    send = kind == NodeType.SEND
    recv = kind == NodeType.RECV
    # (rows of node-major arrays: every column is copied out, narrowed or not, so that no graph
    # keeps the batch's whole attribute matrix alive)
    cols = {column: st.colmat[k] for k, (_name, column) in enumerate(KNOWN)}
    ci = _COL_INDEX["count"]
    cols["count"] = np.where(st.seen[ci], st.colmat[ci], (send | recv).astype(np.int64))
    for mask, column, attr, what in (
        (send, "_dst", P.ATTR_COMM_DST, "COMM_SEND_NODE"),
        (recv, "_src", P.ATTR_COMM_SRC, "COMM_RECV_NODE"),
    ):
        missing = mask & ~st.seen[_COL_INDEX[column]]
        if missing.any():
            i = int(np.argmax(missing))
            raise fail(
                i,
                f"{what} has no {attr} attribute",
                node=int(ids[i]),
                hint=f"every {what} needs {attr} (int32) naming the peer rank",
            )
    if n and (ids >= np.uint64(1 << 63)).any():
        i = int(np.argmax(ids >= np.uint64(1 << 63)))
        raise fail(i, "node id does not fit in int64", node=int(ids[i]), hint="Chakra node ids are < 2^63 here")
    peer = np.where(send, cols["_dst"], np.where(recv, cols["_src"], -1))
    ids64 = ids.view(np.int64)
    dur64 = np.where(st.duration > 0, st.duration.view(np.int64), -1)

    # the dependency ids of every node, in node order
    dep_base = np.concatenate(([0], np.cumsum(st.per_node)))
    dep_ids64 = st.dep_ids.view(np.int64)

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
                raise NodeError(
                    "duplicate node id",
                    node=int(sid[dup[0]]),
                    rank=r,
                    hint="node ids must be unique within a rank file (feeder_v3 indexes nodes by id)",
                )
            loc = np.minimum(np.searchsorted(sid, rid), max(b - a - 1, 0))
            missing = (sid[loc] != rid) if b > a else np.ones(rid.size, bool)
            pos = sid_order[loc] if b > a else loc
        if missing.any():
            j = int(np.argmax(missing))
            owner = a + int(np.searchsorted(dep_base[a + 1 : b + 1] - da, j, side="right"))
            raise NodeError(
                f"data dependency on node id {int(rid[j])}, which is not in this file",
                node=int(ids64[owner]),
                rank=r,
                hint="every id in data_deps/ctrl_deps must name a node of the same rank file",
            )
        graphs.append(
            RankGraph.from_columns(
                b - a,
                dep_ptr=dep_base[a : b + 1] - da,
                dep_pos=pos.astype(np.int32),
                names=st.names[a:b] if st.names is not None else None,
                extra={p - a: v for p, v in st.extra.items() if a <= p < b},
                ids=ids64[a:b],
                kind=kind[a:b],
                peer=peer[a:b],
                tag=cols["tag"][a:b],
                count=cols["count"][a:b],
                src_buf=cols["src_buf"][a:b],
                src_off=cols["src_off"][a:b],
                dst_buf=cols["dst_buf"][a:b],
                dst_off=cols["dst_off"][a:b],
                op=cols["op"][a:b],
                size=np.ascontiguousarray(cols["size"][a:b]),
                duration=dur64[a:b],
                tb=cols["tb"][a:b],
                chan=cols["chan"][a:b],
            )
        )
    return graphs


def _check_ranges(st: _State) -> None:
    """Every known attribute within its range. The compiled pass leaves any node with a value out
    of range to the general decoder, so only those nodes (``st.slow``) need checking here."""
    if st.slow.size == 0:
        return
    mat = st.colmat[:, st.slow]
    bad_rows = np.flatnonzero((mat.min(axis=1) < _RANGE_LO[:, 0]) | (mat.max(axis=1) > _RANGE_HI[:, 0]))
    size_k = _COL_INDEX["size"]
    neg_size = st.seen[size_k, st.slow] & (mat[size_k] < 0)  # -1 is "unset", never a value on the wire
    if neg_size.any():
        bad_rows = np.union1d(bad_rows, [size_k])
    if not bad_rows.size:
        return
    k = int(bad_rows[0])
    name = KNOWN[k][0]
    row = mat[k]
    bad = (row < _RANGE_LO[k, 0]) | (row > _RANGE_HI[k, 0])
    if k == size_k:
        bad |= neg_size
    j = int(np.argmax(bad))
    i = int(st.slow[j])
    raise st.fail(i, f"attribute {name} = {int(row[j])} is out of range", node=int(st.ids[i]), hint=attr_hint(name))


def _apply_general_attrs(nd: dict[str, Any], i: int, st: _State) -> None:
    """Fill node ``i``'s columns from generally decoded attributes; foreign ones go to extra."""
    for k, (_name, col) in enumerate(KNOWN):
        st.colmat[k, i] = _DEFAULT[col]
    st.seen[:, i] = False
    foreign: list[tuple[str, Any]] = []
    for name, tv in nd["attrs"]:
        if tv is None:
            continue  # an attribute with no value set carries nothing
        column = _KNOWN_COLUMN.get(name)
        if column is None or not _is_int(tv):
            if column is not None and tv.field in ("double_val", "float_val"):
                raise NodeError(
                    f"attribute {name} holds a floating-point value ({tv.field})",
                    node=nd["id"],
                    hint="feeder_v3 refuses float -> integer conversion; store it as int32/int64",
                )
            foreign.append((name, tv))
            continue
        k = _COL_INDEX[column]
        # a uint64 above 2^63 reads as the int64 of the same bits (as on the wire): out of range
        st.colmat[k, i] = (int(tv.value) + (1 << 63)) % (1 << 64) - (1 << 63)
        st.seen[k, i] = True
    if foreign:
        st.extra[i] = tuple(foreign)


def _is_int(tv: TypedValue) -> bool:
    return isinstance(tv.value, (int, bool)) and not tv.field.endswith("_list")
