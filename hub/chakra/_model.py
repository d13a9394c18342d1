"""In-memory model of a collective algorithm in the collhub collective profile.

An :class:`Algorithm` is one :class:`RankGraph` per rank plus :class:`AlgorithmMeta`.
A rank graph stores its nodes column-wise in numpy arrays (about 60 bytes per node), because
algorithms reach millions of nodes at 1024 ranks and per-node Python objects would not fit the
memory budget. Dependencies are stored CSR-style as *positions* (row indices), not ids.

Build graphs with :class:`RankGraphBuilder` (one call per node) or, for regular algorithms at
scale, :meth:`RankGraph.from_columns` (vectorized). See ``docs/spec/collective-profile.md``.
"""

from __future__ import annotations

import hashlib
import heapq
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from enum import IntEnum, StrEnum
from typing import Any

import numpy as np

from ..errors import UsageError

__all__ = [
    "Algorithm",
    "AlgorithmMeta",
    "Buffer",
    "Collective",
    "NodeType",
    "NodeView",
    "Op",
    "RankGraph",
    "RankGraphBuilder",
    "chunk_bytes",
    "reference_chunks",
]


class NodeType(IntEnum):
    """Chakra ``NodeType`` values (et_def.proto)."""

    INVALID = 0
    METADATA = 1
    MEM_LOAD = 2
    MEM_STORE = 3
    COMP = 4
    SEND = 5
    RECV = 6
    COLL = 7


class Buffer(IntEnum):
    """Which per-rank buffer a chunk offset refers to."""

    NONE = -1
    INPUT = 0
    OUTPUT = 1
    SCRATCH = 2


class Op(IntEnum):
    """What a RECV or COMP node does with data.

    RECV: COPY overwrites the destination with the received chunks, REDUCE combines them into it.
    COMP: NONE is a cost-only node, COPY/REDUCE are local ``dst := src`` / ``dst := dst (+) src``.
    SEND nodes always use NONE.
    """

    NONE = 0
    COPY = 1
    REDUCE = 2


class Collective(StrEnum):
    """Collective kinds of the profile (spelled like MSCCL-IR's executor names)."""

    ALLREDUCE = "allreduce"
    ALLGATHER = "allgather"
    REDUCESCATTER = "reducescatter"
    ALLTOALL = "alltoall"
    BROADCAST = "broadcast"
    REDUCE = "reduce"
    GATHER = "gather"
    SCATTER = "scatter"
    CUSTOM = "custom"

    @classmethod
    def parse(cls, value: str | Collective) -> Collective:
        """Accept the spellings used across tools: ``all_reduce``, ``reduce_scatter``, ``AllReduce``."""
        if isinstance(value, Collective):
            return value
        key = str(value).strip().lower().replace("_", "").replace("-", "")
        for member in cls:
            if member.value == key:
                return member
        from .._suggest import did_you_mean

        names = [m.value for m in cls]
        guess = did_you_mean(key, names)
        raise UsageError(
            f"unknown collective {value!r}" + (f" (did you mean {guess}?)" if guess else ""),
            hint="one of: " + ", ".join(names) + " (any case; '_' and '-' are ignored, e.g. all_reduce)",
        )


#: Chakra ``CollectiveCommType`` values for workload COMM_COLL nodes.
COMM_TYPE_OF: dict[Collective, int] = {
    Collective.ALLREDUCE: 0,
    Collective.REDUCE: 1,
    Collective.ALLGATHER: 2,
    Collective.GATHER: 3,
    Collective.SCATTER: 4,
    Collective.BROADCAST: 5,
    Collective.ALLTOALL: 6,
    Collective.REDUCESCATTER: 7,
}


@dataclass(frozen=True)
class AlgorithmMeta:
    """Per-algorithm facts, written to every rank file's GlobalMetadata.

    ``in_chunks``/``out_chunks``/``scratch_chunks`` are the per-rank buffer sizes in chunks.
    For an in-place algorithm the output aliases the input as the collective defines (see the
    profile spec); ``out_chunks`` still states the logical output size.
    ``size`` is the bound collective size in bytes (nccl-tests definition), or None if symbolic.
    """

    collective: Collective
    ranks: int
    in_chunks: int
    out_chunks: int
    scratch_chunks: int = 0
    inplace: bool = False
    root: int = 0
    name: str = ""
    producer: str = ""
    size: int | None = None
    extra: tuple[tuple[str, str | int | float | bool], ...] = ()

    @property
    def reference_chunks(self) -> int:
        return reference_chunks(self.collective, self.in_chunks, self.out_chunks)


