"""The order in which ASTRA-sim issues simultaneously ready nodes of one rank (Chakra feeder_v3).

ASTRA-sim's custom-collective walker (``CustomAlgorithm::issue_dep_free_nodes``) issues every
node of the feeder's dependency-free set, iterating a copy of that set: a
``std::unordered_set<uint64_t>`` of node ids (``_DependancyLayer::dependancy_free_nodes``). The
set is drained by every issue, so each call issues exactly the nodes released by one completion
(``_DependancyLayer::finish_node``), in the set's iteration order. Those nodes are inserted in the
iteration order of the finished node's child set (``parent_map_child[node]``, another
``unordered_set``); the very first set (the roots) is filled in the iteration order of the
``child_map_parent`` map, which holds every node id of the file. So the issue order is the
iteration order of libstdc++'s hash tables, which this module reproduces:

* the hash of an integer is the integer; bucket = key mod bucket count;
* a key inserted into an empty bucket goes to the front of the element list; a key inserted into
  a non-empty bucket goes right after that bucket's predecessor node, i.e. to the front of its
  bucket's group. So the list is: groups by the time their bucket was first used, newest first;
  inside a group, newest first;
* growth (``_Prime_rehash_policy``, max load 1.0): the first insert makes 13 buckets; inserting
  the (B+1)-th key grows to the first listed prime >= 2B; a rehash re-inserts the elements in
  their current list order into the new, empty buckets (the same rule);
* erasing never shrinks the table or moves other elements; copying keeps the order.

The tables are checked against g++'s ``std::unordered_set`` in the tests.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ...errors import SimulationError
from .program import BLOCK

if TYPE_CHECKING:
    from .program import Program

__all__ = ["FreeSet", "feeder_program", "growth", "insert_order", "insert_order_np", "next_bucket_count"]

# libstdc++'s small-size table and its prime list (from 17 on: lower_bound starts at index 6)
_FAST = (2, 2, 2, 3, 5, 5, 7, 7, 11, 11, 11, 11, 13, 13)
_PRIMES = (
    17,
    19,
    23,
    29,
    31,
    37,
    41,
    43,
    47,
    53,
    59,
    61,
    67,
    71,
    73,
    79,
    83,
    89,
    97,
    103,
    109,
    113,
    127,
    137,
    139,
    149,
    157,
    167,
    179,
    193,
    199,
    211,
    227,
    241,
    257,
    277,
    293,
    313,
    337,
    359,
    383,
    409,
    439,
    467,
    503,
    541,
    577,
    619,
    661,
    709,
    761,
    823,
    887,
    953,
    1031,
    1109,
    1193,
    1289,
    1381,
    1493,
    1613,
    1741,
    1879,
    2029,
    2179,
    2357,
    2549,
    2753,
    2971,
    3209,
    3469,
    3739,
    4027,
    4349,
    4703,
    5087,
    5503,
    5953,
    6427,
    6949,
    7517,
    8123,
    8783,
    9497,
    10273,
    11113,
    12011,
    12983,
    14033,
    15173,
    16411,
    17749,
    19183,
    20753,
    22447,
    24281,
    26267,
    28411,
    30727,
    33223,
    35933,
    38873,
    42043,
    45481,
    49201,
    53201,
    57557,
    62233,
    67307,
    72817,
    78779,
    85229,
    92203,
    99733,
    107897,
    116731,
    126271,
    136607,
    147793,
    159871,
    172933,
    187091,
    202409,
    218971,
    236897,
    256279,
    277261,
    299951,
    324503,
    351061,
    379787,
    410857,
    444487,
    480881,
    520241,
    562841,
    608903,
    658753,
    712697,
    771049,
    834181,
    902483,
    976369,
    1056323,
    1142821,
    1236397,
    1337629,
    1447153,
    1565659,
    1693859,
    1832561,
    1982627,
    2144977,
    2320627,
    2510653,
    2716249,
    2938679,
    3179303,
    3439651,
    3721303,
    4026031,
    4355707,
    4712381,
    5098259,
    5515729,
    5967347,
    6456007,
    6984629,
    7556579,
    8175383,
    8844859,
    9569143,
    10352717,
    11200489,
    12117689,
    13109983,
    14183539,
    15345007,
    16601593,
    17961079,
    19431899,
    21023161,
    22744717,
    24607243,
    26622317,
    28802401,
    31160981,
    33712729,
    36473443,
    39460231,
    42691603,
    46187573,
    49969847,
    54061849,
    58488943,
    63278561,
    68460391,
    74066549,
    80131819,
    86693767,
    93793069,
    101473717,
    109783337,
    118773397,
    128499677,
    139022417,
    150406843,
    162723577,
    176048909,
    190465427,
    206062531,
    222936881,
    241193053,
    260944219,
    282312799,
    305431229,
    330442829,
    357502601,
    386778277,
    418451333,
    452718089,
    489790921,
    529899637,
    573292817,
    620239453,
    671030513,
    725980837,
    785430967,
    849749479,
    919334987,
    994618837,
    1076067617,
    1164186217,
    1259520799,
    1362662261,
    1474249943,
    1594975441,
    1725587117,
    1866894511,
    2019773507,
    2185171673,
    2364114217,
    2557710269,
    2767159799,
    2993761039,
    3238918481,
    3504151727,
    3791104843,
    4101556399,
    4294967291,
)


def next_bucket_count(n: int) -> int:
    """``_Prime_rehash_policy::_M_next_bkt(n)``: the bucket count chosen for at least ``n``."""
    if n < len(_FAST):
        return 1 if n == 0 else _FAST[n]
    i = bisect_left(_PRIMES, n)
    return _PRIMES[min(i, len(_PRIMES) - 1)]


def growth(count: int, buckets: int, next_resize: int) -> tuple[int, int] | None:
    """``_M_need_rehash`` for inserting one key into a table of ``count`` keys: the new
    (bucket count, next resize) when the table grows (rehashes), else None. The policy's other
    outcome (raising the resize threshold without rehashing) cannot occur at max load 1.0 once a
    table has grown, and is folded in by returning the threshold unchanged otherwise."""
    if count + 1 <= next_resize:
        return None
    want = max(count + 1, 0 if next_resize else 11)
    if want >= buckets:
        b = next_bucket_count(max(want + 1, buckets * 2))
        return b, b
    return buckets, buckets  # threshold raised to floor(buckets * 1.0); no rehash


def _rule_idx(seq: Sequence[int], buckets: int) -> list[int]:
    """Iteration order (as indices into ``seq``) of ``seq`` inserted in order into an empty
    table of ``buckets``: groups by first use of their bucket, newest first; newest first inside."""
    groups: dict[int, list[int]] = {}  # bucket -> its indices; the dict keeps first-use order
    for i, k in enumerate(seq):
        g = groups.get(k % buckets)
        if g is None:
            groups[k % buckets] = [i]
        else:
            g.append(i)
    out: list[int] = []
    for g in reversed(groups.values()):
        out.extend(reversed(g))
    return out


def _rule(seq: Sequence[int], buckets: int) -> list[int]:
    return [seq[i] for i in _rule_idx(seq, buckets)]


def insert_order(keys: Sequence[int], buckets: int = 1, next_resize: int = 0) -> tuple[list[int], int, int]:
    """Iteration order after inserting the distinct ``keys`` in order into an EMPTY table with
    ``buckets`` buckets and resize threshold ``next_resize``; returns (order, buckets, next_resize)."""
    seq: list[int] = []
    for k in keys:
        g = growth(len(seq), buckets, next_resize)
        if g is not None:
            nb, next_resize = g
            if nb != buckets:
                seq = _rule(seq, buckets)  # rehash: re-insert in list order
                buckets = nb
        seq.append(k)
    return _rule(seq, buckets), buckets, next_resize


def _rule_np(seq: np.ndarray, buckets: int) -> np.ndarray:
    b = seq % np.uint64(buckets)
    idx = np.arange(seq.size, dtype=np.int64)
    ub, first = np.unique(b, return_index=True)
    opened = first[np.searchsorted(ub, b)]
    return seq[np.lexsort((-idx, -opened))]


def insert_order_np(keys: np.ndarray) -> np.ndarray:
    """:func:`insert_order` from a fresh table, vectorized per rehash (for whole-file tables)."""
    keys = np.asarray(keys, dtype=np.uint64)
    out = np.zeros(0, dtype=np.uint64)
    buckets, next_resize, done = 1, 0, 0
    n = keys.size
    while done < n:
        # the next insert that grows the table (count = done + j before it)
        g = growth(done, buckets, next_resize)
        if g is not None:
            nb, next_resize = g
            if nb != buckets:
                out = _rule_np(out, buckets)
                buckets = nb
        # inserts up to the threshold need no check
        stop = min(n, max(next_resize, done + 1))
        out = np.concatenate([out, keys[done:stop]])
        done = stop
    return _rule_np(out, buckets)


class FreeSet:
    """One rank's dependency-free set: only its bucket count and resize threshold persist,
    because every issue drains the set."""

    __slots__ = ("buckets", "next_resize")

    def __init__(self) -> None:
        self.buckets = 1
        self.next_resize = 0

    def order(self, keys: Sequence[int]) -> list[int]:
        """Issue order (indices into ``keys``) of ``keys`` (distinct node ids, in insertion
        order) put into the drained set."""
        if len(keys) <= self.next_resize:  # no growth: the common case
            return _rule_idx(keys, self.buckets)
        out, self.buckets, self.next_resize = insert_order(keys, self.buckets, self.next_resize)
        pos = {k: i for i, k in enumerate(keys)}
        return [pos[k] for k in out]


def _dedup_edges(
    sp: np.ndarray, si: np.ndarray, n: int, indeg: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(succ_ptr, succ_idx, parents per node) with repeated (parent, child) pairs removed: the
    feeder keeps dependencies in sets. Children stay ascending (file order) per parent, so a repeat
    is two equal neighbours in one list; ``indeg`` (parents per node, repeats counted) is kept when
    there are none, the common case."""
    if not _neighbours_repeat(si):  # blocked: no whole-edge temporary in the common case
        return sp, si, np.asarray(indeg)
    same = si[1:] == si[:-1]
    if same.any():
        inner = sp[1:-1]
        same[inner[(inner > 0) & (inner < si.size)] - 1] = False  # neighbours across two lists differ
    if not same.any():
        return sp, si, np.asarray(indeg)
    keep = np.ones(si.size, dtype=bool)
    keep[1:] = ~same
    parent = np.repeat(np.arange(n, dtype=np.int64), np.diff(sp))[keep]
    si = si[keep]
    sp = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(parent, minlength=n), out=sp[1:])
    return sp, si, np.bincount(si, minlength=n)


