"""An MSCCLang-style language, written for collhub from the published semantics (ASPLOS '23).

A program declares a collective, opens a :class:`MSCCLProgram` context and moves chunks with
:func:`chunk` references::

    from collhub_mscclang.lang import AllReduce, Buffer, MSCCLProgram, chunk

    with MSCCLProgram("ring", AllReduce(4, chunk_factor=4, inplace=True)) as prog:
        for i in range(4):                       # reduce-scatter around the ring
            c = chunk(i, Buffer.input, i)
            for step in range(1, 4):
                c = chunk((i + step) % 4, Buffer.input, i).reduce(c, ch=0)
        ...

* ``ref.copy(rank, buffer, index, ch=, sendtb=, recvtb=)``: local -> a COMP COPY; remote -> a
  SEND on the source rank matched with a RECV(COPY) on the destination.
* ``dst.reduce(src, ch=...)``: reduce ``src`` *into* ``dst``; remote -> SEND + RECV(REDUCE) +
  a cost-only COMP; local -> COMP REDUCE.
* Named buffers other than input/output are scratch buffers, concatenated per rank.
* ``instances=k`` replicates the program k times (tb ids ``tb*k+i``, channels
  ``nchannels*i+ch``, input/output indices interleaved ``index*k+i``, scratch blocked).

The program compiles straight to the collective profile: dependencies come from slot tracking
(read-after-write, write-after-read, write-after-write on physical slots, i.e. after in-place
aliasing), and the transfers of each (sender, receiver, channel) connection are chained so that
FIFO matching pairs them in program order.
"""

from __future__ import annotations

import contextvars
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NamedTuple

from hub.chakra import Algorithm, AlgorithmMeta, Buffer as _Buf, Collective as _Coll, Op, RankGraphBuilder
from hub.errors import AlgorithmError, UsageError

__all__ = [
    "AllGather",
    "AllReduce",
    "AllToAll",
    "Broadcast",
    "Buffer",
    "Check",
    "ChunkRef",
    "Collective",
    "MSCCLProgram",
    "ReduceScatter",
    "XML",
    "args",
    "chunk",
    "current_program",
    "fully_connected",
]


class Buffer:
    """Buffer names: ``Buffer.input``, ``Buffer.output``; any other string names a scratch buffer."""

    input = "input"
    output = "output"
    scratch = "scratch"


@dataclass(frozen=True)
class Collective:
    """A collective declaration: kind, ranks, chunks per rank unit, in-place, root."""

    kind: _Coll
    num_ranks: int
    chunk_factor: int = 1
    inplace: bool = False
    root: int = 0

    def __post_init__(self) -> None:
        if self.num_ranks < 1 or self.chunk_factor < 1:
            raise UsageError(f"{self.kind.value}: num_ranks and chunk_factor must be >= 1")

    @property
    def in_chunks(self) -> int:
        n, c = self.num_ranks, self.chunk_factor
        return n * c if self.kind in (_Coll.REDUCESCATTER, _Coll.ALLTOALL) else c

    @property
    def out_chunks(self) -> int:
        n, c = self.num_ranks, self.chunk_factor
        return n * c if self.kind in (_Coll.ALLGATHER, _Coll.ALLTOALL) else c


def AllReduce(num_ranks: int, chunk_factor: int = 1, inplace: bool = False) -> Collective:  # noqa: N802
    return Collective(_Coll.ALLREDUCE, num_ranks, chunk_factor, inplace)


def AllGather(num_ranks: int, chunk_factor: int = 1, inplace: bool = False) -> Collective:  # noqa: N802
    return Collective(_Coll.ALLGATHER, num_ranks, chunk_factor, inplace)


def ReduceScatter(num_ranks: int, chunk_factor: int = 1, inplace: bool = False) -> Collective:  # noqa: N802
    return Collective(_Coll.REDUCESCATTER, num_ranks, chunk_factor, inplace)