def reference_chunks(collective: Collective, in_chunks: int, out_chunks: int) -> int:
    """Chunks of the buffer whose byte size is the collective size (nccl-tests' definition).

    all-gather and gather are measured by their output, everything else by its input.
    """
    if collective in (Collective.ALLGATHER, Collective.GATHER):
        return max(out_chunks, 1)
    return max(in_chunks, 1)


def chunk_bytes(size: int, chunks: int) -> int:
    """Bytes of one chunk when ``size`` bytes are cut into ``chunks`` chunks.

    Sizes that do not divide evenly are rounded *up*: every chunk is ``ceil(size / chunks)``
    bytes, so no byte is lost and a sender and its receiver always agree on a message's size
    (at most ``chunks - 1`` bytes of padding per buffer).
    """
    if size < 0:
        raise UsageError(f"collective size must be >= 0 bytes, got {size}")
    return -(-size // max(chunks, 1))


# Column names and dtypes of a rank graph; the order is the canonical one for hashing.
_COLUMNS: tuple[tuple[str, Any, int], ...] = (
    ("ids", np.int64, 0),
    ("kind", np.int8, 0),
    ("peer", np.int32, -1),
    ("tag", np.int32, 0),
    ("count", np.int32, 0),
    ("src_buf", np.int8, -1),
    ("src_off", np.int32, -1),
    ("dst_buf", np.int8, -1),
    ("dst_off", np.int32, -1),
    ("op", np.int8, 0),
    ("size", np.int64, -1),
    ("duration", np.int64, -1),
    ("tb", np.int32, -1),
    ("chan", np.int32, 0),
)
COLUMN_NAMES: tuple[str, ...] = tuple(c[0] for c in _COLUMNS)


@dataclass(frozen=True)
class NodeView:
    """A read-only, per-node view (convenient, slow; use columns for bulk work)."""

    pos: int
    id: int
    kind: NodeType
    peer: int
    tag: int
    count: int
    src_buf: Buffer
    src_off: int
    dst_buf: Buffer
    dst_off: int
    op: Op
    size: int
    duration: int
    tb: int
    chan: int
    deps: tuple[int, ...]  # positions
    name: str | None = None


class RankGraph:
    """The nodes of one rank, column-wise.

    Columns (numpy arrays of equal length ``n``):
    ``ids`` (int64 Chakra node id), ``kind`` (NodeType), ``peer`` (SEND: destination rank,
    RECV: source rank, else -1), ``tag``, ``count`` (chunks), ``src_buf``/``src_off``,
    ``dst_buf``/``dst_off`` (Buffer and chunk offset, -1 when unused), ``op`` (Op), ``size``
    (bytes, -1 = not bound), ``duration`` (COMP µs, -1 = unset), ``tb`` (threadblock, -1 unset),
    ``chan`` (channel). ``dep_ptr`` (int64, n+1) and ``dep_pos`` (int32) hold dependencies as
    positions: node i depends on ``dep_pos[dep_ptr[i]:dep_ptr[i+1]]``.
    ``names`` is an optional list of node names; ``extra`` maps a position to foreign attributes
    that the profile does not interpret (kept for a faithful round trip).
    """

    __slots__ = (*COLUMN_NAMES, "dep_ptr", "dep_pos", "names", "extra")

    ids: np.ndarray
    kind: np.ndarray
    peer: np.ndarray
    tag: np.ndarray
    count: np.ndarray
    src_buf: np.ndarray
    src_off: np.ndarray
    dst_buf: np.ndarray
    dst_off: np.ndarray
    op: np.ndarray
    size: np.ndarray
    duration: np.ndarray
    tb: np.ndarray
    chan: np.ndarray
    dep_ptr: np.ndarray
    dep_pos: np.ndarray
    names: list[str] | None
    extra: dict[int, tuple[tuple[str, Any], ...]]

    def __init__(self) -> None:  # use from_columns / RankGraphBuilder
        for name, dtype, _ in _COLUMNS:
            setattr(self, name, np.zeros(0, dtype=dtype))
        self.dep_ptr = np.zeros(1, dtype=np.int64)
        self.dep_pos = np.zeros(0, dtype=np.int32)
        self.names = None
        self.extra = {}

    @classmethod
    def from_columns(
        cls,
        n: int,
        *,
        dep_ptr: np.ndarray | None = None,
        dep_pos: np.ndarray | None = None,
        names: list[str] | None = None,
        extra: dict[int, tuple[tuple[str, Any], ...]] | None = None,
        **columns: Any,
    ) -> RankGraph:
        """Build a graph from whole columns; missing columns take their defaults.

        ``ids`` defaults to ``0..n-1``. Scalars broadcast. Without ``dep_ptr`` no node has deps.
        """
        unknown = set(columns) - set(COLUMN_NAMES)
        if unknown:
            raise TypeError(f"unknown column(s): {sorted(unknown)}")
        g = cls.__new__(cls)
        for name, dtype, default in _COLUMNS:
            if name in columns:
                arr = np.asarray(columns[name], dtype=dtype)
                if arr.ndim == 0:
                    arr = np.full(n, arr, dtype=dtype)
            elif name == "ids":
                arr = np.arange(n, dtype=np.int64)
            else:
                arr = np.full(n, default, dtype=dtype)
            if arr.shape != (n,):
                raise ValueError(f"column {name} has shape {arr.shape}, expected ({n},)")
            setattr(g, name, arr)
        if dep_ptr is None:
            g.dep_ptr = np.zeros(n + 1, dtype=np.int64)
            g.dep_pos = np.zeros(0, dtype=np.int32)
        else:
            g.dep_ptr = np.asarray(dep_ptr, dtype=np.int64)
            g.dep_pos = np.asarray(dep_pos if dep_pos is not None else [], dtype=np.int32)
            if g.dep_ptr.shape != (n + 1,):
                raise ValueError("dep_ptr must have n+1 entries")
        g.names = names
        g.extra = dict(extra or {})
        return g

    # -- size and access -------------------------------------------------------------------
    def __len__(self) -> int:
        return int(self.ids.shape[0])

    def deps_of(self, pos: int) -> np.ndarray:
        """Positions the node at ``pos`` depends on."""
        return self.dep_pos[self.dep_ptr[pos] : self.dep_ptr[pos + 1]]

    def node(self, pos: int) -> NodeView:
        return NodeView(
            pos=pos,
            id=int(self.ids[pos]),
            kind=NodeType(int(self.kind[pos])),
            peer=int(self.peer[pos]),
            tag=int(self.tag[pos]),
            count=int(self.count[pos]),
            src_buf=Buffer(int(self.src_buf[pos])),
            src_off=int(self.src_off[pos]),
            dst_buf=Buffer(int(self.dst_buf[pos])),
            dst_off=int(self.dst_off[pos]),
            op=Op(int(self.op[pos])),
            size=int(self.size[pos]),
            duration=int(self.duration[pos]),
            tb=int(self.tb[pos]),
            chan=int(self.chan[pos]),
            deps=tuple(int(d) for d in self.deps_of(pos)),
            name=self.names[pos] if self.names is not None else None,
        )

    def nodes(self) -> Iterator[NodeView]:
        for pos in range(len(self)):
            yield self.node(pos)

    def topological_rank(self) -> np.ndarray | None:
        """Each node's index in a deterministic topological order (the lowest position first
        among ready nodes), or None if the dependencies contain a cycle.

        Positions come back unchanged when every dependency points to an earlier position (what
        the builder and all producers emit), which costs no per-node Python work.
        """
        n = len(self)
        ptr = self.dep_ptr
        owner = np.repeat(np.arange(n), np.diff(ptr))
        deps = self.dep_pos[: ptr[-1]]
        if not np.any(deps >= owner):
            return np.arange(n, dtype=np.int64)
        indeg = np.diff(ptr).tolist()
        succ = owner[np.argsort(deps, kind="stable")].tolist()
        sptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(deps, minlength=n), out=sptr[1:])
        sp = sptr.tolist()
        heap = [v for v in range(n) if indeg[v] == 0]
        heapq.heapify(heap)
        rank = np.full(n, -1, dtype=np.int64)
        k = 0
        while heap:
            v = heapq.heappop(heap)
            rank[v] = k
            k += 1
            for s in succ[sp[v] : sp[v + 1]]:
                indeg[s] -= 1
                if indeg[s] == 0:
                    heapq.heappush(heap, s)
        return rank if k == n else None

    def position_of(self) -> dict[int, int]:
        """Map Chakra node id -> position."""
        return {int(i): p for p, i in enumerate(self.ids.tolist())}

    def copy(self) -> RankGraph:
        g = RankGraph.__new__(RankGraph)
        for name in COLUMN_NAMES:
            setattr(g, name, getattr(self, name).copy())
        g.dep_ptr = self.dep_ptr.copy()
        g.dep_pos = self.dep_pos.copy()
        g.names = list(self.names) if self.names is not None else None
        g.extra = dict(self.extra)
        return g

    def nbytes(self) -> int:
        """Memory held by the arrays (names/extra excluded)."""
        return sum(getattr(self, c).nbytes for c in COLUMN_NAMES) + self.dep_ptr.nbytes + self.dep_pos.nbytes

    def digest(self, h: Any) -> None:
        """Feed the graph's content into a hashlib object (names and extras excluded)."""
        for name in COLUMN_NAMES:
            h.update(np.ascontiguousarray(getattr(self, name)).tobytes())
        h.update(self.dep_ptr.tobytes())
        h.update(self.dep_pos.tobytes())