def _neighbours_repeat(si: np.ndarray) -> bool:
    """Whether two neighbours of ``si`` are equal, scanned block by block (blocks overlap by one)."""
    last = si.size - 1  # neighbours (i, i + 1) for i < last
    return any(
        bool((si[lo + 1 : min(lo + BLOCK, last) + 1] == si[lo : min(lo + BLOCK, last)]).any())
        for lo in range(0, last, BLOCK)
    )


def _longest_list(sp: np.ndarray) -> int:
    """The longest successor list of ``sp`` (offsets), scanned block by block."""
    n = sp.size - 1
    return max(
        (int((sp[lo + 1 : min(lo + BLOCK, n) + 1] - sp[lo : min(lo + BLOCK, n)]).max()) for lo in range(0, n, BLOCK)),
        default=0,
    )


def _child_order(sp: np.ndarray, si: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Each parent's children in the iteration order of its ``parent_map_child`` set (children
    inserted in file order into a fresh set), except lists of two: two keys in a fresh table
    always iterate newest first, and the layout writes those reversed (``_sim.layout``'s
    ``swap2``), in its one pass over the edges. ``si`` itself when no list has three or more.

    Vectorized per list length: every list of ``k`` children grows its table at the same inserts
    (:func:`_fresh_growth`), so the lists of one length are rows of one matrix, reordered by
    :func:`_rule_rows` at each rehash and at the end. :func:`_child_order_ref` (one
    :class:`FreeSet` per list) is the reference the tests hold it to."""
    if _longest_list(sp) <= 2:  # blocked: no whole-node temporary in the common case
        return si
    cnt = np.diff(sp)
    long_ = np.flatnonzero(cnt > 2)
    out = si.copy()
    lens = cnt[long_]
    for k in np.unique(lens).tolist():
        parents = long_[lens == k]
        rehash, final = _fresh_growth(k)
        step = max(1, BLOCK // k)  # rows per block: the block's temporaries stay small
        for lo in range(0, parents.size, step):
            edges = sp[parents[lo : lo + step], None] + np.arange(k, dtype=np.int64)[None, :]
            kids = si[edges]
            keys = ids[kids]
            for at, buckets in rehash:  # the table grows before insert ``at``: its keys re-inserted
                perm = _rule_rows(keys[:, :at], buckets)
                keys[:, :at] = np.take_along_axis(keys[:, :at], perm, axis=1)
                kids[:, :at] = np.take_along_axis(kids[:, :at], perm, axis=1)
            out[edges] = np.take_along_axis(kids, _rule_rows(keys, final), axis=1)
    return out


def _fresh_growth(k: int) -> tuple[list[tuple[int, int]], int]:
    """Inserting ``k`` distinct keys into a fresh table: the rehashes (insert index, bucket count
    before it) and the final bucket count (:func:`insert_order`'s walk, keys aside)."""
    rehash: list[tuple[int, int]] = []
    buckets, next_resize = 1, 0
    for i in range(k):
        g = growth(i, buckets, next_resize)
        if g is not None:
            nb, next_resize = g
            if nb != buckets:
                if i:
                    rehash.append((i, buckets))
                buckets = nb
    return rehash, buckets


def _rule_rows(keys: np.ndarray, buckets: int) -> np.ndarray:
    """:func:`_rule_idx` of every row of ``keys`` (uint64, distinct per row): per row the
    positions in iteration order, groups by first use of their bucket, newest first; newest
    first inside."""
    m, k = keys.shape
    idx = np.arange(k, dtype=np.int64)[None, :]
    b = (keys % np.uint64(buckets)).astype(np.int64)
    order = np.argsort(b * k + idx, axis=1)  # by bucket, then insertion
    sb = np.take_along_axis(b, order, axis=1)
    start = np.ones((m, k), dtype=bool)
    start[:, 1:] = sb[:, 1:] != sb[:, :-1]
    head = np.maximum.accumulate(np.where(start, idx, 0), axis=1)  # each sorted item's group start
    opened = np.empty((m, k), dtype=np.int64)
    np.put_along_axis(opened, order, np.take_along_axis(order, head, axis=1), axis=1)
    return np.argsort(-(opened * k + idx), axis=1)


def _child_order_ref(sp: np.ndarray, si: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """:func:`_child_order` one list at a time through :class:`FreeSet` (the tests' reference)."""
    out = si.copy()
    for p in np.flatnonzero(np.diff(sp) > 2).tolist():
        kids = si[sp[p] : sp[p + 1]]
        out[sp[p] : sp[p + 1]] = kids[FreeSet().order(ids[kids].tolist())]
    return out


def _map_sequence(ids: np.ndarray, ptr: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """Insertion sequence of one rank's ``child_map_parent`` map: per node in file order its own
    id, then (when absent) each parent id in the order of the node's parent set. Parents only
    come first when a node names a later node as its parent."""
    n = ids.size
    own = np.arange(n, dtype=np.int64)
    fwd = np.repeat(own, np.diff(ptr))
    if not bool(np.any(pos > fwd)):
        return ids
    seen: set[int] = set()
    seq: list[int] = []
    idl = ids.tolist()
    for p in range(n):
        k = idl[p]
        if k not in seen:
            seen.add(k)
            seq.append(k)
        deps = pos[ptr[p] : ptr[p + 1]].tolist()
        if any(d > p for d in deps):
            keys = list(dict.fromkeys(idl[d] for d in deps))
            for i in FreeSet().order(keys):
                if keys[i] not in seen:
                    seen.add(keys[i])
                    seq.append(keys[i])
    return np.asarray(seq, dtype=np.uint64)


def feeder_program(
    prog: Program, counts: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[tuple[int, int]]]:
    """The program's dependencies as ASTRA-sim's feeder walks them: (succ_ptr, succ_idx in
    child-set order (lists of two still in file order: the layout reverses them), distinct-parent
    counts, roots in initial issue order (ranks ascending, then the free set's order), per-rank
    free-set state (buckets, next resize)). ``counts``: nodes per NPU when the caller has them."""
    n = prog.n
    sp, si, indeg = _dedup_edges(np.asarray(prog.succ_ptr, dtype=np.int64), np.asarray(prog.succ_idx), n, prog.indeg)
    ids = np.frombuffer(prog.local_id, dtype=np.uint64)  # the feeder's keys: the same bits, unsigned (no copy)
    si = _child_order(sp, si, ids)
    rank = np.frombuffer(prog.rank, dtype=np.int32)
    nranks = max(prog.ranks, int(rank.max()) + 1 if n else 0)
    if counts is None or counts.size != nranks:
        counts = np.bincount(rank, minlength=nranks)
    offsets = np.zeros(nranks + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    if n and not bool(np.all(rank[1:] >= rank[:-1])):
        raise AssertionError("program nodes must be rank-major")
    # per-rank dependency lists (positions), for forward references: parent position > own
    roots_out: list[np.ndarray] = []
    state: list[tuple[int, int]] = []
    cache: dict[tuple[bytes, bytes], tuple[np.ndarray, int, int]] = {}
    is_root = indeg == 0
    fwd_rank = np.zeros(nranks, dtype=bool)  # ranks with a node whose parent comes later in the file
    if prog.dep_ptr is not None:  # the program records file order exactly when such nodes exist
        parent_of = np.repeat(np.arange(n, dtype=np.int64), np.diff(sp))  # (_child_order keeps each edge's parent)
        fwd_any = parent_of > si
        fwd_rank[rank[si[fwd_any]]] = True
    like_first = _like_first_rank(ids, is_root, counts)
    first: tuple[np.ndarray, int, int] | None = None  # rank 0's entry, once cached
    for r in range(nranks):
        lo, hi = int(offsets[r]), int(offsets[r + 1])
        if lo == hi:
            state.append((1, 0))
            continue
        rid = ids[lo:hi]
        mask = is_root[lo:hi]
        if first is not None and like_first[r] and not fwd_rank[r]:
            hit: tuple[np.ndarray, int, int] | None = first  # rank 0's key, known without hashing it
        else:
            key = (rid.tobytes(), mask.tobytes())
            hit = cache.get(key) if not fwd_rank[r] else None
        if hit is None and _has_repeats(rid):
            raise SimulationError(
                f"rank {r}: node ids are not unique (ASTRA-sim's feeder keys nodes by id)",
                hint="give every node of a rank file its own id",
            )
        if hit is None:
            local = np.flatnonzero(mask)
            if local.size > 1:
                if fwd_rank[r]:
                    seq = _rank_sequence(prog, lo, hi, rid)
                else:
                    seq = rid
                cmp = insert_order_np(seq)
                where = dict(zip(rid[local].tolist(), local.tolist(), strict=True))
                local = np.array([where[k] for k in cmp.tolist() if k in where], dtype=np.int64)
            fs = FreeSet()
            order = fs.order(rid[local].tolist())
            hit = (local[np.asarray(order, dtype=np.int64)], fs.buckets, fs.next_resize)
            if not fwd_rank[r]:
                cache[key] = hit
                if r == 0:
                    first = hit
        roots_out.append(hit[0] + lo)
        state.append((hit[1], hit[2]))
    roots = np.concatenate(roots_out) if roots_out else np.zeros(0, dtype=np.int64)
    return sp, si, indeg, roots, state


def _like_first_rank(ids: np.ndarray, is_root: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Per rank: whether its node ids and roots equal rank 0's (then its cache key is rank 0's),
    one vectorized comparison when every rank has as many nodes as rank 0; else all False."""
    if not counts.size or int(counts.min()) != int(counts.max()) or not int(counts[0]):
        return np.zeros(counts.size, dtype=bool)
    shape = (counts.size, int(counts[0]))
    rows, roots = ids.reshape(shape), is_root.reshape(shape)
    return (rows == rows[0]).all(axis=1) & (roots == roots[0]).all(axis=1)


def _has_repeats(ids: np.ndarray) -> bool:
    """Whether a value occurs twice: sorted neighbours (a plain ``np.unique`` imports numpy.ma on its
    first call, ~10 ms of a 256-rank ``consume hub.simulate``)."""
    s = np.sort(ids)
    return bool((s[1:] == s[:-1]).any())


def _rank_sequence(prog: Program, lo: int, hi: int, rid: np.ndarray) -> np.ndarray:
    """:func:`_map_sequence` for the rank whose nodes are program nodes lo..hi-1."""
    if prog.dep_ptr is not None:
        ptr = np.asarray(prog.dep_ptr[lo : hi + 1], dtype=np.int64) - int(prog.dep_ptr[lo])
        pos = np.asarray(prog.dep_idx[int(prog.dep_ptr[lo]) : int(prog.dep_ptr[hi])], dtype=np.int64) - lo
        return _map_sequence(rid, ptr, pos)
    # no recorded order: rebuild each node's parents (ascending) from the successor lists
    sp = np.asarray(prog.succ_ptr, dtype=np.int64)
    si = np.asarray(prog.succ_idx)
    cnt = np.diff(sp[lo : hi + 1])
    parent = np.repeat(np.arange(lo, hi, dtype=np.int64), cnt)
    child = si[sp[lo] : sp[hi]]
    order = np.argsort(child, kind="stable")
    child, parent = child[order] - lo, parent[order] - lo
    ptr = np.zeros(hi - lo + 1, dtype=np.int64)
    np.cumsum(np.bincount(child, minlength=hi - lo), out=ptr[1:])
    return _map_sequence(rid, ptr, parent)
