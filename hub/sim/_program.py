"""Flattening an :class:`~hub.chakra.Algorithm` into one global node table for the engine.

Global node ``g`` of rank ``r`` at position ``p`` is ``offsets[r] + p``. Columns are numpy arrays
while building (vectorized) and are turned into Python lists / ``array`` objects once, because
the event loop indexes them millions of times.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..chakra import Algorithm, NodeType
from ..errors import SimulationError

__all__ = ["K_COMP", "K_END", "K_NOP", "K_RECV", "K_SEND", "K_START", "Program", "channels", "comp_ns",
           "program_from_algorithm"]

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
    kind: Any  # array('i') / list
    rank: Any  # array('i') / list
    peer: Any
    tagx: Any
    size: Any
    dur: Any
    succ_ptr: Any
    succ_idx: Any
    indeg: Any  # array('q') / list
    local_id: Any  # Chakra node id within its graph
    inst: Any  # 0 = the algorithm itself / workload node, k+1 = k-th collective instance
    acq: list[int] | None = None  # resource class acquired at issue (workload only)
    rel: list[int] | None = None  # resource class released at completion
    labels: dict[int, str] = field(default_factory=dict)  # inst -> label (e.g. "allreduce#0")
    messages: int = 0
    bytes: int = 0
    # parents per node in the order the file lists them (the feeder's insertion order); None =
    # ascending, which is all the order matters for when parents precede their children
    dep_ptr: Any = None
    dep_idx: Any = None
    _kinds: np.ndarray | None = field(default=None, repr=False)  # ``kind`` as numpy, built once

    def kind_array(self) -> np.ndarray:
        """``kind`` as an int64 numpy array (cached)."""
        if self._kinds is None or len(self._kinds) != self.n:
            self._kinds = np.asarray(self.kind, dtype=np.int64)
        return self._kinds


def channels(prog: Program) -> tuple[np.ndarray, int]:
    """Dense message-channel ids: SENDs and RECVs of the same (tag mod 5e8, src, dst, size) share one id
    (``-1`` for other nodes); also returns the number of channels. Computed with numpy so the
    engine matches messages with a list index instead of hashing a 4-tuple per message."""
    kinds = prog.kind_array()
    idx = np.flatnonzero((kinds == K_SEND) | (kinds == K_RECV))
    chan = np.full(prog.n, -1, dtype=np.int64)
    if not idx.size:
        return chan, 0
    rank = np.frombuffer(prog.rank, dtype=np.int32)[idx].astype(np.int64)
    peer = np.frombuffer(prog.peer, dtype=np.int32)[idx].astype(np.int64)
    is_send = kinds[idx] == K_SEND
    span = int(max(rank.max(), peer.max())) + 1
    key = np.where(is_send, rank, peer) * span + np.where(is_send, peer, rank)  # src * span + dst
    top = span * span
    tagx = np.frombuffer(prog.tagx, dtype=np.int64)[idx]
    low = tagx & 0xFFFFFFFF
    tagx = tagx - low + low % NATIVE_TAGS  # ASTRA-sim folds tags into its native range
    for col in (tagx, np.frombuffer(prog.size, dtype=np.int64)[idx]):
        lo = int(col.min())
        if lo == int(col.max()):
            continue  # one value: adds nothing to the key
        spread = int(col.max()) - lo + 1
        if top * spread >= 1 << 62:  # factorize the column (and the key so far) to stay in int64
            uk, key = np.unique(key, return_inverse=True)
            uc, col = np.unique(col, return_inverse=True)
            top, spread, lo = len(uk), len(uc), 0
        key = key * spread + (col - lo)
        top *= spread
    if top <= max(1 << 22, 4 * key.size):  # small key range: dense renumbering without a sort
        present = np.zeros(top, dtype=np.int64)
        present[key] = 1
        ids = np.cumsum(present) - 1
        chan[idx] = ids[key]
        return chan, int(ids[-1]) + 1
    uniq, inv = np.unique(key, return_inverse=True)
    chan[idx] = inv
    return chan, len(uniq)


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


def program_from_algorithm(alg: Algorithm, reduction_GBps: float | None = None) -> Program:
    """Flatten a bound algorithm (algorithm rank k runs on NPU k)."""
    graphs = alg.graphs
    nr = len(graphs)
    lens = np.fromiter((len(g) for g in graphs), dtype=np.int64, count=nr)
    offsets = np.zeros(nr + 1, dtype=np.int64)
    np.cumsum(lens, out=offsets[1:])
    n = int(offsets[-1])
    if n == 0:
        raise SimulationError(f"algorithm {alg.name or alg.collective!s} has no nodes", hint="nothing to simulate")

    def cat(col: str) -> np.ndarray:
        return np.concatenate([getattr(g, col) for g in graphs]) if nr else np.zeros(0)

    kind = cat("kind").astype(np.int64)
    peer = cat("peer").astype(np.int64)
    tag = cat("tag").astype(np.int64)
    size = cat("size").astype(np.int64)
    duration = cat("duration").astype(np.int64)
    ids = cat("ids").astype(np.int64)
    rank = np.repeat(np.arange(nr, dtype=np.int64), lens)

    comm = (kind == K_SEND) | (kind == K_RECV)
    bad = comm & (size < 0)
    if bad.any():
        g = int(np.argmax(bad))
        r = int(rank[g])
        raise SimulationError(
            f"rank {r} node {int(ids[g])}: message size unknown (algorithm not bound to a byte size)",
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
    if (tag < 0).any() or (tag >= 1 << 31).any():
        g = int(np.argmax((tag < 0) | (tag >= 1 << 31)))
        raise SimulationError(f"rank {int(rank[g])} node {int(ids[g])}: tag {int(tag[g])} outside 0..2^31-1")

    # global dependencies: child <- parent
    ptr_parts, pos_parts = [], []
    for r, rg in enumerate(graphs):
        if rg.dep_pos.size and (int(rg.dep_pos.min()) < 0 or int(rg.dep_pos.max()) >= len(rg)):
            raise SimulationError(
                f"rank {r}: a dependency points outside the rank's {len(rg)} nodes",
                hint="run the verifier (hub.verify)",
            )
        cnt = np.diff(rg.dep_ptr)
        ptr_parts.append(cnt)
        pos_parts.append(rg.dep_pos.astype(np.int64) + offsets[r])
    indeg = np.concatenate(ptr_parts).astype(np.int64)
    parents = np.concatenate(pos_parts) if pos_parts else np.zeros(0, dtype=np.int64)
    children = np.repeat(np.arange(n, dtype=np.int64), indeg)
    dep_ptr = dep_idx = None
    if bool(np.any(parents > children)):  # a node names a later node: keep the file's dependency order
        dep_ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(indeg, out=dep_ptr[1:])
        dep_idx = parents
    order = np.argsort(parents, kind="stable")
    succ_idx = children[order]
    succ_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(parents, minlength=n), out=succ_ptr[1:])

    dur = comp_ns(duration, size, reduction_GBps)
    dur = np.where(kind == K_COMP, dur, 0)
    sends = kind == K_SEND
    return Program(
        _kinds=kind,
        n=n,
        ranks=nr,
        kind=_to_array(kind, "i"),
        rank=_to_array(rank, "i"),
        peer=_to_array(peer, "i"),
        tagx=_to_array(tag, "q"),
        size=_to_array(size, "q"),
        dur=_to_array(dur, "q"),
        succ_ptr=_to_array(succ_ptr, "q"),
        succ_idx=_to_array(succ_idx, "q"),
        indeg=_to_array(indeg, "q"),
        local_id=_to_array(ids, "q"),
        inst=_to_array(np.zeros(n, dtype=np.int64), "i"),
        messages=int(sends.sum()),
        bytes=int(size[sends].sum()),
        dep_ptr=dep_ptr,
        dep_idx=dep_idx,
    )
