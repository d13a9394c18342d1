"""Node messages -> :class:`RankGraph` columns: the one decode path of algorithm files.

Every node goes through the compiled pass (``hub._native._codec.decode_batch``), which writes
ids, types, peers, durations and the profile's integer attributes straight into the final
columns of a batch of ranks (one block; each rank's graph is a slice of it) and packed
``data_deps`` into dependency ids, checking each node as it goes. A node it does not fully
understand or that fails a check (a foreign attribute, a non-integer value, ``ctrl_deps``,
IOInfo, unpacked dependencies, a malformed field, a bad type, a missing peer) comes back in its
``slow`` list; a rank with no such node, ids equal to positions and every dependency in range is
"clean" and needs no Python work per node. Any other rank goes through :func:`_general_rank`:
the general message decoder (:func:`._decode.decode_node`) takes the slow nodes, handling every
field of the schema and reporting the precise problem (foreign attributes go to
``RankGraph.extra``), and ids are mapped to positions. Both paths store the same values, so
they can only differ in speed (tests/chakra/test_fast_paths.py decodes files both ways).

Problems raise :class:`NodeError` with the rank and node id; :mod:`._reader` adds the file.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._native import _codec
from . import _profile as P
from ._decode import decode_node
from ._model import _COLUMNS, COLUMN_NAMES, NodeType, RankGraph
from ._validate import ATTR_RANGES, attr_hint
from ._wire import TypedValue, WireError

__all__ = ["KNOWN", "Arena", "NodeError", "Scratch", "decode_columns", "decode_ranks", "frame_files"]


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
    data: bytes | bytearray, bases: np.ndarray, sizes: np.ndarray, *, every: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Message spans of many delimited streams (files laid end to end in ``data``) at once:
    (starts, ends, counts per file, -1) or, when a file is malformed, (empty, empty, empty, its
    index); :func:`._wire.frame` then says precisely what is wrong with it. Without ``every``, the
    spans are only each file's first message (its GlobalMetadata)."""
    starts, ends, counts, bad = _codec.frame_files(
        data, np.ascontiguousarray(bases, np.int64), np.ascontiguousarray(sizes, np.int64), every
    )
    if bad >= 0 or starts is None or ends is None or counts is None:
        z = np.zeros(0, np.int64)
        return z, z, z, int(bad)
    return (np.frombuffer(starts, np.int64), np.frombuffer(ends, np.int64), np.frombuffer(counts, np.int64), -1)


#: the columns of a batch share one block, 8-byte columns first so that every view is aligned
_DTYPES: dict[str, np.dtype[Any]] = {name: np.dtype(dtype) for name, dtype, _d in _COLUMNS}
_BLOCK_ORDER = sorted(COLUMN_NAMES, key=lambda c: -_DTYPES[c].itemsize)
_NODE_BYTES = sum(dt.itemsize for dt in _DTYPES.values())


class Arena:
    """The memory of the graphs of one read, handed out from large blocks.

    A fresh allocation per batch costs a page fault every 4 KiB as it is first written, and the
    kernel zeroes every fresh page; blocks of several MiB are backed by huge pages where the kernel
    offers them (numpy advises it for large arrays), a few hundred times fewer faults. A block
    lives as long as a graph in it; a block whose graphs are all gone (a stream's consumer let
    them go) is written again instead of a fresh one, so a stream touches no new memory.
    """

    def __init__(self, block_bytes: int = 16 << 20) -> None:
        self._block_bytes = block_bytes
        self._block = np.empty(0, np.uint8)
        self._at = 0
        self._retired: list[np.ndarray] = []  # the last blocks handed out, perhaps free again

    def take(self, nbytes: int) -> np.ndarray:
        """``nbytes`` uninitialized bytes (uint8), 64-byte aligned within their block."""
        nbytes = (nbytes + 63) & ~63
        if self._at + nbytes > self._block.size:
            self._block = self._reusable(max(self._block_bytes, nbytes))
            self._at = 0
        out = self._block[self._at : self._at + nbytes]
        self._at += nbytes
        return out

    def _reusable(self, size: int) -> np.ndarray:
        """A retired block of ``size`` bytes that nothing else refers to (every view of a block, a
        graph's columns included, refers to it), else a new one."""
        if self._block.size:
            self._retired.append(self._block)
        self._block = np.empty(0, np.uint8)
        for k in range(len(self._retired)):
            # references: this list and getrefcount's argument (CPython counts them exactly);
            # any view of the block (a graph's column) would be one more
            if self._retired[k].size >= size and sys.getrefcount(self._retired[k]) <= 2:
                return self._retired.pop(k)
        del self._retired[:-2]  # keep only the newest: older ones are held by someone
        return np.empty(size, np.uint8)