def AllToAll(num_ranks: int, chunk_factor: int = 1, inplace: bool = False) -> Collective:  # noqa: N802
    return Collective(_Coll.ALLTOALL, num_ranks, chunk_factor, inplace)


def Broadcast(num_ranks: int, chunk_factor: int = 1, inplace: bool = False, root: int = 0) -> Collective:  # noqa: N802
    return Collective(_Coll.BROADCAST, num_ranks, chunk_factor, inplace, root)


@dataclass(frozen=True)
class _Topo:
    npus: int


def fully_connected(n: int) -> _Topo:
    """Compatibility helper: msccl-tools programs pass a topology; every pair is allowed here."""
    return _Topo(n)


_current: contextvars.ContextVar[MSCCLProgram | None] = contextvars.ContextVar("mscclang_program", default=None)
_args: contextvars.ContextVar[Mapping[str, Any]] = contextvars.ContextVar("mscclang_args", default=MappingProxyType({}))
_finished: list[MSCCLProgram] = []


def args() -> dict[str, Any]:
    """Keyword arguments given to ``mscclang.program`` as a dict (empty when run as a script)."""
    return dict(_args.get())


def current_program() -> MSCCLProgram:
    prog = _current.get()
    if prog is None:
        raise UsageError("no MSCCLProgram is open: use `with MSCCLProgram(...):`")
    return prog


@dataclass(frozen=True)
class ChunkRef:
    """``size`` consecutive chunks at ``index`` of ``buffer`` on ``rank``."""

    rank: int
    buffer: str
    index: int
    size: int = 1

    def copy(
        self, dst: int, buffer: str | None = None, index: int = -1, sendtb: int = -1, recvtb: int = -1, ch: int = 0
    ) -> ChunkRef:
        """Copy this chunk to (dst, buffer, index); returns the destination reference."""
        buffer = self.buffer if buffer is None else buffer
        index = self.index if index < 0 else index
        target = ChunkRef(dst, buffer, index, self.size)
        current_program()._record("copy", self, target, ch, sendtb, recvtb)
        return target

    def reduce(self, other: ChunkRef, sendtb: int = -1, recvtb: int = -1, ch: int = 0) -> ChunkRef:
        """Reduce ``other`` into this chunk (``self := self (+) other``); returns ``self``."""
        if not isinstance(other, ChunkRef):
            raise UsageError(
                "dst.reduce(src): src must be a chunk reference "
                "(the old src.reduce(rank, buffer, index) signature is not supported)"
            )
        if other.size != self.size:
            raise UsageError(f"reduce of {other.size} chunk(s) into {self.size}")
        current_program()._record("reduce", other, self, ch, sendtb, recvtb)
        return self

    def split(self, n: int) -> list[ChunkRef]:
        if n < 1 or self.size % n:
            raise UsageError(f"cannot split {self.size} chunk(s) into {n}")
        k = self.size // n
        return [ChunkRef(self.rank, self.buffer, self.index + i * k, k) for i in range(n)]

    def group(self, other: ChunkRef) -> ChunkRef:
        if (other.rank, other.buffer, other.index) != (self.rank, self.buffer, self.index + self.size):
            raise UsageError("group() needs the adjacent chunk of the same buffer")
        return ChunkRef(self.rank, self.buffer, self.index, self.size + other.size)


def chunk(rank: int, buffer: str, index: int, size: int = 1) -> ChunkRef:
    """A reference to ``size`` chunks at ``index`` of ``buffer`` on ``rank``."""
    prog = current_program()
    if not 0 <= rank < prog.collective.num_ranks:
        raise UsageError(f"rank {rank} out of range 0..{prog.collective.num_ranks - 1}")
    if index < 0 or size < 1:
        raise UsageError(f"chunk index {index} / size {size} invalid")
    return ChunkRef(rank, buffer, index, size)