class RankGraphBuilder:
    """Append nodes one at a time; ``build()`` freezes them into a :class:`RankGraph`.

    Every method returns the new node's position, which later nodes name in ``deps``.
    Node ids are the positions unless ``id=`` is given.
    """

    def __init__(self, rank: int) -> None:
        self.rank = rank
        self._cols: dict[str, list[int]] = {name: [] for name in COLUMN_NAMES}
        self._ptr: list[int] = [0]
        self._deps: list[int] = []
        self._names: list[str] | None = None

    def __len__(self) -> int:
        return len(self._ptr) - 1

    def _add(self, deps: Iterable[int], name: str | None, node_id: int | None, **values: int) -> int:
        pos = len(self._ptr) - 1
        cols = self._cols
        for col, _dtype, default in _COLUMNS:
            if col == "ids":
                cols[col].append(pos if node_id is None else node_id)
            else:
                cols[col].append(values.get(col, default))
        for d in deps:
            if d is None:
                continue
            if not 0 <= d < pos:
                raise ValueError(f"rank {self.rank}: dependency {d} of node {pos} is not an earlier node")
            self._deps.append(d)
        self._ptr.append(len(self._deps))
        if name is not None:
            if self._names is None:
                self._names = [""] * pos
            self._names.append(name)
        elif self._names is not None:
            self._names.append("")
        return pos

    def send(
        self,
        peer: int,
        *,
        src: tuple[Buffer | int, int],
        count: int = 1,
        tag: int = 0,
        deps: Iterable[int] = (),
        tb: int = -1,
        chan: int = 0,
        size: int = -1,
        name: str | None = None,
        id: int | None = None,
    ) -> int:
        """A COMM_SEND of ``count`` chunks starting at ``src`` = (buffer, chunk offset) to ``peer``."""
        return self._add(
            deps,
            name,
            id,
            kind=NodeType.SEND,
            peer=peer,
            tag=tag,
            count=count,
            src_buf=int(src[0]),
            src_off=src[1],
            op=Op.NONE,
            size=size,
            tb=tb,
            chan=chan,
        )

    def recv(
        self,
        peer: int,
        *,
        dst: tuple[Buffer | int, int],
        count: int = 1,
        op: Op = Op.COPY,
        tag: int = 0,
        deps: Iterable[int] = (),
        tb: int = -1,
        chan: int = 0,
        size: int = -1,
        name: str | None = None,
        id: int | None = None,
    ) -> int:
        """A COMM_RECV from ``peer`` into ``dst``; ``op`` COPY overwrites, REDUCE combines."""
        return self._add(
            deps,
            name,
            id,
            kind=NodeType.RECV,
            peer=peer,
            tag=tag,
            count=count,
            dst_buf=int(dst[0]),
            dst_off=dst[1],
            op=int(op),
            size=size,
            tb=tb,
            chan=chan,
        )

    def comp(
        self,
        op: Op = Op.NONE,
        *,
        src: tuple[Buffer | int, int] = (Buffer.NONE, -1),
        dst: tuple[Buffer | int, int] = (Buffer.NONE, -1),
        count: int = 0,
        deps: Iterable[int] = (),
        duration_micros: int = -1,
        tb: int = -1,
        chan: int = 0,
        size: int = -1,
        name: str | None = None,
        id: int | None = None,
    ) -> int:
        """A COMP node: a local copy/reduce of ``count`` chunks, or a cost-only node (Op.NONE)."""
        return self._add(
            deps,
            name,
            id,
            kind=NodeType.COMP,
            count=count,
            src_buf=int(src[0]),
            src_off=src[1],
            dst_buf=int(dst[0]),
            dst_off=dst[1],
            op=int(op),
            duration=duration_micros,
            size=size,
            tb=tb,
            chan=chan,
        )

    def build(self) -> RankGraph:
        n = len(self)
        cols: dict[str, Any] = {
            name: np.asarray(vals, dtype=dt) for (name, dt, _), vals in zip(_COLUMNS, self._cols.values(), strict=False)
        }
        return RankGraph.from_columns(
            n,
            dep_ptr=np.asarray(self._ptr, dtype=np.int64),
            dep_pos=np.asarray(self._deps, dtype=np.int32),
            names=self._names,
            **cols,
        )