class Scratch:
    """One buffer for the compiled pass's output, reused by every batch of a read: each rank's
    columns are then copied into the :class:`Arena` or shared with the previous rank's."""

    def __init__(self) -> None:
        self._buf = np.empty(0, np.uint8)

    def take(self, nbytes: int) -> np.ndarray:
        if self._buf.size < nbytes:
            self._buf = np.empty(max(nbytes, 2 * self._buf.size), np.uint8)
        return self._buf[:nbytes]


class _Batch:
    """One batch of rank files (laid end to end in ``data``) and the columns their nodes go to."""

    def __init__(
        self, data: bytes | bytearray, bases: np.ndarray, sizes: np.ndarray, counts: np.ndarray, scratch: Scratch
    ) -> None:
        n, ranks = int(counts.sum()), int(counts.size)
        self.data, self.bases, self.sizes, self.counts = data, bases, sizes, counts
        # one block for every column and the CSR indexes (dep_ptr: n_r + 1 entries per rank)
        block = scratch.take(n * _NODE_BYTES + (n + ranks) * 8)
        self.dep_ptr = block[: (n + ranks) * 8].view(np.int64)
        at = (n + ranks) * 8
        self.cols: dict[str, np.ndarray] = {}
        for name in _BLOCK_ORDER:
            size = n * _DTYPES[name].itemsize
            self.cols[name] = block[at : at + size].view(_DTYPES[name])
            at += size
        self.node_base = np.concatenate(([0], np.cumsum(counts)))


def decode_ranks(
    data: bytes | bytearray, bases: np.ndarray, sizes: np.ndarray, counts: Sequence[int] | np.ndarray
) -> list[RankGraph]:
    """Decode the nodes of the rank files data[bases[r]:bases[r] + sizes[r]] (framed: ``counts[r]``
    nodes each, after the GlobalMetadata, which is decoded apart)."""
    return decode_columns(data, bases, sizes, counts, Arena(0), Scratch())[0]


#: the bits of the compiled pass's "same as the previous rank" mask: one per column, then these
_SAME_DEP_PTR = 1 << len(COLUMN_NAMES)
_SAME_DEPS = 1 << (len(COLUMN_NAMES) + 1)