@dataclass
class _Op:
    kind: str  # "copy" | "reduce"
    src: ChunkRef
    dst: ChunkRef
    ch: int
    sendtb: int
    recvtb: int


@dataclass
class MSCCLProgram:
    """The program context. ``MSCCLProgram(name, collective, instances=1, protocol="Simple")``;
    an msccl-tools style ``MSCCLProgram(name, topology, collective, instances, ...)`` also works."""

    name: str
    collective: Any
    instances: Any = 1
    protocol: str = "Simple"
    interleaved_replication: bool = True
    threadblock_policy: str = "auto"
    instr_fusion: bool = True
    ops: list[_Op] = field(default_factory=list)
    algorithm: Algorithm | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.collective, Collective):  # (name, topo, collective, instances)
            if isinstance(self.instances, Collective):
                self.collective, self.instances = self.instances, 1
            else:
                raise UsageError("MSCCLProgram needs a collective (AllReduce(...), AllGather(...), ...)")
        if not isinstance(self.instances, int) or self.instances < 1:
            raise UsageError(f"instances must be an integer >= 1, got {self.instances!r}")
        if self.protocol not in ("Simple", "LL", "LL128"):
            raise UsageError(f"protocol {self.protocol!r} is not Simple, LL or LL128")
        self._token: contextvars.Token[Any] | None = None

    def __enter__(self) -> MSCCLProgram:
        self._token = _current.set(self)
        return self

    def __exit__(self, exc_type: Any, *_: Any) -> None:
        if self._token is not None:
            _current.reset(self._token)
        if exc_type is None:
            self.algorithm = _compile(self)
            _finished.append(self)

    def _record(self, kind: str, src: ChunkRef, dst: ChunkRef, ch: int, sendtb: int, recvtb: int) -> None:
        if ch < 0:
            raise UsageError(f"channel {ch} must be >= 0")
        self.ops.append(_Op(kind, src, dst, ch, sendtb, recvtb))

    def lower(self) -> Algorithm:
        """Compile now (normally done when the ``with`` block ends)."""
        return _compile(self)


def XML(out: Any = None, **export: Any) -> None:  # noqa: N802
    """Print the current program as MSCCL-IR (msccl-tools compatibility)."""
    import io
    import os
    import tempfile

    from ._writer import write_msccl_ir

    prog = _current.get() or (_finished[-1] if _finished else None)
    if prog is None:
        raise UsageError("XML(): no program")
    alg = prog.algorithm or _compile(prog)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "p.xml")
        write_msccl_ir(alg, path, proto=prog.protocol, **export)
        text = open(path, encoding="utf-8").read()
    (out if isinstance(out, io.TextIOBase) else sys.stdout).write(text)


def Check() -> bool:  # noqa: N802
    """Verify the current program with ``hub.verify``; prints the problems, returns True if correct."""
    from hub.verify import verify

    prog = _current.get() or (_finished[-1] if _finished else None)
    if prog is None:
        raise UsageError("Check(): no program")
    rep = verify(prog.algorithm or _compile(prog))
    for p in rep.problems:
        print(p)
    return bool(rep.ok)


# -- compilation ---------------------------------------------------------------------------------
#: a node of an op: role 0 = its SEND or COMP, 1 = its RECV, 2 = its last node
_NodeRef = tuple[int, int]
_Slot = tuple[int, int]  # (buffer, chunk) after in-place aliasing


class _Transfer(NamedTuple):
    """One op of one instance, placed in the ranks' buffers."""

    src_rank: int
    dst_rank: int
    src_buf: int
    src_off: int
    dst_buf: int
    dst_off: int
    cnt: int
    reduce: bool
    chan: int
    send_tb: int  # -1: any
    recv_tb: int