@dataclass(frozen=True)
class Algorithm:
    """A collective algorithm: metadata plus one graph per rank (index = rank)."""

    meta: AlgorithmMeta
    graphs: tuple[RankGraph, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if len(self.graphs) != self.meta.ranks:
            raise ValueError(f"{len(self.graphs)} rank graphs for an algorithm of {self.meta.ranks} ranks")

    @property
    def ranks(self) -> int:
        return self.meta.ranks

    @property
    def collective(self) -> Collective:
        return self.meta.collective

    @property
    def name(self) -> str:
        return self.meta.name

    def node_count(self) -> int:
        return sum(len(g) for g in self.graphs)

    def message_count(self) -> int:
        return sum(int(np.count_nonzero(g.kind == NodeType.SEND)) for g in self.graphs)

    def nbytes(self) -> int:
        return sum(g.nbytes() for g in self.graphs)

    @property
    def is_bound(self) -> bool:
        """True when every SEND/RECV carries a byte size (asked once per distinct pair of kind and
        size arrays: ranks share them; plain ints, as a NodeType operand costs numpy a failed
        lookup on the enum class per operation)."""
        send, recv = int(NodeType.SEND), int(NodeType.RECV)
        seen: set[tuple[int, int]] = set()
        for g in self.graphs:
            key = (id(g.kind), id(g.size))  # the graphs hold the arrays: no id is reused meanwhile
            if key in seen:
                continue
            comm = (g.kind == send) | (g.kind == recv)
            if np.any(g.size[comm] < 0):
                return False
            seen.add(key)
        return True

    def with_meta(self, **changes: Any) -> Algorithm:
        return Algorithm(replace(self.meta, **changes), self.graphs)

    def bind(self, size: int) -> Algorithm:
        """Return a copy whose SEND/RECV (and costed COMP) nodes carry byte sizes for a collective
        of ``size`` bytes (nccl-tests' definition of size; see :func:`chunk_bytes`)."""
        per_chunk = chunk_bytes(int(size), self.meta.reference_chunks)
        graphs = []
        for g in self.graphs:
            g2 = g.copy()
            sized = g2.kind != NodeType.COLL
            g2.size = np.where(sized & (g2.count > 0), g2.count.astype(np.int64) * per_chunk, g2.size)
            graphs.append(g2)
        return Algorithm(replace(self.meta, size=int(size)), tuple(graphs))

    def content_hash(self) -> str:
        """A stable hash of the algorithm's content (metadata and every column)."""
        h = hashlib.sha256()
        m = self.meta
        h.update(
            repr(
                (str(m.collective), m.ranks, m.in_chunks, m.out_chunks, m.scratch_chunks, m.inplace, m.root, m.size)
            ).encode()
        )
        for g in self.graphs:
            g.digest(h)
        return h.hexdigest()[:16]


def build_algorithm(meta: AlgorithmMeta, builders: Sequence[RankGraphBuilder]) -> Algorithm:
    """Freeze one builder per rank into an :class:`Algorithm`."""
    return Algorithm(meta, tuple(b.build() for b in builders))