def decode_columns(
    data: bytes | bytearray,
    bases: np.ndarray,
    sizes: np.ndarray,
    counts: Sequence[int] | np.ndarray,
    arena: Arena,
    scratch: Scratch,
    prev: RankGraph | None = None,
) -> tuple[list[RankGraph], dict[str, np.ndarray]]:
    """:func:`decode_ranks` with the graphs' memory from ``arena``, and the batch's columns in
    ``scratch`` (valid until the next batch). A column of a rank that holds what the previous
    rank's holds (in a regular algorithm most do: ids, types, sizes, dependencies) is that same
    array, frozen, as producers share theirs; the others are copied out. ``prev`` is the rank
    before the batch's first (the last of the previous batch)."""
    b = _Batch(
        data,
        np.ascontiguousarray(bases, np.int64),
        np.ascontiguousarray(sizes, np.int64),
        np.ascontiguousarray(counts, np.int64),
        scratch,
    )
    deps_b, slow_b, names_b, clean_b, same_b = _fast_decode(b)
    deps = np.frombuffer(deps_b, np.uint64)
    slow = np.frombuffer(slow_b, np.int64).reshape(-1, 3)
    named = np.frombuffer(names_b, np.int64).reshape(-1, 3)
    clean = np.frombuffer(clean_b, np.uint8)
    same = np.frombuffer(same_b, np.uint32).tolist()
    ranks = b.counts.size
    base = b.node_base
    # each rank's dependency count is the last entry of its dep_ptr; their sums place it in deps
    dep_base = np.concatenate(([0], np.cumsum(b.dep_ptr[base[1:] + np.arange(ranks)])))
    slow_cut = np.searchsorted(slow[:, 0], base)
    name_cut = np.searchsorted(named[:, 0], base)
    graphs = []
    for r in range(ranks):
        a, e = int(base[r]), int(base[r + 1])
        da, db = int(dep_base[r]), int(dep_base[r + 1])
        ptr = b.dep_ptr[a + r : e + r + 1]
        names = _names(b, named[name_cut[r] : name_cut[r + 1]], a, e, r)
        if clean[r]:
            bits = same[r] if r else _same_as(prev, b, a, e, ptr, deps[da:db])
            g = _clean_rank(b, a, e, ptr, deps[da:db], bits if prev is not None else 0, prev, arena)
            g.names = names
            prev = g
        else:
            g = _general_rank(b, r, ptr, deps[da:db], slow[slow_cut[r] : slow_cut[r + 1]], names)
            prev = None
        graphs.append(g)
    return graphs, b.cols


def _clean_rank(
    b: _Batch,
    a: int,
    e: int,
    ptr: np.ndarray,
    deps: np.ndarray,
    same: int,
    prev: RankGraph | None,
    arena: Arena,
) -> RankGraph:
    """The graph of a clean rank (nodes a..e of the batch): each column shared with ``prev`` where
    ``same`` says it is equal, else copied into ``arena``; positions are the ids (clean)."""
    g = RankGraph.__new__(RankGraph)
    for c, name in enumerate(COLUMN_NAMES):
        setattr(g, name, _frozen(getattr(prev, name)) if same >> c & 1 else _copy(arena, b.cols[name][a:e]))
    g.dep_ptr = _frozen(prev.dep_ptr) if same & _SAME_DEP_PTR and prev is not None else _copy(arena, ptr)
    if same & _SAME_DEPS and prev is not None:
        g.dep_pos = _frozen(prev.dep_pos)
    else:
        g.dep_pos = arena.take(deps.size * 4).view(np.int32)[: deps.size]
        np.copyto(g.dep_pos, deps, casting="unsafe")
    g.extra = {}
    return g


def _same_as(prev: RankGraph | None, b: _Batch, a: int, e: int, ptr: np.ndarray, deps: np.ndarray) -> int:
    """The compiled pass's "same as the previous rank" mask for a batch's first rank (nodes a..e),
    whose previous rank is the last of the batch before."""
    if prev is None or len(prev) != e - a:
        return 0
    bits = 0
    for c, name in enumerate(COLUMN_NAMES):
        bits |= int(np.array_equal(getattr(prev, name), b.cols[name][a:e])) << c
    bits |= _SAME_DEP_PTR if np.array_equal(prev.dep_ptr, ptr) else 0
    return bits | (_SAME_DEPS if np.array_equal(prev.dep_pos, deps) else 0)


def _frozen(arr: np.ndarray) -> np.ndarray:
    """``arr``, read-only: it is shared by ranks (never a writable column shared)."""
    arr.flags.writeable = False
    return arr


def _copy(arena: Arena, src: np.ndarray) -> np.ndarray:
    out = arena.take(src.nbytes).view(src.dtype)[: src.size]
    out[...] = src
    return out


def _fast_decode(b: _Batch) -> tuple[bytearray, bytearray, bytearray, bytearray, bytearray]:
    """The compiled pass over every node: (dependency ids, slow (node, start, end), name spans,
    clean ranks, columns equal to the previous rank's)."""
    return _codec.decode_batch(
        b.data, b.bases, b.sizes, b.counts, tuple(b.cols[name] for name in COLUMN_NAMES), b.dep_ptr
    )


