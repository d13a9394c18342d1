"""Shared machinery of the built-in algorithms.

Most built-in algorithms are *rank-symmetric*: every rank runs the same sequence of nodes and
only peers and chunk offsets depend on the rank. :class:`VecBuilder` exploits that. It records a
per-rank *template* once (one Python call per template node, not per node); a field is either a
scalar (the same on every rank) or a numpy array indexed by rank. ``build`` turns the template
into one column matrix per field and slices it into :class:`RankGraph` rows, so a 1024-rank ring
all-reduce (about 5M nodes) costs a few thousand Python calls plus a handful of array copies.
Dependencies are positions, identical on every rank, so all ranks share one CSR dependency array.

Algorithms whose shape differs per rank (trees, rooted collectives) use
:class:`~hub.chakra.RankGraphBuilder` directly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..chakra import Algorithm, AlgorithmMeta, Buffer, Collective, NodeType, Op, RankGraph
from ..chakra._model import _COLUMNS
from ..errors import AlgorithmError

__all__ = [
    "Lane",
    "VecBuilder",
    "check_collective",
    "check_ranks",
    "check_root",
    "ring_phase",
]

Value = int | np.ndarray

#: template nodes per transposed block: 16 int32 of a rank fill one cache line (numpy's plain
#: transposing copy of a (5000, 1024) int32 matrix is about 4x slower than blocks of 16)
_BLOCK = 16

# column -> (dtype, default); the subset of RankGraph columns a template sets
_FIELDS: dict[str, tuple[Any, int]] = {
    "kind": (np.int8, 0),
    "peer": (np.int32, -1),
    "tag": (np.int32, 0),
    "count": (np.int32, 0),
    "src_buf": (np.int8, -1),
    "src_off": (np.int32, -1),
    "dst_buf": (np.int8, -1),
    "dst_off": (np.int32, -1),
    "op": (np.int8, 0),
    "chan": (np.int32, 0),
}


def check_collective(name: str, collective: str | Collective, supported: frozenset[str]) -> Collective:
    """Parse ``collective`` and refuse the ones algorithm ``name`` does not implement."""
    coll = Collective.parse(collective)
    if coll.value not in supported:
        raise AlgorithmError(
            f"{name} does not implement {coll.value}",
            hint=f"{name} supports: {', '.join(sorted(supported))}",
        )
    return coll


def check_ranks(name: str, ranks: int, *, minimum: int = 2) -> int:
    if not isinstance(ranks, (int, np.integer)) or isinstance(ranks, bool) or ranks < minimum:
        raise AlgorithmError(
            f"{name} needs at least {minimum} ranks, got {ranks!r}",
            hint="a collective over one rank has no communication; pass ranks >= 2",
        )
    return int(ranks)


def check_root(name: str, root: int, ranks: int) -> int:
    if not 0 <= root < ranks:
        raise AlgorithmError(
            f"{name}: root {root} is not a rank of a {ranks}-rank collective",
            hint=f"pass root in 0..{ranks - 1}",
        )
    return int(root)


class VecBuilder:
    """Build a rank-symmetric algorithm from a per-rank template (see the module docstring).

    ``r`` is ``arange(ranks)``; use it to compute per-rank peers and offsets. Every method
    returns the template position of the new node, which later nodes name in ``deps``.
    """

    def __init__(self, ranks: int) -> None:
        self.n = ranks
        self.r = np.arange(ranks, dtype=np.int64)
        self._vals: dict[str, list[Value]] = {name: [] for name in _FIELDS}
        self._dep_ptr: list[int] = [0]
        self._deps: list[int] = []
        self._tag = 0

    def __len__(self) -> int:
        return len(self._dep_ptr) - 1

    def new_tag(self) -> int:
        """A tag no other message of this algorithm uses (the same on every rank)."""
        self._tag += 1
        return self._tag - 1

    def _add(self, deps: Iterable[int], **values: Value) -> int:
        pos = len(self)
        for name, (_dtype, default) in _FIELDS.items():
            self._vals[name].append(values.get(name, default))
        for d in dict.fromkeys(deps):  # drop repeats, keep order
            if not 0 <= d < pos:  # pragma: no cover - guards the algorithm code itself
                raise AssertionError(f"template dependency {d} of node {pos} is not an earlier node")
            self._deps.append(d)
        self._dep_ptr.append(len(self._deps))
        return pos

    def send(
        self, peer: Value, buf: Buffer, off: Value, count: int, tag: int, *, deps: Iterable[int] = (), chan: int = 0
    ) -> int:
        return self._add(
            deps, kind=int(NodeType.SEND), peer=peer, tag=tag, count=count, src_buf=int(buf), src_off=off, chan=chan
        )

    def recv(
        self,
        peer: Value,
        buf: Buffer,
        off: Value,
        count: int,
        tag: int,
        *,
        op: Op = Op.COPY,
        deps: Iterable[int] = (),
        chan: int = 0,
    ) -> int:
        return self._add(
            deps,
            kind=int(NodeType.RECV),
            peer=peer,
            tag=tag,
            count=count,
            dst_buf=int(buf),
            dst_off=off,
            op=int(op),
            chan=chan,
        )

    def cost(self, count: int, *, deps: Iterable[int] = (), chan: int = 0) -> int:
        """A cost-only COMP (Op.NONE) standing for the reduction of ``count`` chunks."""
        return self._add(deps, kind=int(NodeType.COMP), count=count, op=int(Op.NONE), chan=chan)

    def copy(
        self,
        src: tuple[Buffer, Value],
        dst: tuple[Buffer, Value],
        count: int,
        *,
        deps: Iterable[int] = (),
        chan: int = 0,
    ) -> int:
        """A local COMP COPY ``dst := src`` of ``count`` chunks."""
        return self._add(
            deps,
            kind=int(NodeType.COMP),
            count=count,
            op=int(Op.COPY),
            src_buf=int(src[0]),
            src_off=src[1],
            dst_buf=int(dst[0]),
            dst_off=dst[1],
            chan=chan,
        )

    def _column(self, name: str) -> np.ndarray:
        """One column for all ranks: a (nodes,) array when every template value is a scalar (the
        same on every rank), else the (ranks, nodes) matrix, rank-major so each row is contiguous."""
        dtype, _default = _FIELDS[name]
        vals = self._vals[name]
        m, n = len(vals), self.n
        is_arr = np.fromiter((isinstance(v, np.ndarray) for v in vals), dtype=bool, count=m)
        scalars = np.fromiter((0 if a else v for v, a in zip(vals, is_arr, strict=False)), dtype=np.int64, count=m)
        if not is_arr.any():
            return scalars.astype(dtype)
        # rank-major, in blocks of template nodes: a small node-major block (cache-resident, reused)
        # is filled one row per node, then written transposed; no (nodes, ranks) temporary
        out = np.empty((n, m), dtype=dtype)
        block = np.empty((_BLOCK, n), dtype=dtype)
        for j0 in range(0, m, _BLOCK):
            j1 = min(j0 + _BLOCK, m)
            for i, v in enumerate(vals[j0:j1]):
                block[i] = v
            out[:, j0:j1] = block[: j1 - j0].T
        return out

    def build(self, meta: AlgorithmMeta) -> Algorithm:
        m = len(self)
        cols = {name: self._column(name) for name in _FIELDS}
        shared: dict[str, Any] = {name: col for name, col in cols.items() if col.ndim == 1}
        per_rank = {name: col for name, col in cols.items() if col.ndim == 2}
        # what does not depend on the rank (dependencies, ids, rank-invariant columns and the
        # columns a template never sets) is one read-only array that every rank shares: no copy
        # per rank, and no caller can change one rank's graph through another's by accident
        shared["dep_ptr"] = np.asarray(self._dep_ptr, dtype=np.int64)
        shared["dep_pos"] = np.asarray(self._deps, dtype=np.int32)
        shared["ids"] = np.arange(m, dtype=np.int64)
        for name, dtype, default in _COLUMNS:
            if name not in cols and name not in shared:
                shared[name] = np.full(m, default, dtype=dtype)
        for arr in shared.values():
            arr.flags.writeable = False
        graphs = [
            RankGraph.from_columns(m, **shared, **{name: mat[rank] for name, mat in per_rank.items()})
            for rank in range(self.n)
        ]
        return Algorithm(meta, tuple(graphs))


@dataclass
class Lane:
    """One independent ring pipeline: a rank's position on the ring, its neighbours, where each
    segment lives, and the nodes the lane's next SEND/RECV must wait for.

    ``off(seg)`` maps a segment-index array (per rank) to chunk offsets in ``buf``.
    """

    pos: np.ndarray
    size: int
    nxt: np.ndarray
    prv: np.ndarray
    off: Callable[[np.ndarray], Value]
    count: int
    buf: Buffer
    chan: int = 0
    ready: list[int] = field(default_factory=list)  # deps of the next SEND
    after: list[int] = field(default_factory=list)  # deps of the next RECV

    def start(self, deps: Sequence[int]) -> None:
        self.ready = list(deps)
        self.after = list(deps)

    @property
    def tail(self) -> list[int]:
        """Nodes after which the lane's data is final (for joins with other phases).

        ``ready`` covers ``after``: it is the last RECV or the cost COMP that depends on it."""
        return list(self.ready)


def ring_phase(vb: VecBuilder, lanes: Sequence[Lane], kind: str, *, reduction_comp: bool) -> None:
    """Append a pipelined ring reduce-scatter (``kind="rs"``) or all-gather (``"ag"``).

    Reduce-scatter over m positions: at step k (0..m-2) position q sends segment q-k-1 to q+1 and
    receives segment q-k-2 from q-1, reducing; afterwards q holds the full sum of segment q.
    All-gather: at step s position q sends segment q-s and receives q-s-1 (copy), starting from
    segment q. As in ASTRA-sim's pipelined ring ET, SEND(k+1) waits for RECV(k) (for its cost
    COMP when reducing) and RECV(k+1) for RECV(k). Each (lane, step) gets its own tag, so FIFO
    pairing never depends on timing. Lanes are emitted step-major, so they interleave.
    """
    if not lanes:
        return
    m = lanes[0].size
    assert all(lane.size == m for lane in lanes)
    reduce = kind == "rs"
    # every step's segments and offsets at once: row k of a (steps, ranks) matrix per lane
    steps = np.arange(m - 1)[:, None]
    first = 1 if reduce else 0
    sends = [_rows(lane.off((lane.pos - steps - first) % m), m - 1) for lane in lanes]
    recvs = [_rows(lane.off((lane.pos - steps - first - 1) % m), m - 1) for lane in lanes]
    for k in range(m - 1):
        for lane, s_off, r_off in zip(lanes, sends, recvs, strict=True):
            tag = vb.new_tag()
            vb.send(lane.nxt, lane.buf, s_off[k], lane.count, tag, deps=lane.ready, chan=lane.chan)
            rv = vb.recv(
                lane.prv,
                lane.buf,
                r_off[k],
                lane.count,
                tag,
                op=Op.REDUCE if reduce else Op.COPY,
                deps=lane.after,
                chan=lane.chan,
            )
            lane.after = [rv]
            lane.ready = [vb.cost(lane.count, deps=[rv], chan=lane.chan)] if reduce and reduction_comp else [rv]


def _rows(offsets: Value, steps: int) -> Sequence[Value]:
    """Per step, the offsets a lane's ``off`` gave for the whole (steps, ranks) segment matrix
    (a scalar offset stays one scalar for every step)."""
    if isinstance(offsets, np.ndarray) and offsets.ndim == 2:
        return list(offsets)
    return [offsets] * steps