@dataclass
class _Layout:
    """Where an MSCCLang chunk of instance ``i`` lives in the algorithm's buffers: named scratch
    buffers in order of first use, each sized by the largest index touched."""

    coll: Any
    instances: int
    interleaved: bool
    scratch_base: dict[str, int]
    scratch_total: int  # chunks of scratch per instance

    def place(self, ref: ChunkRef, i: int) -> tuple[int, int]:
        coll, k = self.coll, self.instances
        if ref.buffer == Buffer.input or ref.buffer == Buffer.output:
            size = coll.in_chunks if ref.buffer == Buffer.input else coll.out_chunks
            if k == 1:
                idx = ref.index
            elif self.interleaved:
                idx = ref.index * k + i
            else:
                idx = size * i + ref.index
            return (int(_Buf.INPUT) if ref.buffer == Buffer.input else int(_Buf.OUTPUT)), idx
        return int(_Buf.SCRATCH), self.scratch_total * i + self.scratch_base[ref.buffer] + ref.index

    def phys(self, rank: int, buf: int, idx: int) -> _Slot:
        """The slot after in-place aliasing (profile rules), so dependencies see shared memory."""
        coll = self.coll
        if coll.inplace:
            if coll.kind in (_Coll.ALLREDUCE, _Coll.ALLTOALL, _Coll.BROADCAST, _Coll.REDUCE) and buf == _Buf.OUTPUT:
                return int(_Buf.INPUT), idx
            if coll.kind is _Coll.ALLGATHER and buf == _Buf.INPUT:
                return int(_Buf.OUTPUT), rank * coll.in_chunks * self.instances + idx
            if coll.kind is _Coll.REDUCESCATTER and buf == _Buf.OUTPUT:
                return int(_Buf.INPUT), rank * coll.out_chunks * self.instances + idx
        return buf, idx


class _Slots:
    """Per rank, the last writer and the readers since of every slot: data dependencies."""

    def __init__(self, n: int) -> None:
        self.writer: list[dict[_Slot, _NodeRef]] = [{} for _ in range(n)]
        self.readers: list[dict[_Slot, list[_NodeRef]]] = [{} for _ in range(n)]

    def deps_for(self, rank: int, reads: list[_Slot], writes: list[_Slot]) -> list[_NodeRef]:
        w, rd = self.writer[rank], self.readers[rank]
        d: list[_NodeRef] = [w[s] for s in reads if s in w]
        for s in writes:
            if s in w:
                d.append(w[s])
            d.extend(rd.get(s, ()))
        return d

    def commit(self, rank: int, ref: _NodeRef, reads: list[_Slot], writes: list[_Slot]) -> None:
        w, rd = self.writer[rank], self.readers[rank]
        for s in reads:
            rd.setdefault(s, []).append(ref)
        for s in writes:
            w[s] = ref
            rd[s] = []


def _compile(prog: MSCCLProgram) -> Algorithm:
    coll: Collective = prog.collective
    n, k = coll.num_ranks, prog.instances
    layout, nchan = _layout(prog)
    ops, deps = _transfers(prog, layout, nchan)
    per_rank, chain = _schedule(ops, deps, n)
    builders = [RankGraphBuilder(r) for r in range(n)]
    _emit(builders, ops, deps, per_rank, chain)
    meta = AlgorithmMeta(
        collective=coll.kind,
        ranks=n,
        in_chunks=coll.in_chunks * k,
        out_chunks=coll.out_chunks * k,
        scratch_chunks=layout.scratch_total * k,
        inplace=coll.inplace,
        root=coll.root,
        name=prog.name,
        producer="mscclang.program",
        extra=(("msccl.proto", prog.protocol), ("msccl.instances", k)),
    )
    return Algorithm(meta, tuple(b.build() for b in builders))