def _names(b: _Batch, named: np.ndarray, a: int, e: int, r: int) -> list[str] | None:
    """The node names of rank r (nodes a..e of the batch) the compiled pass found, or None."""
    if not named.size:
        return None
    names = [""] * (e - a)
    data = b.data
    for i, s0, ln in named.tolist():
        try:
            names[i - a] = data[s0 : s0 + ln].decode("utf-8")
        except UnicodeDecodeError:
            raise NodeError(
                "node name is not valid UTF-8", node=int(b.cols["ids"][i]), hint="names are UTF-8 strings", rank=r
            ) from None
    return names


# -- the general path: a rank the compiled pass did not fully take ------------------------------
def _general_rank(
    b: _Batch, r: int, ptr: np.ndarray, fast_deps: np.ndarray, slow: np.ndarray, names: list[str] | None
) -> RankGraph:
    """Rank r's graph when some node was slow (``slow``: its (node, start, end) triples), ids are
    not positions or a dependency is out of range: the slow nodes are decoded by the general
    decoder, then ids become positions."""
    a, e = int(b.node_base[r]), int(b.node_base[r + 1])
    n = e - a
    cols = {name: col[a:e] for name, col in b.cols.items()}
    per_node = np.diff(ptr)
    extra: dict[int, tuple[tuple[str, Any], ...]] = {}
    slow_deps: list[list[int]] = []
    for i, start, end in slow.tolist():
        try:
            nd = decode_node(b.data, start, end)
        except WireError as exc:
            raise _malformed(i - a, exc, start, r) from None
        try:
            foreign = _general_node(nd, i - a, cols)
        except NodeError as exc:
            exc.rank = r
            raise
        if foreign:
            extra[i - a] = foreign
        if nd["name"]:
            names = names if names is not None else [""] * n
            names[i - a] = nd["name"]
        slow_deps.append(nd["data_deps"] + nd["ctrl_deps"])
        per_node[i - a] = len(slow_deps[-1])
    dep_ids = fast_deps
    if slow.size:  # merge the two dependency streams back into node order
        fast_counts = np.diff(ptr)
        fast_node = np.repeat(np.arange(n), fast_counts)
        slow_node = np.repeat(slow[:, 0] - a, [len(d) for d in slow_deps])
        order = np.argsort(np.concatenate((fast_node, slow_node)), kind="stable")
        flat = np.array([d for ds in slow_deps for d in ds], np.uint64)
        dep_ids = np.concatenate((fast_deps, flat))[order]
    dep_ptr = np.concatenate(([0], np.cumsum(per_node)))
    dep_pos = _positions(cols["ids"], dep_ids.view(np.int64), dep_ptr, r)
    # (copies: the batch's columns are overwritten by the next batch)
    columns = {name: col.copy() for name, col in cols.items()}
    return RankGraph.from_columns(n, dep_ptr=dep_ptr, dep_pos=dep_pos, names=names, extra=extra, **columns)


def _positions(ids: np.ndarray, dep_ids: np.ndarray, dep_ptr: np.ndarray, r: int) -> np.ndarray:
    """Dependency ids -> positions in the rank (ids need not be positions); unique ids, no dangling."""
    n = ids.size
    if np.array_equal(ids, np.arange(n)):
        pos = dep_ids
        missing = (dep_ids < 0) | (dep_ids >= n)
    else:
        order = np.argsort(ids, kind="stable")
        sid = ids[order]
        dup = np.flatnonzero(sid[1:] == sid[:-1])
        if dup.size:
            raise NodeError(
                "duplicate node id",
                node=int(sid[dup[0]]),
                rank=r,
                hint="node ids must be unique within a rank file (feeder_v3 indexes nodes by id)",
            )
        loc = np.minimum(np.searchsorted(sid, dep_ids), max(n - 1, 0))
        missing = (sid[loc] != dep_ids) if n else np.ones(dep_ids.size, bool)
        pos = order[loc] if n else loc
    if missing.any():
        j = int(np.argmax(missing))
        owner = int(np.searchsorted(dep_ptr[1:], j, side="right"))
        raise NodeError(
            f"data dependency on node id {int(dep_ids[j])}, which is not in this file",
            node=int(ids[owner]),
            rank=r,
            hint="every id in data_deps/ctrl_deps must name a node of the same rank file",
        )
    return pos.astype(np.int32)


