"""NCCL 2.30.7's schedules as Chakra ET: per rank, per channel and per protocol chunk, the sends,
receives and reductions NCCL's kernels perform (``src/device/all_reduce.h``, ``all_gather.h``,
``reduce_scatter.h``; ``prims_simple.h``, ``prims_ll.h``, ``prims_ll128.h``).

Rules (each schedule starts from :func:`plan`: NCCL's choice, then its channel/chunk split):

* **Units.** Every message's data is a contiguous range of the user buffer (a slice of a chunk of
  a loop of a channel part); the profile's chunk is the largest unit dividing every range, so the
  verifier checks NCCL's data movement exactly and ``comm_size`` is the message's data bytes.
  LL (16-byte lines of 8 data bytes) and LL128 (128-byte lines of 120) put more on the wire; the
  profile bounds a message by its data share, so that factor is metadata (``nccl_wire_factor``).
* **Ring.** Per channel the ring order of NCCL's search; AllReduce per loop of ``n x chunk``
  (last loop: ``ceil(rem/n)`` rounded up to 16 bytes) sends chunk ``(ix-1)``, reduce-forwards
  n-2 chunks, reduce-copy-forwards its own, copy-forwards n-2, receives the last; AllGather /
  ReduceScatter per chunk n-1 steps. Ring + Simple cuts a call into 2 slices (one message each).
* **Broadcast / Reduce** (Ring only, ``broadcast.h`` / ``reduce.h``): a pipeline along the
  channel's ring, chunk after chunk (one step each; chunkSteps = sliceSteps = 1): Broadcast's
  root sends, the rank before the root only receives, the others receive, keep and forward;
  Reduce's rank after the root sends its data, the others receive, add and forward, the root
  receives the sum.
* **Tree** (AllReduce): per channel NCCL's tree (chain inside nodes, double binary tree across,
  tree 0 on the first half of the channels, tree 1 on the second); per chunk a reduce-up group
  (receive from the children, add, send to the parent) and a broadcast-down group (receive from
  the parent, send to the children) running concurrently, the root reducing and broadcasting.
* **NVLS / NVLSTree** (AllReduce): :mod:`._nvls_schedule` (heads, switch load-reduce and multicast,
  the tree of heads across nodes).
* **Order.** A channel's calls run one after another on its block (each slice's receive waits
  for the previous call), channels in parallel. Flow control (8 slots per connection) is not
  expressed: a receive already waits for its data.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from hub.chakra import Algorithm, AlgorithmMeta, Buffer, Collective, Op, RankGraphBuilder, build_algorithm
from hub.errors import AlgorithmError

from ._constants import NCCL_COMMIT, NCCL_VERSION
from ._explain import elem_size, nccl_bytes
from ._split import Split, split
from ._system import System, make_system, network_of, parse_system
from ._trees import gpu_rings, gpu_trees
from ._tuning import choose

__all__ = ["Plan", "plan", "schedule"]

_COLL = {
    "allreduce": "AllReduce",
    "allgather": "AllGather",
    "reducescatter": "ReduceScatter",
    "broadcast": "Broadcast",
    "reduce": "Reduce",
}
#: NCCL's ring "pattern" collectives (ring steps per loop); Broadcast / Reduce pipeline along the ring
_RING_COLLS = ("AllReduce", "AllGather", "ReduceScatter")
_MODELLED = ("Tree", "Ring", "PAT")
#: NVLS schedules exist for AllReduce (NCCL's AllGather / ReduceScatter NVLS kernels are not modelled)
_MODELLED_NVLS = ("NVLS", "NVLSTree")
_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Plan:
    """What NCCL decides for one call before its kernels run."""

    system: System
    collective: str  # NCCL's name
    size: int  # nccl-tests' size actually used (a whole number of elements per rank)
    count: int  # per-rank element count of the call
    elem: int
    algorithm: str
    protocol: str
    channels: int
    split: Split
    auto: bool
    #: what NCCL itself picks for the call (differs from algorithm/protocol only for NVLS
    #: all-gather / reduce-scatter picks, which have no schedule)
    nccl_pick: str = ""
    #: NCCL's model time of its own pick (µs), and its bytes for tuning (what a tuner plugin sees)
    pick_us: float = 0.0
    nbytes: int = 0
    #: NCCL's own channel count for the scheduled (algorithm, protocol): ``channels`` differs when forced
    default_channels: int = 0
    root: int = 0  # Broadcast / Reduce


def _system_for(system: str | System | None, ranks: int, ppn: int) -> System:
    if ranks % ppn:
        raise AlgorithmError(
            f"ranks {ranks} is not a multiple of gpus_per_node {ppn}", hint="e.g. ranks=32, gpus_per_node=8"
        )
    if system is None:
        return make_system("hopper", ppn, ranks // ppn, 400.0)
    s = parse_system(system)
    if (s.gpus_per_node, s.nodes) != (ppn, ranks // ppn):
        raise AlgorithmError(
            f"system {s.describe()} has {s.gpus_per_node} GPU(s) x {s.nodes} node(s), not {ppn} x {ranks // ppn}",
            hint="make ranks and gpus_per_node match the system",
        )
    return s


def plan(
    collective: str,
    ranks: int,
    size: int,
    *,
    gpus_per_node: int = 1,
    algorithm: str | None = None,
    protocol: str | None = None,
    channels: int | None = None,
    system: str | System | None = None,
    root: int = 0,
) -> Plan:
    """NCCL's algorithm, protocol, channels and split for one call (``None`` = NCCL's choice)."""
    key = collective.replace("-", "").replace("_", "").lower()
    if key not in _COLL:
        raise AlgorithmError(
            f"NCCL schedules here do {collective!r}? not modelled",
            hint="allreduce, allgather, reducescatter, broadcast or reduce",
        )
    coll = _COLL[key]
    if not 0 <= root < ranks:
        raise AlgorithmError(f"root {root} is not a rank of {ranks}", hint=f"0 <= root < {ranks}")
    s = _system_for(system, ranks, gpus_per_node)
    count, nbytes = nccl_bytes(coll, int(size), ranks)
    if count <= 0:
        raise AlgorithmError(f"size {size} gives no element per rank", hint=f"at least {ranks * elem_size(coll)} bytes")
    if algorithm is not None and algorithm.lower().startswith("nvls"):
        _nvls_check(s, coll, algorithm)
    modelled = _MODELLED + (_MODELLED_NVLS if coll == "AllReduce" else ())
    try:
        ch = choose(s, coll, nbytes, algorithm=algorithm, protocol=protocol)
        nccl_pick, pick_us = f"{ch.algorithm}/{ch.protocol}", ch.time_us
        if algorithm is None and ch.algorithm not in modelled:
            # NVLS AllGather / ReduceScatter have no schedule here: take NCCL's best among the
            # modelled ones and say what NCCL itself would run (metadata nccl_pick)
            _log.warning(
                "NCCL picks %s for %s at %d bytes; scheduling the best modelled algorithm", nccl_pick, coll, nbytes
            )
            ch = min(
                (
                    choose(s, coll, nbytes, algorithm=a, protocol=protocol)
                    for a in _MODELLED
                    if _usable(s, coll, a, nbytes, protocol)
                ),
                key=lambda c: c.time_us,
            )
    except ValueError as exc:
        raise AlgorithmError(
            str(exc), hint="NCCL has no such combination on this system (see collhub nccl explain)"
        ) from None
    nvls = ch.algorithm in _MODELLED_NVLS
    comm_channels = s.nvls_channels if nvls else s.channels
    nch = ch.channels if channels is None else min(int(channels), comm_channels)
    sp = split(coll, ch.algorithm, ch.protocol, count, elem_size(coll), ranks=ranks, nodes=s.nodes, channels=nch,
               comm_channels=comm_channels, heads=s.nvls_heads if nvls else 0)  # fmt: skip
    total = count * elem_size(coll) * (ranks if coll in ("AllGather", "ReduceScatter") else 1)
    return Plan(
        s, coll, total, count, elem_size(coll), ch.algorithm, ch.protocol, nch, sp, algorithm is None, nccl_pick,
        pick_us, nbytes, ch.channels, root,
    )  # fmt: skip


def _nvls_check(s: System, coll: str, algorithm: str) -> None:
    """Refuse, with NCCL's reason, an NVLS / NVLSTree schedule NCCL would not run (``tuning.cc``,
    ``enqueue.cc``: NVLS needs NVSwitch multicast, i.e. Hopper or later with >1 GPU per node;
    NVLSTree needs several nodes; NVLS across nodes needs CollNet/SHARP, off by default)."""
    algo = "NVLSTree" if algorithm.lower() == "nvlstree" else "NVLS"
    where = f"{algo} on {s.describe()}"
    if not s.nvls_support:
        why = (
            "1 GPU per node has no NVSwitch"
            if s.gpus_per_node == 1
            else f"{s.gen} (sm{s.sm}) has no NVLink SHARP multicast"
            if s.sm < 90
            else "the system's NVLS graph has no channel"
        )
        raise AlgorithmError(
            f"{where}: NCCL does not enable NVLS: {why}",
            hint="NVLS needs Hopper (or later) NVSwitch nodes with several GPUs, e.g. hopper:8x4; "
            "use nccl.ring or nccl.tree",
        )
    if coll != "AllReduce":
        raise AlgorithmError(
            f"{where}: NCCL's NVLS {coll} kernel is not modelled (only AllReduce)",
            hint="nccl.auto schedules the best modelled algorithm and records NCCL's pick",
        )
    if algo == "NVLSTree" and s.nodes == 1:
        raise AlgorithmError(f"{where}: NCCL disables NVLSTree on one node", hint="use nccl.nvls on one node")
    if algo == "NVLS" and s.nodes > 1:
        raise AlgorithmError(
            f"{where}: NCCL runs NVLS across nodes only with CollNet (SHARP), which is off by default",
            hint="use nccl.nvlstree across nodes",
        )


def _usable(s: System, coll: str, algo: str, nbytes: int, protocol: str | None) -> bool:
    try:
        choose(s, coll, nbytes, algorithm=algo, protocol=protocol)
    except ValueError:
        return False
    return True


# --------------------------------------------------------------------------- ranges
def _divup(a: int, b: int) -> int:
    return -(-a // b)


def _slices(plan_: Plan, nelem: int, chunk_elems: int) -> list[int]:
    """Element counts of the messages one primitive call of ``nelem`` elements posts: Ring + Simple
    cuts it into 2 slices of ``max(ceil(nelem/32) x 16, stepElems x 2 / 32)``; LL/LL128 post one
    step. NCCL also posts a slice (or a last-loop piece) that carries nothing; the profile has no
    zero-chunk message, so those empty posts are left out (no data moves; only a step's latency)."""
    if nelem <= 0:
        return []
    if plan_.algorithm == "Ring" and plan_.protocol == "Simple" and plan_.collective in _RING_COLLS:
        step_elems = (4 << 20) // 8 // plan_.elem
        slice_elems = max(-(-nelem // 32) * 16, step_elems * 2 // 32)
        first = min(slice_elems, nelem)
        return [first, nelem - first] if nelem > first else [first]
    return [nelem]


@dataclass
class _Ranges:
    """Buffer ranges (first element, elements) in buffer order. The profile's chunk is the largest
    unit that divides every range (``unit`` elements): a range is ``size // unit`` chunks from chunk
    ``start // unit``, so every message is whole chunks and binding the algorithm to its size gives
    back NCCL's message sizes exactly."""

    starts: list[int]
    sizes: list[int]
    unit: int = 0

    def add(self, start: int, n: int) -> int:
        if n == 0:  # an empty message: no data, so any offset inside the buffer (kept out of the unit)
            start = self.starts[-1] if self.starts else 0
        self.starts.append(start)
        self.sizes.append(n)
        return len(self.starts) - 1

    def seal(self) -> int:
        """Fix the unit; returns the chunks per rank unit (the buffer's length in units)."""
        import math

        g = 0
        for v in (*self.starts, *self.sizes):
            g = math.gcd(g, v)
        self.unit = max(g, 1)
        return max((a + b for a, b in zip(self.starts, self.sizes, strict=True)), default=0) // self.unit

    def off(self, rng: int) -> int:
        return self.starts[rng] // self.unit

    def cnt(self, rng: int) -> int:
        return self.sizes[rng] // self.unit


def _meta(p: Plan, name: str | None, in_chunks: int, out_chunks: int, extra: tuple[Any, ...] = ()) -> AlgorithmMeta:
    coll = Collective.parse(p.collective.lower())
    chunks = sorted({(q.channel, q.chunk_bytes) for q in p.split.parts})
    return AlgorithmMeta(
        collective=coll,
        ranks=p.system.ranks,
        in_chunks=in_chunks,
        out_chunks=out_chunks,
        inplace=True,
        name=name or f"nccl-{p.algorithm.lower()}-{p.protocol.lower()}-{coll.value}",
        producer=f"nccl.{'auto' if p.auto else p.algorithm.lower()}",
        size=p.size,
        root=p.root,
        extra=(
            ("nccl_version", NCCL_VERSION),
            ("nccl_commit", NCCL_COMMIT),
            ("nccl_algorithm", p.algorithm),
            ("nccl_protocol", p.protocol),
            ("nccl_channels", len(p.split.parts)),
            ("nccl_channel_cap", p.channels),
            ("nccl_chunk_bytes", ",".join(str(b) for _, b in chunks)),
            ("nccl_system", p.system.describe()),
            ("nccl_pick", p.nccl_pick),
            # what `collhub report` needs without importing this plugin (its "vs NCCL" column and
            # `--export nccl-tuner`): NCCL's model time of its pick, its bytes for tuning, the
            # channel count NCCL itself would use, nodes, and the collhub network of the system
            ("nccl_pick_us", round(p.pick_us, 3)),
            ("nccl_nbytes", p.nbytes),
            ("nccl_default_channels", p.default_channels),
            ("nccl_nodes", p.system.nodes),
            ("nccl_network", network_of(p.system)),
            ("nccl_wire_factor", {"LL": 2.0, "LL128": 128 / 120}.get(p.protocol, 1.0)),
            ("gpus_per_node", p.system.gpus_per_node),
            *extra,
        ),
    )


# --------------------------------------------------------------------------- ring
class _Chain:
    """One rank's primitive calls on one ring channel, each waiting for the previous one."""

    def __init__(self, b: RankGraphBuilder, prv: int, nxt: int, channel: int, buf: Buffer, ranges: _Ranges, elem: int):
        self.b, self.prv, self.nxt, self.channel, self.buf, self.ranges, self.elem = (
            b,
            prv,
            nxt,
            channel,
            buf,
            ranges,
            elem,
        )
        self.last: int | None = None

    def call(self, rng: int, recv: bool, send: bool, op: Op, off: int) -> None:
        """``recv`` from prev (copy or reduce into ``off``), then ``send`` it to next."""
        nbytes, k, ch = self.ranges.sizes[rng] * self.elem, self.ranges.cnt(rng), self.channel
        deps = [self.last] if self.last is not None else []
        if recv:
            node = self.b.recv(self.prv, dst=(self.buf, off), count=k, op=op, tag=ch, chan=ch, size=nbytes, deps=deps)
            deps = [node]
        if send:
            node = self.b.send(self.nxt, src=(self.buf, off), count=k, tag=ch, chan=ch, size=nbytes, deps=deps)
        self.last = node


def _ring(p: Plan, name: str | None, *, vectorized: bool = True) -> Algorithm:
    s, n, coll = p.system, p.system.ranks, p.collective
    same = s.nodes == 1 and s.gpus_per_node > 1
    rings = gpu_rings(s.gpus_per_node, s.nodes, s.ring.channels, s.channels, same=same)
    ranges = _Ranges([], [])
    # per channel part: list of loops; a loop is a list over ring pieces j of slice range ids
    # AllReduce: pieces of the whole buffer; AG/RS: per-rank pieces (the same for every rank)
    per_part: list[tuple[int, list[list[list[int]]]]] = []
    for part in p.split.parts:
        chunk = part.chunk_bytes // p.elem
        loops: list[list[list[int]]] = []
        if coll == "AllReduce":
            loop_count = n * chunk
            off = 0
            while off < part.count:
                rem = part.count - off
                # the last, short loop: ceil(rem / n) rounded up to 16 bytes
                align = 16 // p.elem
                ck = chunk if rem >= loop_count else _divup(_divup(rem, n), align) * align
                pieces = []
                for j in range(n):
                    nelem = max(0, min(ck, rem - j * ck))
                    start = part.offset + off + j * ck
                    ids, o = [], 0
                    for sl in _slices(p, nelem, ck):
                        ids.append(ranges.add(start + o, sl))
                        o += sl
                    pieces.append(ids)
                loops.append(pieces)
                off += loop_count
        else:
            off = 0
            while off < part.count:
                nelem = min(chunk, part.count - off)
                ids, o = [], 0
                for sl in _slices(p, nelem, chunk):
                    ids.append(ranges.add(part.offset + off + o, sl))
                    o += sl
                loops.append([ids])
                off += chunk
        per_part.append((part.channel, loops))
    c = ranges.seal()  # chunks per rank unit
    # in place: AllGather works in the output (rank r's input is its slot r), the others in the input
    buf = Buffer.OUTPUT if coll == "AllGather" else Buffer.INPUT
    if coll not in ("AllGather", "ReduceScatter"):
        meta = _meta(p, name, c, c)
    elif coll == "AllGather":
        meta = _meta(p, name, c, n * c)
    else:
        meta = _meta(p, name, n * c, c)
    if max(c * n, 1) >= 1 << 31:
        raise AlgorithmError("this ring schedule needs more than 2^31 chunks", hint="a smaller size or fewer ranks")
    import numpy as np

    from ._ringvec import ring_graphs

    starts = np.asarray(ranges.starts, dtype=np.int64)
    sizes = np.asarray(ranges.sizes, dtype=np.int64)
    vec = vectorized and coll in _RING_COLLS
    graphs = ring_graphs(coll, n, per_part, rings, starts, sizes, ranges.unit, c, p.elem, buf) if vec else None
    if graphs is not None:
        return Algorithm(meta, tuple(graphs))
    builders = [RankGraphBuilder(r) for r in range(n)]
    for channel, loops in per_part:
        order = rings[channel]
        pos = {r: i for i, r in enumerate(order)}
        for r, b in enumerate(builders):
            ix = pos[r]
            nxt, prv = order[(ix + 1) % n], order[ix - 1]

            chain = _Chain(b, prv, nxt, channel, buf, ranges, p.elem)
            call = chain.call

            for pieces in loops:
                if coll == "AllReduce":
                    seq: list[tuple[int, bool, bool, Op]] = [((ix + n - 1) % n, False, True, Op.NONE)]
                    seq += [((ix + n - j) % n, True, True, Op.REDUCE) for j in range(2, n)]
                    seq += [(ix, True, True, Op.REDUCE)]
                    seq += [((ix + n - j) % n, True, True, Op.COPY) for j in range(1, n - 1)]
                    seq += [((ix + 1) % n, True, False, Op.COPY)]
                    for piece, recv, send, op in seq:
                        for rng in pieces[piece]:
                            call(rng, recv, send, op, ranges.off(rng))
                elif coll == "Broadcast":
                    for rng in pieces[0]:
                        if r == p.root:
                            call(rng, False, True, Op.NONE, ranges.off(rng))
                        else:
                            call(rng, True, nxt != p.root, Op.COPY, ranges.off(rng))
                elif coll == "Reduce":
                    for rng in pieces[0]:
                        if prv == p.root:
                            call(rng, False, True, Op.NONE, ranges.off(rng))
                        else:
                            call(rng, True, r != p.root, Op.REDUCE, ranges.off(rng))
                elif coll == "AllGather":
                    # step j carries the data of the rank j places behind on the ring
                    for j in range(n):
                        q = order[(ix - j) % n]
                        for rng in pieces[0]:
                            call(rng, j > 0, j < n - 1, Op.COPY, q * c + ranges.off(rng))
                else:  # ReduceScatter: step j carries the partial sum destined to the rank j+1 behind
                    for j in range(n):
                        q = order[(ix - j - 1) % n]
                        for rng in pieces[0]:
                            call(rng, j > 0, j < n - 1, Op.REDUCE, q * c + ranges.off(rng))
    return build_algorithm(meta, builders)


# --------------------------------------------------------------------------- tree
def _tree(p: Plan, name: str | None) -> Algorithm:
    s, n = p.system, p.system.ranks
    same = s.nodes == 1 and s.gpus_per_node > 1
    trees = gpu_trees(s.gpus_per_node, s.nodes, s.tree.channels, s.channels, s.tree.pattern, same=same)
    ranges = _Ranges([], [])
    per_part: list[tuple[int, list[int]]] = []
    for part in p.split.parts:
        chunk = part.chunk_bytes // p.elem
        ids = [ranges.add(part.offset + o, min(chunk, part.count - o)) for o in range(0, part.count, chunk)]
        per_part.append((part.channel, ids))
    c = ranges.seal()
    builders = [RankGraphBuilder(r) for r in range(n)]
    for channel, ids in per_part:
        links = trees[channel]
        for r, b in enumerate(builders):
            up, downs = links[r].up, links[r].down
            up_last: int | None = None
            down_last: int | None = None
            for rng in ids:
                kw: dict[str, Any] = {
                    "tag": channel,
                    "chan": channel,
                    "size": ranges.sizes[rng] * p.elem,
                    "count": ranges.cnt(rng),
                }
                o = ranges.off(rng)
                deps = [up_last] if up_last is not None else []
                for d in downs:  # reduce from the children, one after the other
                    deps = [b.recv(d, dst=(Buffer.INPUT, o), op=Op.REDUCE, deps=deps, **kw)]
                if up == -1:  # root: the sum is final; broadcast it (one send after the other)
                    for d in downs:
                        deps = [b.send(d, src=(Buffer.INPUT, o), deps=deps, **kw)]
                    up_last = deps[0] if deps else None
                    continue
                sent = b.send(up, src=(Buffer.INPUT, o), deps=deps, **kw)
                up_last = sent
                bdeps = [sent] + ([down_last] if down_last is not None else [])
                got = b.recv(up, dst=(Buffer.INPUT, o), op=Op.COPY, deps=bdeps, **kw)
                down_last = got
                for d in downs:
                    down_last = b.send(d, src=(Buffer.INPUT, o), deps=[down_last], **kw)
    return build_algorithm(_meta(p, name, c, c), builders)


def schedule(p: Plan, name: str | None = None) -> Algorithm:
    """The per-rank Chakra graphs of a :class:`Plan`."""
    if p.algorithm == "Ring":
        return _ring(p, name)
    if p.algorithm == "Tree":
        return _tree(p, name)
    if p.algorithm in _MODELLED_NVLS:
        from ._nvls_schedule import nvls_schedule

        return nvls_schedule(p, name)
    from ._pat_schedule import pat_schedule

    return pat_schedule(p, name)