def _layout(prog: MSCCLProgram) -> tuple[_Layout, int]:
    """The buffer layout of the program's chunk references (checked), and its channel count."""
    coll: Collective = prog.collective
    k = prog.instances
    scratch_size: dict[str, int] = {}
    nchan = 1
    for op in prog.ops:
        for ref in (op.src, op.dst):
            if ref.buffer not in (Buffer.input, Buffer.output):
                scratch_size[ref.buffer] = max(scratch_size.get(ref.buffer, 0), ref.index + ref.size)
            else:
                lim = coll.in_chunks if ref.buffer == Buffer.input else coll.out_chunks
                if ref.index + ref.size > lim:
                    raise UsageError(
                        f"chunk({ref.rank}, {ref.buffer!r}, {ref.index}, size={ref.size}) is beyond the "
                        f"{ref.buffer} buffer of {lim} chunk(s)"
                    )
                if k > 1 and prog.interleaved_replication and ref.size > 1:
                    raise UsageError(
                        "interleaved replication supports only single-chunk operations on input/output",
                        hint="use interleaved_replication=False",
                    )
        nchan = max(nchan, op.ch + 1)
    base: dict[str, int] = {}
    total = 0
    for name, size in scratch_size.items():
        base[name] = total
        total += size
    return _Layout(coll, k, prog.interleaved_replication, base, total), nchan


def _transfers(
    prog: MSCCLProgram, layout: _Layout, nchan: int
) -> tuple[list[_Transfer], list[tuple[list[_NodeRef], list[_NodeRef]]]]:
    """Every op of every instance, placed, with its data dependencies from slot tracking on
    physical slots: per op, the deps of its first node and of its RECV."""
    k = prog.instances
    slots = _Slots(prog.collective.num_ranks)
    ops: list[_Transfer] = []
    deps: list[tuple[list[_NodeRef], list[_NodeRef]]] = []
    for i in range(k):
        for op in prog.ops:
            sb, so = layout.place(op.src, i)
            db, do = layout.place(op.dst, i)
            cnt = op.src.size
            if op.dst.size != cnt:
                raise UsageError("source and destination sizes differ")
            src_slots = [layout.phys(op.src.rank, sb, so + j) for j in range(cnt)]
            dst_slots = [layout.phys(op.dst.rank, db, do + j) for j in range(cnt)]
            red = op.kind == "reduce"
            oi = len(ops)
            ops.append(
                _Transfer(
                    op.src.rank,
                    op.dst.rank,
                    sb,
                    so,
                    db,
                    do,
                    cnt,
                    red,
                    nchan * i + op.ch,
                    op.sendtb * k + i if op.sendtb >= 0 else -1,
                    op.recvtb * k + i if op.recvtb >= 0 else -1,
                )
            )
            if op.src.rank == op.dst.rank:
                r = op.src.rank
                reads = src_slots + (dst_slots if red else [])
                deps.append((slots.deps_for(r, reads, dst_slots), []))
                slots.commit(r, (oi, 0), reads, dst_slots)
                continue
            a, b = op.src.rank, op.dst.rank
            d_send = slots.deps_for(a, src_slots, [])
            slots.commit(a, (oi, 0), src_slots, [])
            d_recv = slots.deps_for(b, dst_slots if red else [], dst_slots)
            slots.commit(b, (oi, 2), dst_slots, dst_slots)
            deps.append((d_send, d_recv))
    if not ops:
        raise AlgorithmError(f"program {prog.name!r} moves no chunk")
    return ops, deps


