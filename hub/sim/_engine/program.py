"""Flattening an :class:`~hub.chakra.Algorithm` into one global node table for the engine.

Global node ``g`` of rank ``r`` at position ``p`` is ``offsets[r] + p``. An algorithm's columns are
numpy arrays filled in place, so building a program costs one pass over the rank graphs and no
intermediate copies (a workload's are ``array`` objects; readers take either through the buffer
protocol, and scalar reads give numbers that need ``int()`` before JSON).
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..._native import load_sim
from ...chakra import Algorithm, NodeType
from ...errors import SimulationError

__all__ = [
    "K_COMP",
    "K_END",
    "K_NOP",
    "K_RECV",
    "K_SEND",
    "K_START",
    "Program",
    "channels",
    "comp_ns",
    "factorize",
    "program_from_algorithm",
]

# engine node kinds (Chakra values where one exists)
K_NOP = 0
K_COMP = int(NodeType.COMP)
K_SEND = int(NodeType.SEND)
K_RECV = int(NodeType.RECV)
K_START = 20  # workload COMM_COLL: start of a collective instance (takes the comm resource)
K_END = 21  # workload COMM_COLL: end of the instance (releases it)
#: ASTRA-sim maps a custom collective's tags into [0, 5e8) (Sys::front_end_sim_send, NATIVE range)
NATIVE_TAGS = 500_000_000


@dataclass
class Program:
    """Global node table. ``peer`` is an NPU id; ``tagx`` = tag + instance * 2^32 (so concurrent
    collective instances of a workload never cross-match); ``dur`` is the COMP time in ns."""

    n: int
    ranks: int  # number of NPUs taking part
    # (succ_ptr, succ_idx, indeg, dep_ptr and dep_idx are the engine's input: run_engine consumes
    # them, setting them to None once laid out, so a program runs once)
    kind: Any  # int32 numpy / array('i') / list
    rank: Any  # int32 numpy / array('i')
    peer: Any
    tagx: Any
    size: Any
    dur: Any
    succ_ptr: Any
    succ_idx: Any
    indeg: Any  # int32 numpy / list
    local_id: Any  # Chakra node id within its graph
    inst: Any  # 0 = the algorithm itself / workload node, k+1 = k-th collective instance
    acq: list[int] | None = None  # resource class acquired at issue (workload only)
    rel: list[int] | None = None  # resource class released at completion
    # slots per resource class (classes 1-3: the workload's, one each; 4 + d: dimension d's queue
    # of native collective streams, ``active-chunks-per-dimension`` each); None = all 1
    caps: list[int] | None = None
    labels: dict[int, str] = field(default_factory=dict)  # inst -> label (e.g. "allreduce#0")
    messages: int = 0
    bytes: int = 0
    # parents per node in the order the file lists them (the feeder's insertion order); None =
    # ascending, which is all the order matters for when parents precede their children
    dep_ptr: Any = None
    dep_idx: Any = None
    # quorum joins: node -> how many of its predecessors' completions release it (fewer than its
    # predecessors: "the k-th of them to finish"); gated joins: node -> its arming predecessor
    # (hub._native._sim's gate(): released at the first counted completion once armed);
    # sequencers: node -> w, its k-th predecessor to finish releases its k-th w successors
    # (tick(); in successor-list order, which is node order in a workload)
    quorum: dict[int, int] = field(default_factory=dict)
    arm: dict[int, int] = field(default_factory=dict)
    seq: dict[int, int] = field(default_factory=dict)
    # workloads: per node, the feeder (a custom-collective instance on one rank) whose hash set
    # orders what the node releases; -1: none (workload nodes, native collectives). None: no such
    # instance (then nothing is reordered).
    fkey: Any = None
    _kinds: np.ndarray | None = field(default=None, repr=False)  # ``kind`` as numpy, built once

    def kind_array(self) -> np.ndarray:
        """``kind`` as an integer numpy array (itself, or a view of an ``array('i')``; cached)."""
        if self._kinds is None or len(self._kinds) != self.n:
            k = self.kind
            if isinstance(k, np.ndarray) and k.dtype == np.int32:
                self._kinds = k
            elif isinstance(k, array) and k.typecode == "i":
                self._kinds = np.frombuffer(k, dtype=np.int32)
            else:
                self._kinds = np.asarray(k, dtype=np.int64)
        return self._kinds


def factorize(key: np.ndarray, top: int) -> tuple[np.ndarray, int]:
    """Dense ids (int64, in ascending key order) of the non-negative integer ``key`` values below
    ``top``, and how many there are. A presence table when ``top`` is small next to the number of
    keys (linear time), otherwise a sort."""
    if top <= max(1 << 22, 4 * key.size):
        present = np.zeros(top, dtype=np.int32)
        present[key] = 1
        ids = np.cumsum(present, dtype=np.int32)
        count = int(ids[-1]) if top else 0
        ids -= 1
        return ids[key].astype(np.int64), count
    uniq, inv = np.unique(key, return_inverse=True)
    return inv.astype(np.int64, copy=False), int(uniq.size)


def channels(prog: Program) -> tuple[np.ndarray, int, np.ndarray]:
    """Dense message-channel ids (int32): SENDs and RECVs of the same (tag mod 5e8, src, dst, size)
    share one id (``-1`` for other nodes), so the engine matches messages with an array index
    instead of hashing a 4-tuple per message. Also returns the number of channels and each
    channel's first node (int32, program order), whose key stands for the channel's. One pass in
    C (``hub._native._sim.channels``, the rule's only implementation: a tag ``t`` of instance ``i``
    (``tagx = t + i * 2^32``) keys as ``t mod 5e8``, ASTRA-sim's native tag range)."""
    chan = np.empty(prog.n, dtype=np.int32)
    nchan, first = load_sim().channels(
        np.ascontiguousarray(prog.kind_array(), dtype=np.int32),
        np.frombuffer(prog.rank, dtype=np.int32),
        np.frombuffer(prog.peer, dtype=np.int32),
        np.frombuffer(prog.tagx, dtype=np.int64),
        np.frombuffer(prog.size, dtype=np.int64),
        chan,
    )
    return chan, int(nchan), np.frombuffer(first, dtype=np.int32)


def comp_ns(duration_micros: np.ndarray, size: np.ndarray, reduction_GBps: float | None) -> np.ndarray:
    """COMP cost in ns: ``duration_micros * 1000``, 0 -> 1 ns; unset (-1) -> 1 ns, or
    ``max(1, floor(bytes / reduction_GBps))`` when a reduction bandwidth (decimal GB/s) is given
    and the node has a byte size."""
    d = np.asarray(duration_micros, dtype=np.int64)
    out = np.where(d > 0, d * 1000, 1).astype(np.int64)
    if reduction_GBps is not None:
        s = np.asarray(size, dtype=np.int64)
        costed = (d < 0) & (s > 0)
        red = np.maximum(1, np.floor(s.astype(np.float64) / float(reduction_GBps))).astype(np.int64)
        out = np.where(costed, red, out)
    return out


def _to_array(a: np.ndarray, code: str) -> array:
    return array(code, np.ascontiguousarray(a, dtype={"i": np.int32, "q": np.int64}[code]).tobytes())


def _column(n: int, code: str) -> tuple[np.ndarray, np.ndarray]:
    """An uninitialised numpy column of ``n`` items (the caller fills every item), twice (column
    and view, one object). numpy, not ``array``: numpy asks the kernel for huge pages on large
    arrays, and a 4-KiB page fault per 4 KiB of a column cost more than filling it."""
    out = np.empty(n, dtype={"i": np.int32, "q": np.int64}[code])
    return out, out


def _gather(graphs: Sequence[Any], col: str, view: np.ndarray) -> np.ndarray:
    """Copy column ``col`` of every rank graph into ``view`` (rank-major), converting in place
    (one numpy call for all ranks)."""
    np.concatenate([getattr(g, col) for g in graphs], out=view, casting="unsafe")
    return view


def _bound_sizes(graphs: Sequence[Any], per_chunk: int, view: np.ndarray) -> np.ndarray:
    """The byte sizes of every rank graph bound at ``per_chunk`` bytes per chunk, into ``view``
    (rank-major): Algorithm.bind's rule, every sized non-COLL node is ``count * per_chunk``. Rank
    by rank (the temporaries stay in cache; no whole-column count copy), once per distinct triple
    of (kind, count, size) arrays, which ranks of a generated schedule often share."""
    done: dict[tuple[int, int, int], np.ndarray] = {}
    coll = int(NodeType.COLL)
    at = 0
    for g in graphs:
        key = (id(g.kind), id(g.count), id(g.size))  # the graphs hold the arrays: no id is reused meanwhile
        row = done.get(key)
        if row is None:
            cnt = np.asarray(g.count, dtype=np.int64)
            row = np.where((np.asarray(g.kind) != coll) & (cnt > 0), cnt * per_chunk, np.asarray(g.size, np.int64))
            done[key] = row
        view[at : at + row.size] = row
        at += row.size
    return view


def _durations(
    graphs: Sequence[Any], offsets: np.ndarray, size: np.ndarray, reduction_GBps: float | None, dur: np.ndarray
) -> None:
    """Write the COMPs' costs (:func:`comp_ns`) into ``dur`` rank by rank, at the COMPs alone (found
    once per distinct ``kind`` array): no whole-column copy of the durations, no whole-column mask."""
    comps: dict[int, np.ndarray] = {}
    for g, off in zip(graphs, offsets[:-1].tolist(), strict=False):
        pos = comps.get(id(g.kind))  # the graphs hold the arrays: no id is reused meanwhile
        if pos is None:
            pos = comps[id(g.kind)] = np.flatnonzero(np.asarray(g.kind) == K_COMP)
        if pos.size:
            at = pos + off
            dur[at] = comp_ns(np.asarray(g.duration)[pos], size[at], reduction_GBps)


def _sent(kind: np.ndarray, size: np.ndarray) -> tuple[int, int]:
    """(SEND nodes, their bytes), scanned block by block (no whole-column mask or copy)."""
    messages = nbytes = 0
    for lo in range(0, kind.size, BLOCK):
        s = kind[lo : lo + BLOCK] == K_SEND
        messages += int(np.count_nonzero(s))
        nbytes += int(np.sum(size[lo : lo + BLOCK], where=s))
    return messages, nbytes


#: nodes per block of the blocked column passes: their temporaries stay in cache and reuse the
#: same pages, where whole-column temporaries (67M nodes: 67-536 MB each) are page faults
BLOCK = 1 << 18


def _clean(kind: np.ndarray, rank: np.ndarray, peer: np.ndarray, tag: np.ndarray, size: np.ndarray, nr: int) -> bool:
    """Whether no node breaks a rule of :func:`_check`, scanned block by block (the common case:
    nothing to report, so no whole-column temporary is ever built)."""
    for lo in range(0, kind.size, BLOCK):
        k, r, p, t, z = (a[lo : lo + BLOCK] for a in (kind, rank, peer, tag, size))
        comm = (k == K_SEND) | (k == K_RECV)
        if (comm & ((z < 0) | (p < 0) | (p >= nr) | (p == r))).any() or ((t < 0) | (t >= 1 << 31)).any():
            return False
    return True


def _check(
    kind: np.ndarray, rank: np.ndarray, peer: np.ndarray, tag: np.ndarray, size: np.ndarray, ids: np.ndarray, nr: int
) -> None:
    """Refuse what the engine cannot run: unsized or self messages, foreign peers, wide tags. (The
    first problem of each kind in rule order, over the whole table; a blocked scan first.)"""
    if _clean(kind, rank, peer, tag, size, nr):
        return
    comm = (kind == K_SEND) | (kind == K_RECV)
    bad = comm & (size < 0)
    if bad.any():
        g = int(np.argmax(bad))
        raise SimulationError(
            f"rank {int(rank[g])} node {int(ids[g])}: message size unknown (algorithm not bound to a byte size)",
            hint="give a collective size (size=..., e.g. '1MiB') or bind the algorithm with alg.bind(bytes)",
        )
    badp = comm & ((peer < 0) | (peer >= nr))
    if badp.any():
        g = int(np.argmax(badp))
        raise SimulationError(
            f"rank {int(rank[g])} node {int(ids[g])}: peer {int(peer[g])} is not a rank of this {nr}-rank algorithm"
        )
    selfm = comm & (peer == rank)
    if selfm.any():
        g = int(np.argmax(selfm))
        raise SimulationError(
            f"rank {int(rank[g])} node {int(ids[g])}: {'SEND to' if kind[g] == K_SEND else 'RECV from'} itself",
            hint="express local copies and reductions as COMP nodes",
        )
    badt = (tag < 0) | (tag >= 1 << 31)
    if badt.any():
        g = int(np.argmax(badt))
        raise SimulationError(f"rank {int(rank[g])} node {int(ids[g])}: tag {int(tag[g])} outside 0..2^31-1")


def _parents(graphs: Sequence[Any], offsets: np.ndarray, indeg: np.ndarray) -> np.ndarray:
    """Every node's parents as global node ids (int32, rank-major, each node's in file order),
    filling ``indeg``. Positions are checked to name nodes of their own rank once per distinct
    ``dep_pos`` array and rank length (ranks share them), the in-degrees taken once per distinct
    ``dep_ptr`` array."""
    checked: set[tuple[int, int]] = set()
    counts: dict[int, np.ndarray] = {}
    for r, g in enumerate(graphs):
        pos = g.dep_pos
        if (id(pos), len(g)) not in checked:  # the graphs hold the arrays: no id is reused meanwhile
            if pos.size and (int(pos.min()) < 0 or int(pos.max()) >= len(g)):
                raise SimulationError(
                    f"rank {r}: a dependency points outside the rank's {len(g)} nodes",
                    hint="run the verifier (hub.verify)",
                )
            checked.add((id(pos), len(g)))
        if id(g.dep_ptr) not in counts:
            counts[id(g.dep_ptr)] = np.diff(g.dep_ptr)
    np.concatenate([counts[id(g.dep_ptr)] for g in graphs], out=indeg, casting="unsafe")
    ndeps = np.fromiter((g.dep_pos.size for g in graphs), dtype=np.int64, count=len(graphs))
    n, nd = int(offsets[-1]), int(ndeps.sum())
    if n >= 1 << 31 or nd >= 1 << 31:
        raise SimulationError(f"{n} nodes and {nd} dependencies: the engine counts them in 32 bits")
    parents = np.empty(nd, dtype=np.int32)
    at = 0
    for g, off in zip(graphs, offsets[:-1].tolist(), strict=False):  # copied and shifted in one pass per rank
        k = g.dep_pos.size
        np.add(g.dep_pos, off, out=parents[at : at + k], casting="unsafe")  # (n < 2^31: no offset overflows)
        at += k
    return parents


def program_from_algorithm(
    alg: Algorithm, reduction_GBps: float | None = None, *, per_chunk: int | None = None
) -> Program:
    """Flatten a bound algorithm (algorithm rank k runs on NPU k). ``per_chunk``: bind on the fly
    (bytes per chunk, :func:`hub.chakra.chunk_bytes`), as :meth:`Algorithm.bind` would, without
    copying the rank graphs."""
    graphs = alg.graphs
    nr = len(graphs)
    lens = np.fromiter((len(g) for g in graphs), dtype=np.int64, count=nr)
    offsets = np.zeros(nr + 1, dtype=np.int64)
    np.cumsum(lens, out=offsets[1:])
    n = int(offsets[-1])
    if n == 0:
        raise SimulationError(f"algorithm {alg.name or alg.collective!s} has no nodes", hint="nothing to simulate")

    kind_a, kind = _column(n, "i")
    _gather(graphs, "kind", kind)
    rank_a = rank = np.empty(n, dtype=np.int32)
    for r, (lo, hi) in enumerate(zip(offsets[:-1].tolist(), offsets[1:].tolist(), strict=True)):
        rank[lo:hi] = r  # (a fill per rank: no int64 repeat counts, no temporary)
    peer_a, peer = _column(n, "i")
    _gather(graphs, "peer", peer)
    tag_a, tag = _column(n, "q")
    _gather(graphs, "tag", tag)
    size_a, size = _column(n, "q")
    if per_chunk is None:
        _gather(graphs, "size", size)
    else:
        _bound_sizes(graphs, per_chunk, size)
    ids_a, ids = _column(n, "q")
    _gather(graphs, "ids", ids)
    _check(kind, rank, peer, tag, size, ids, nr)

    # global dependencies: child <- parent, and their transpose (successors, children ascending)
    indeg_a, indeg = _column(n, "i")  # int32: node and edge counts stay below 2^31 (the engine checks)
    parents = _parents(graphs, offsets, indeg)
    nd = parents.size
    # successors, children ascending: one counting sort in C, which also says whether some node
    # names a later node (then the file's dependency order is kept for the feeder)
    succ_idx_a, succ_idx = _column(nd, "i")
    succ_ptr_a, succ_ptr = _column(n + 1, "q")
    forward = load_sim().successors(parents, indeg, succ_ptr, succ_idx)
    dep_ptr = dep_idx = None
    if forward:
        dep_ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(indeg, out=dep_ptr[1:])
        dep_idx = parents
    del parents

    # COMP costs, on the COMPs alone: the column is calloc'd, so without COMPs it costs no memory
    dur = np.zeros(n, dtype=np.int64)
    _durations(graphs, offsets, size, reduction_GBps, dur)
    messages, nbytes = _sent(kind, size)
    return Program(
        n=n,
        ranks=nr,
        kind=kind_a,
        rank=rank_a,
        peer=peer_a,
        tagx=tag_a,
        size=size_a,
        dur=dur,
        succ_ptr=succ_ptr_a,
        succ_idx=succ_idx_a,
        indeg=indeg_a,
        local_id=ids_a,
        inst=np.zeros(n, dtype=np.int32),  # calloc'd: no memory until written (algorithms have none)
        messages=messages,
        bytes=nbytes,
        dep_ptr=dep_ptr,
        dep_idx=dep_idx,
    )
