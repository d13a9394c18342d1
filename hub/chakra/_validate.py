"""Value checks of an algorithm: what every consumer relies on, run on read and by consumers.

The verifier proves an algorithm right; these checks only make sure that the numbers are
*plausible* so that nothing downstream allocates by a lie or prints garbage: chunk counts and
buffer sizes within limits, peers that are ranks, no negative or overflowing byte counts, no
message larger than the declared collective size allows, no zero-byte message in a bound
algorithm, op/buffer/threadblock values the profile defines. They are vectorized (a few numpy
passes per rank), so the reader runs them on every file set and consumers (``hub.simulate``,
``mscclang.export``, ``astrasim.bundle``) run them on algorithms that were never verified.

Limits (overridable through the environment, documented in docs/security.md):

``COLLHUB_MAX_RANK_CHUNK_SLOTS``
    in_chunks + out_chunks + scratch_chunks of one rank at most (default 2^26): what one rank's
    declaration may cost (a rank's flat memory in the verifier, a replayed rank's buffers).
``COLLHUB_MAX_CHUNK_SLOTS``
    ranks x (in_chunks + out_chunks + scratch_chunks) at most, only where it is set (no default):
    nothing keeps an entry per declared slot of every rank any more. A node names its chunks as a
    range (offset, count); the race check splits each rank's memory into the ranges its nodes
    delimit (:mod:`hub.verify._accesses`), and the data walk sizes its symbolic memories before
    building them (:func:`hub.verify._fast.data_too_large`, an honest "not checked" beyond), so a
    16,384-rank halving-doubling all-reduce (16,384 x 32,768 declared slots) costs what its
    nodes use.
``COLLHUB_MAX_INFLATED_BYTES``
    decompressed bytes of the gzip files of one set (default 1 GiB).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from .._units import MAX_BYTES
from ..errors import TraceFormatError
from ._model import Algorithm, AlgorithmMeta, NodeType, RankGraph, chunk_bytes

__all__ = [
    "ATTR_RANGES",
    "INT32_MAX",
    "batch_total",
    "check_algorithm",
    "check_meta",
    "check_rank",
    "limit",
    "meta_problem",
]

INT32_MAX = (1 << 31) - 1
INT64_MAX = (1 << 63) - 1

#: Node attribute -> (model column, lowest, highest value allowed). The lowest value of the
#: optional ones is their "unset" default (-1); the reader also checks that the range fits the
#: column's dtype before narrowing, so that no value wraps around.
ATTR_RANGES: dict[str, tuple[str, int, int]] = {
    "comm_size": ("size", -1, MAX_BYTES),
    "comm_src": ("_src", -(1 << 31), INT32_MAX),
    "comm_dst": ("_dst", -(1 << 31), INT32_MAX),
    "comm_tag": ("tag", -(1 << 31), INT32_MAX),
    "cnt": ("count", 0, INT32_MAX),
    "sbuf": ("src_buf", -1, 2),
    "soff": ("src_off", -1, INT32_MAX),
    "dbuf": ("dst_buf", -1, 2),
    "doff": ("dst_off", -1, INT32_MAX),
    "op": ("op", 0, 2),
    "tb": ("tb", -1, INT32_MAX),
    "chan": ("chan", 0, INT32_MAX),
}
_MEANING = {
    "cnt": "a chunk count >= 0",
    "sbuf": "-1 (none), 0 input, 1 output or 2 scratch",
    "dbuf": "-1 (none), 0 input, 1 output or 2 scratch",
    "soff": "a chunk offset >= 0 (or -1, unset)",
    "doff": "a chunk offset >= 0 (or -1, unset)",
    "op": "0 none, 1 copy or 2 reduce",
    "tb": "a threadblock >= 0 (or -1, unset)",
    "chan": "a channel >= 0",
    "comm_size": f"a byte count, 0..{MAX_BYTES} (1 TiB: no accelerator holds a larger buffer)",
}

_DEFAULT_LIMITS: dict[str, int | None] = {
    "COLLHUB_MAX_RANK_CHUNK_SLOTS": 1 << 26,
    "COLLHUB_MAX_CHUNK_SLOTS": None,
    "COLLHUB_MAX_INFLATED_BYTES": 1 << 30,
}


def optional_limit(name: str) -> int | None:
    """The limit ``name`` (one of the environment variables above): its value, else the default
    (None: no limit)."""
    raw = os.environ.get(name, "").strip()
    if raw:
        try:
            value = int(raw.replace("_", ""))
            if value > 0:
                return value
        except ValueError:
            pass
    return _DEFAULT_LIMITS[name]


def limit(name: str) -> int:
    """The limit ``name``, one that always has a default."""
    value = optional_limit(name)
    assert value is not None, f"{name} has no default"
    return value


def attr_hint(attr: str) -> str:
    return f"{attr} must be {_MEANING[attr]}" if attr in _MEANING else "see docs/spec/collective-profile.md"


def meta_problem(meta: AlgorithmMeta) -> tuple[str, str] | None:
    """The first implausible GlobalMetadata value as (message naming the attribute, hint), or None."""
    for attr in ("in_chunks", "out_chunks", "scratch_chunks"):
        v = getattr(meta, attr)
        if not 0 <= v <= INT32_MAX:
            return f"attribute {attr} = {v} is out of range", f"{attr} is a chunk count, 0..{INT32_MAX}"
    if meta.ranks < 1:
        return f"attribute ranks = {meta.ranks} is out of range", "an algorithm has at least one rank"
    per_rank = meta.in_chunks + meta.out_chunks + meta.scratch_chunks
    rank_cap = limit("COLLHUB_MAX_RANK_CHUNK_SLOTS")
    if per_rank > rank_cap:
        return (
            f"buffers of in_chunks {meta.in_chunks} + out_chunks {meta.out_chunks} + scratch_chunks "
            f"{meta.scratch_chunks} = {per_rank} chunk slots per rank exceed the limit of {rank_cap}",
            "the counts are implausible; if they are real, raise COLLHUB_MAX_RANK_CHUNK_SLOTS (docs/security.md)",
        )
    slots = meta.ranks * per_rank
    cap = optional_limit("COLLHUB_MAX_CHUNK_SLOTS")
    if cap is not None and slots > cap:
        return (
            f"buffers of {meta.ranks} ranks x (in_chunks {meta.in_chunks} + out_chunks {meta.out_chunks} + "
            f"scratch_chunks {meta.scratch_chunks}) = {slots} chunk slots exceed the limit of {cap}",
            "the counts are implausible; if they are real, raise or unset COLLHUB_MAX_CHUNK_SLOTS (docs/security.md)",
        )
    if not 0 <= meta.root < meta.ranks:
        return (
            f"attribute root = {meta.root} is not a rank of 0..{meta.ranks - 1}",
            "root names the rank that holds or receives the data",
        )
    if meta.size is not None and not 0 <= meta.size <= MAX_BYTES:
        return (
            f"attribute size = {meta.size} is out of range",
            f"size is the collective size in bytes, 0..{MAX_BYTES} (1 TiB)",
        )
    return None


def _node_problem(
    meta: AlgorithmMeta, g: RankGraph, rank: int, ranges: bool = True, memo: _Memo | None = None
) -> tuple[str, int, str] | None:
    """(message, node id, hint) of the first implausible node of ``rank``, or None; ``ranges``
    False skips what the decoder already checked on the wire values (ATTR_RANGES, node kinds,
    dependency positions). With ``memo`` (one algorithm's check), a check of arrays that an
    earlier rank passed with is not run again (same answer: it depends on those arrays alone)."""
    n = meta.ranks
    kind = g.kind
    if len(g) == 0:
        return None
    if ranges:
        columns = (kind, g.dep_ptr, g.dep_pos, *(getattr(g, column) for column in _RANGED))
        if memo is None or not memo.passed("columns", len(g), columns):
            found = _column_problem(g)
            if found is not None:
                return found
            if memo is not None:
                memo.record("columns", len(g), columns)
    send, comm = _comm(kind) if memo is None else memo.comm(kind)
    peer = g.peer.astype(np.int64, copy=False)
    bad = comm & ((peer.view(np.uint64) >= n) | (peer == rank))  # negative peers are huge unsigned
    if bad.any():
        p = int(np.argmax(bad))
        attr = "comm_dst" if send[p] else "comm_src"
        return (
            f"attribute {attr} = {int(peer[p])} is not another rank of 0..{n - 1}",
            int(g.ids[p]),
            "a message goes to or comes from another rank of the set",
        )
    sized = (kind, g.size, g.count)
    if memo is not None and memo.passed("sizes", len(g), sized):
        return None
    found = _size_problem(meta, g, comm)
    if found is None and memo is not None:
        memo.record("sizes", len(g), sized)
    return found


def _size_problem(meta: AlgorithmMeta, g: RankGraph, comm: np.ndarray) -> tuple[str, int, str] | None:
    """The part of :func:`_node_problem` that depends on the kinds, sizes and counts (and meta) alone."""
    size = g.size
    sized = comm & (size >= 0)
    if sized.any():
        zero = sized & (size == 0) & (g.count != 0)
        if meta.size and zero.any():  # a zero-byte message of a collective of size > 0
            p = int(np.argmax(zero))
            return (
                f"attribute comm_size = 0, but the algorithm is bound to {meta.size} bytes",
                int(g.ids[p]),
                "a bound message carries count x chunk bytes (> 0); rebind the algorithm to a size",
            )
        if meta.size is not None:
            per_chunk = max(chunk_bytes(int(meta.size), meta.reference_chunks), 1)
            chunked = meta.in_chunks > 0 or meta.out_chunks > 0
            # a message carries at most max(count, 1) chunks (one chunk: the whole size, unchunked)
            over = comm & (size > (np.maximum(g.count, 1).astype(np.int64) * per_chunk if chunked else per_chunk))
            if over.any():
                p = int(np.argmax(over))
                chunks = np.maximum(g.count.astype(np.int64), 1) if chunked else np.ones(len(g), np.int64)
                allowed = chunks * per_chunk
                return (
                    f"attribute comm_size = {int(size[p])} is larger than the declared size of {meta.size} "
                    f"bytes allows ({int(allowed[p])} for {int(chunks[p])} chunk(s))",
                    int(g.ids[p]),
                    "the message sizes do not match the GlobalMetadata size; rebind or fix the size",
                )
    return None


#: the model columns of ATTR_RANGES that _column_problem checks (comm_src/comm_dst are ``peer``,
#: checked per rank)
_RANGED = tuple(column for column, _, _ in ATTR_RANGES.values() if not column.startswith("_"))


def _comm(kind: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(SEND, SEND or RECV) masks of a kind column."""
    send = kind == NodeType.SEND
    return send, send | (kind == NodeType.RECV)


class _Memo:
    """What one :func:`check_algorithm` call found of the arrays its ranks share.

    A regular algorithm's ranks share their kind, size, count and dependency arrays (producers
    build them once; the reader hands out one array for equal columns), so the checks that depend
    on those arrays alone run once per distinct set instead of once per rank (a 256-rank ring:
    once, not 256 times; the peers are still checked rank by rank). Keys are the arrays'
    identities, and the arrays are held so that no identity is reused during the call. Only passes
    are recorded: a failing rank is checked, and reported, exactly as without the memo.
    """

    __slots__ = ("_bytes", "_held", "_masks", "_passed")

    def __init__(self) -> None:
        self._passed: set[tuple[object, ...]] = set()
        self._masks: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._bytes: dict[tuple[int, int, int], float] = {}
        self._held: list[tuple[np.ndarray, ...]] = []

    def passed(self, what: str, n: int, arrays: tuple[np.ndarray, ...]) -> bool:
        return (what, n, *map(id, arrays)) in self._passed

    def record(self, what: str, n: int, arrays: tuple[np.ndarray, ...]) -> None:
        self._held.append(arrays)
        self._passed.add((what, n, *map(id, arrays)))

    def comm(self, kind: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        hit = self._masks.get(id(kind))
        if hit is None:
            hit = self._masks[id(kind)] = (kind, *_comm(kind))
        return hit[1], hit[2]

    def bytes_of(self, g: RankGraph) -> float:
        key = (len(g), id(g.kind), id(g.size))
        value = self._bytes.get(key)
        if value is None:
            value = self._bytes[key] = _bytes_of(g)
            self._held.append((g.kind, g.size))
        return value


def batch_total(
    meta: AlgorithmMeta, cols: dict[str, np.ndarray], counts: np.ndarray, r0: int, total: float
) -> float | None:
    """What :func:`check_rank` (``ranges=False``) finds for ranks r0.. at once, from their columns
    laid end to end (``counts[r]`` nodes each): the new byte total when every rank passes, else
    None (then :func:`check_rank`, rank by rank, says precisely what is wrong). One pass per
    column for a whole batch of ranks instead of a few per rank."""
    kind, size, count = cols["kind"], cols["size"], cols["count"]
    if kind.size == 0:
        return total
    n = meta.ranks
    comm = (kind == NodeType.SEND) | (kind == NodeType.RECV)
    peer = cols["peer"].astype(np.int64)
    rank_of = np.repeat(np.arange(r0, r0 + counts.size, dtype=np.int64), counts)
    if (comm & ((peer.view(np.uint64) >= n) | (peer == rank_of))).any():
        return None
    sized = comm & (size >= 0)
    if meta.size and (sized & (size == 0) & (count != 0)).any():
        return None
    if meta.size is not None:
        per_chunk = max(chunk_bytes(int(meta.size), meta.reference_chunks), 1)
        chunked = meta.in_chunks > 0 or meta.out_chunks > 0
        limit = np.maximum(count, 1).astype(np.int64) * per_chunk if chunked else per_chunk
        if (comm & (size > limit)).any():
            return None
    sent = np.where(comm & (size > 0), size, 0).astype(np.float64)
    new = total + float(np.sum(sent))
    # near int64's limit the exact rank-by-rank sum decides where it is crossed
    return new if new < 0.99 * float(INT64_MAX) else None


def _column_problem(g: RankGraph) -> tuple[str, int, str] | None:
    """The first node kind, dependency index or attribute column outside its range."""
    kind = g.kind
    bad = (kind < NodeType.METADATA) | (kind > NodeType.COLL)
    if bad.any():
        p = int(np.argmax(bad))
        return f"node type {int(kind[p])} is not a Chakra NodeType", int(g.ids[p]), "node types are 1..7"
    ptr, pos = g.dep_ptr, g.dep_pos
    if ptr.shape != (len(g) + 1,) or ptr[0] != 0 or ptr[-1] != pos.size or bool((np.diff(ptr) < 0).any()):
        return "the dependency index (dep_ptr) is malformed", int(g.ids[0]), "dep_ptr is a CSR index of the nodes"
    if pos.size and (int(pos.min()) < 0 or int(pos.max()) >= len(g)):
        owner = int(np.searchsorted(ptr, int(np.argmax((pos < 0) | (pos >= len(g)))), side="right")) - 1
        return "a dependency names no node of this rank", int(g.ids[owner]), "dependencies name nodes of the same rank"
    for attr, (column, lo, hi) in ATTR_RANGES.items():
        if column.startswith("_"):
            continue
        values = getattr(g, column)
        bad = (values < lo) | (values > hi)
        if bad.any():
            p = int(np.argmax(bad))
            return f"attribute {attr} = {int(values[p])} is out of range", int(g.ids[p]), attr_hint(attr)
    return None


def _bytes_of(g: RankGraph) -> float:
    """The bytes a rank's messages carry, as a float (exact enough to see int64 overflow)."""
    comm = (g.kind == NodeType.SEND) | (g.kind == NodeType.RECV)
    return float(np.sum(g.size[comm & (g.size > 0)], dtype=np.float64))


def check_algorithm(
    alg: Algorithm, *, paths: Sequence[object] | None = None, what: str = "", ranges: bool = True
) -> None:
    """Raise :class:`hub.errors.TraceFormatError` (exit 3) at the first implausible value, naming
    the file (``paths[rank]`` when given), rank, node and attribute; ``what`` names the algorithm
    when there are no files (a consumer's input). ``ranges=False`` (the reader, whose decoder
    checked them on the wire values) skips the per-column range checks."""
    check_meta(alg.meta, paths=paths, what=what)
    if len(alg.graphs) != alg.ranks:
        where0 = str(paths[0]) if paths else (what or None)
        raise TraceFormatError(f"{len(alg.graphs)} rank graphs for {alg.ranks} ranks", path=where0)
    if _every_rank_passes(alg, ranges):
        return
    total, memo = 0.0, _Memo()  # some rank fails: find the first and say why
    for rank in range(alg.ranks):
        g = alg.graphs[rank]
        total = check_rank(alg.meta, g, rank, total, paths=paths, what=what, ranges=ranges, _memo=memo)


#: nodes per batch of ranks checked at once (the batch's columns are copied end to end)
_BATCH_NODES = 1 << 20


def _every_rank_passes(alg: Algorithm, ranges: bool) -> bool:
    """Whether :func:`check_rank` passes every rank, found without a Python pass per rank: the
    range checks once per distinct set of column arrays (ranks share them), the rest by
    :func:`batch_total` over batches of ranks laid end to end. False says only that some check
    fails; the rank-by-rank loop then finds which, so every message stays the same."""
    graphs = alg.graphs
    if ranges and not _shared_columns_pass(graphs):
        return False
    lens = np.fromiter((len(g) for g in graphs), dtype=np.int64, count=len(graphs))
    ends = np.cumsum(lens)
    total, lo = 0.0, 0
    while lo < len(graphs):
        before = int(ends[lo - 1]) if lo else 0
        hi = max(lo + 1, int(np.searchsorted(ends, before + _BATCH_NODES, side="right")))
        part = graphs[lo:hi]
        cols = {c: np.concatenate([getattr(g, c) for g in part]) for c in ("kind", "size", "count", "peer")}
        if any(col.shape != (int(ends[hi - 1]) - before,) for col in cols.values()):
            return False  # a column that disagrees with its graph's length: the loop says what it does
        new = batch_total(alg.meta, cols, lens[lo:hi], lo, total)
        if new is None:
            return False
        total, lo = new, hi
    return True


def _shared_columns_pass(graphs: Sequence[RankGraph]) -> bool:
    """Whether :func:`_column_problem` passes every non-empty rank: once per distinct set of the
    arrays it reads (its answer depends on them alone)."""
    seen: set[tuple[int, ...]] = set()
    for g in graphs:
        if len(g) == 0:
            continue
        columns = (g.kind, g.dep_ptr, g.dep_pos, *(getattr(g, column) for column in _RANGED))
        key = (len(g), *map(id, columns))  # the graphs hold the arrays: no id is reused meanwhile
        if key not in seen:
            if _column_problem(g) is not None:
                return False
            seen.add(key)
    return True


def check_meta(meta: AlgorithmMeta, *, paths: Sequence[object] | None = None, what: str = "") -> None:
    """The GlobalMetadata part of :func:`check_algorithm`."""
    bad = meta_problem(meta)
    if bad is not None:
        where0 = str(paths[0]) if paths else (what or None)
        raise TraceFormatError(
            f"GlobalMetadata: {bad[0]}" if paths else bad[0], path=where0, rank=0 if paths else None, hint=bad[1]
        )


def check_rank(
    meta: AlgorithmMeta,
    g: RankGraph,
    rank: int,
    total: float,
    *,
    paths: Sequence[object] | None = None,
    what: str = "",
    ranges: bool = True,
    _memo: _Memo | None = None,
) -> float:
    """The part of :func:`check_algorithm` for one rank (ranks are checked in order, one at a time
    when they are streamed); ``total`` is the bytes of ranks 0..rank-1, and the result adds this one's."""
    found = _node_problem(meta, g, rank, ranges, _memo)
    total += _bytes_of(g) if _memo is None else _memo.bytes_of(g)
    if found is None and total >= float(INT64_MAX):
        found = (
            "the comm_size values add up past int64 (summed over ranks 0..this one)",
            int(g.ids[0]),
            "message sizes are implausible",
        )
    if found is not None:
        message, node, hint = found
        where = str(paths[rank]) if paths else (what or None)
        raise TraceFormatError(message, path=where, rank=rank, node=node, hint=hint)
    return total