def _schedule(
    ops: list[_Transfer], deps: list[tuple[list[_NodeRef], list[_NodeRef]]], n: int
) -> tuple[list[list[tuple[tuple[int, ...], int, int]]], dict[_NodeRef, _NodeRef]]:
    """MSCCLang-style scheduling: each rank's (key, op, role) nodes in order, and per node the
    previous one on its connection.

    Keys are the depth from the start (chunk step), then the longest distance to a sink
    (priority), then program order. Every data dependency raises the depth, so chaining each
    connection's transfers in key order cannot form a cycle, and the sender and receiver agree
    on that order (FIFO matching by construction).
    """
    m = len(ops)
    depth = [0] * m
    for oi in range(m):
        ds, dr = deps[oi]
        depth[oi] = 1 + max((depth[o] for o, _ in ds + dr), default=0)
    prio = [0] * m
    for oi in range(m - 1, -1, -1):
        ds, dr = deps[oi]
        for o, _ in ds + dr:
            prio[o] = max(prio[o], prio[oi] + 1)
    order = sorted(range(m), key=lambda o: (depth[o], -prio[o], o))
    # each rank's nodes in (depth, sends before receives, priority, program order): the ring
    # pattern "send mine, then receive/reduce/forward" comes out consecutive, ready to fuse
    per_rank: list[list[tuple[tuple[int, ...], int, int]]] = [[] for _ in range(n)]
    chain: dict[_NodeRef, _NodeRef] = {}
    last_on_conn: dict[tuple[int, int, int, int], int] = {}
    for oi in order:
        t = ops[oi]
        a, b = t.src_rank, t.dst_rank
        per_rank[a].append(((depth[oi], 0, -prio[oi], oi, 0), oi, 0))
        if a == b:
            continue
        per_rank[b].append(((depth[oi], 1, -prio[oi], oi, 0), oi, 1))
        if t.reduce:
            per_rank[b].append(((depth[oi], 1, -prio[oi], oi, 1), oi, 2))
        for side in (0, 1):
            prev = last_on_conn.get((side, a, b, t.chan))
            if prev is not None:
                chain[(oi, side)] = (prev, side)
            last_on_conn[(side, a, b, t.chan)] = oi
    for nodes in per_rank:
        nodes.sort()
    return per_rank, chain


def _emit(
    builders: list[RankGraphBuilder],
    ops: list[_Transfer],
    deps: list[tuple[list[_NodeRef], list[_NodeRef]]],
    per_rank: list[list[tuple[tuple[int, ...], int, int]]],
    chain: dict[_NodeRef, _NodeRef],
) -> None:
    """Each rank's nodes in schedule order: COMP for a local op; SEND, RECV and (reduce) the
    reduction's cost-only COMP for a transfer."""
    pos: dict[_NodeRef, int] = {}
    for r, bld in enumerate(builders):
        for _key, oi, role in per_rank[r]:
            t = ops[oi]
            ds, dr = deps[oi]
            if t.src_rank == t.dst_rank:
                node = bld.comp(
                    Op.REDUCE if t.reduce else Op.COPY,
                    src=(t.src_buf, t.src_off),
                    dst=(t.dst_buf, t.dst_off),
                    count=t.cnt,
                    deps=sorted({pos[x] for x in ds}),
                    tb=t.send_tb if t.send_tb >= 0 else t.recv_tb,
                    chan=t.chan,
                )
                pos[(oi, 0)] = pos[(oi, 2)] = node
            elif role == 0:
                d = {pos[x] for x in ds}
                if (oi, 0) in chain:
                    d.add(pos[chain[(oi, 0)]])
                pos[(oi, 0)] = bld.send(
                    t.dst_rank,
                    src=(t.src_buf, t.src_off),
                    count=t.cnt,
                    tag=t.chan,
                    deps=sorted(d),
                    tb=t.send_tb,
                    chan=t.chan,
                )
            elif role == 1:
                d = {pos[x] for x in dr}
                if (oi, 1) in chain:
                    d.add(pos[chain[(oi, 1)]])
                pos[(oi, 1)] = pos[(oi, 2)] = bld.recv(
                    t.src_rank,
                    dst=(t.dst_buf, t.dst_off),
                    count=t.cnt,
                    op=Op.REDUCE if t.reduce else Op.COPY,
                    tag=t.chan,
                    deps=sorted(d),
                    tb=t.recv_tb,
                    chan=t.chan,
                )
            else:  # the reduction's cost; its effect is stated by the RECV(REDUCE)
                pos[(oi, 2)] = bld.comp(Op.NONE, count=t.cnt, deps=[pos[(oi, 1)]], tb=t.recv_tb, chan=t.chan)