def _malformed(k: int, exc: WireError, start: int, r: int) -> NodeError:
    """A node the general decoder cannot parse: its index in its file and the byte in the node."""
    return NodeError(
        f"malformed node message #{k}: {exc} (byte {exc.pos - start} of the node)",
        hint="the file is corrupt or truncated",
        rank=r,
    )


def _general_node(nd: dict[str, Any], p: int, cols: dict[str, np.ndarray]) -> tuple[tuple[str, Any], ...]:
    """Check one generally decoded node and store it at position ``p`` of the rank's columns, as
    the compiled pass stores a fast one; return its foreign attributes."""
    values = dict(_DEFAULT)
    seen: set[str] = set()
    foreign: list[tuple[str, Any]] = []
    node = nd["id"]
    for name, tv in nd["attrs"]:
        if tv is None:
            continue  # an attribute with no value set carries nothing
        column = _KNOWN_COLUMN.get(name)
        if column is None or not _is_int(tv):
            if column is not None and tv.field in ("double_val", "float_val"):
                raise NodeError(
                    f"attribute {name} holds a floating-point value ({tv.field})",
                    node=node,
                    hint="feeder_v3 refuses float -> integer conversion; store it as int32/int64",
                )
            foreign.append((name, tv))
            continue
        # a uint64 above 2^63 reads as the int64 of the same bits (as on the wire): out of range
        values[column] = (int(tv.value) + (1 << 63)) % (1 << 64) - (1 << 63)
        seen.add(column)
    kind = nd["type"]
    if not 1 <= kind <= 7:
        raise NodeError(
            f"unknown node type {kind}",
            node=node,
            hint="algorithm ETs hold COMM_SEND_NODE (5), COMM_RECV_NODE (6) and COMP_NODE (4)",
        )
    for k, (name, column) in enumerate(KNOWN):
        lo = 0 if column == "size" and column in seen else int(_RANGE_LO[k, 0])
        if not lo <= values[column] <= int(_RANGE_HI[k, 0]):
            raise NodeError(f"attribute {name} = {values[column]} is out of range", node=node, hint=attr_hint(name))
    send, recv = kind == NodeType.SEND, kind == NodeType.RECV
    for is_kind, column, attr, what in (
        (send, "_dst", P.ATTR_COMM_DST, "COMM_SEND_NODE"),
        (recv, "_src", P.ATTR_COMM_SRC, "COMM_RECV_NODE"),
    ):
        if is_kind and column not in seen:
            raise NodeError(
                f"{what} has no {attr} attribute",
                node=node,
                hint=f"every {what} needs {attr} (int32) naming the peer rank",
            )
    if node >= 1 << 63:
        raise NodeError("node id does not fit in int64", node=node, hint="Chakra node ids are < 2^63 here")
    if "count" not in seen:
        values["count"] = int(send or recv)
    values["peer"] = values["_dst"] if send else values["_src"] if recv else -1
    values["ids"], values["kind"] = node, kind
    dur = nd["duration_micros"]  # as the compiled pass: 0 (unset) is -1, the uint64 read as int64
    values["duration"] = (dur + (1 << 63)) % (1 << 64) - (1 << 63) if dur > 0 else -1
    for name, col in cols.items():
        col[p] = values[name]
    return tuple(foreign)


def _is_int(tv: TypedValue) -> bool:
    return isinstance(tv.value, (int, bool)) and not tv.field.endswith("_list")
