"""ASTRA-sim's native collectives as streams: chunks, phases across dimensions, per-dimension queues.

Rules, read in ASTRA-sim 518bd51 (``Sys::generate_collective``, ``Sys::determine_chunk_size``,
``Sys::SchedulerUnit``, ``Sys::proceed_to_next_vnet_baseline``, ``QueueLevelHandler``,
``GeneralComplexTopology``, ``CommunicatorGroup``) and checked against its binaries
(tests/sim/astrasim/test_streams.py, tests/sim/astrasim/test_algorithms.py):

* **Chunks.** A collective of S bytes is cut into ``ceil(S' / c)`` streams of ``c`` bytes each,
  ``c = S // preferred-dataset-splits``; except in an all-gather, if ``c`` is below the NPU
  count, ``c`` = NPU count and ``S' = splits * c`` (otherwise ``S' = S``). Every stream has the
  same phases.
* **Phases.** A stream visits the dimensions with more than one NPU (and marked in the node's
  ``involved_dim``), each with that dimension's implementation (``"ring"``, ``"direct"``, ... one
  list entry per dimension): ``baseline`` (and any collective but the all-reduce): the whole
  collective in each dimension, ascending (an all-gather descending); ``localBWAware``
  all-reduce: a reduce-scatter in each dimension but the last (ascending), an all-reduce in the
  last, then an all-gather in each dimension but the last (descending). A phase's data is the
  previous phase's result (``final_data_size``: a reduce-scatter divides it by the dimension's
  NPU count, an all-gather multiplies it back, the others, and a double binary tree whatever it
  runs for, keep it).
* **Directions.** ``baseline`` runs every ring clockwise (to index + 1 in the dimension);
  ``localBWAware`` runs its reduce-scatters and the all-reduce clockwise and its all-gathers
  anticlockwise. ``ring`` and ``direct`` follow the direction; ``halvingDoubling`` picks its own
  and ``doubleBinaryTree`` has none.
* **Queues.** Each dimension has one queue (``--num-queues-per-dim`` 1) in which at most
  ``active-chunks-per-dimension`` streams run at once; the others wait in arrival order (one
  collective's streams share one priority, so ``LIFO``/``FIFO`` never reorders them, and a NPU
  runs one collective at a time). A stream ending a phase joins the next phase's queue and
  leaves its own in the same tick; the waiting stream it makes room for starts first, then the
  stream's next phase (if its queue has room). The engine holds a queue slot from a phase's
  first op to the op that ends it (a resource class with k slots).
* **A phase's body** is its algorithm's schedule over the dimension's NPUs (``ring``,
  ``direct``, ``halving_doubling``, ``double_binary_tree``, shared rules in ``ops``), at the
  NPU's position: its coordinate in the dimension (reversed for an anticlockwise ring or direct).
  A double binary tree alternates its two trees per dimension, counted over every phase of the
  collective kind the NPU generated before (``DoubleBinaryTreeTopology::get_topology``).
* **Process groups** (``pg_name``; ``CommunicatorGroup``): a group of every NPU runs as above
  (the network's own dimensions, whatever order it lists them in). A smaller group runs one
  phase of the collective on a ring of its members in the order the group lists them (index + 1
  is the receiver), in dimension 0's queue, with ``localBWAware`` or not; the implementation is
  the list's only entry (``ring`` if it has more); the ring is a *local* dimension, so each bus
  transfer takes 10 ns instead of ``endpoint-delay``. Chunks are still sized by the network's
  NPU count.

Everything here is per rank and static: :func:`stream_plan` gives the chunk count and the phases,
:func:`phase_schedule` a phase's ops; ``hub.sim._astrasim.workload`` turns them into engine nodes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ...chakra import Collective
from .direct import direct_schedule
from .double_binary_tree import dbt_schedule
from .halving_doubling import hd_schedule
from .ops import Schedule
from .ring import ring_schedule

__all__ = ["QUEUE_CLASS", "Phase", "StreamPlan", "chunking", "dimension_members", "phase_schedule", "stream_plan"]

#: the engine's resource class of dimension d's queue is QUEUE_CLASS + d (classes 1-3: workload)
QUEUE_CLASS = 4
_LOCAL_BUS_NS = 10  # MemBus, Transmition::Fast
_FOLLOWS_DIRECTION = frozenset({"ring", "direct"})


@dataclass(frozen=True)
class Phase:
    """One phase of a stream: ``kind`` (the collective the phase runs) with ``algo`` in ``dim``
    (its queue), over ``members`` (NPU ids by position; ``pos``: this NPU's), starting from
    ``data`` bytes, every bus transfer ``delay`` ns; ``clockwise``: the stream's direction."""

    dim: int
    kind: Collective
    algo: str
    clockwise: bool
    members: tuple[int, ...]
    pos: int
    data: int
    delay: int
    window: int | None = None  # directN's N (None: n-1)


@dataclass(frozen=True)
class StreamPlan:
    """A native collective on one NPU: ``chunks`` streams of ``chunk`` bytes, each running
    ``phases`` in turn; ``active`` streams per dimension queue."""

    chunks: int
    chunk: int
    phases: tuple[Phase, ...]
    active: int


def chunking(coll: Collective, size: int, splits: int, npus: int) -> tuple[int, int]:
    """``(streams, bytes per stream)`` of a collective of ``size`` bytes (``determine_chunk_size``)."""
    chunk = size // splits
    total = size
    if coll is not Collective.ALLGATHER and npus > chunk:
        chunk = npus
        total = splits * chunk
    return math.ceil(total / chunk), chunk


def _final(kind: Collective, algo: str, data: int, m: int) -> int:
    # (final_data_size: the same in Ring, AllToAll and HalvingDoubling; DoubleBinaryTreeAllReduce
    # keeps the data, whatever collective it runs for)
    if algo == "doubleBinaryTree":
        return data
    if kind is Collective.REDUCESCATTER:
        return data // m
    if kind is Collective.ALLGATHER:
        return data * m
    return data


def dimension_members(npu: int, dims: tuple[int, ...], dim: int) -> tuple[tuple[int, ...], int]:
    """``(NPUs of npu's ring in dimension dim by coordinate, npu's coordinate)`` (``RingTopology``:
    dimension 0 varies fastest)."""
    offset = math.prod(dims[:dim])
    m = dims[dim]
    idx = (npu // offset) % m
    first = npu - idx * offset
    return tuple(first + j * offset for j in range(m)), idx


def stream_plan(
    coll: Collective,
    size: int,
    npu: int,
    dims: tuple[int, ...],
    impls: Sequence[str],
    *,
    splits: int,
    delay: int,
    active: int = 1,
    local_bw_aware: bool = False,
    group: Sequence[int] | None = None,
    involved: tuple[bool, ...] | None = None,
    windows: Sequence[int | None] = (),
) -> StreamPlan:
    """The streams of NPU ``npu``'s native ``coll`` of ``size`` bytes over a network of ``dims``
    NPUs per dimension served by ``impls`` (one algorithm per dimension), or over a process group
    ``group`` (its members as listed) smaller than the network (module doc); ``involved``: the
    node's ``involved_dim`` (dimensions marked false are skipped; ignored in a group); ``windows``:
    per dimension, a ``directN``'s N (missing or None: ``n-1``)."""
    win = tuple(windows) + (None,) * (len(dims) - len(windows))
    chunks, chunk = chunking(coll, size, splits, math.prod(dims))
    if group is not None:
        # CommunicatorGroup::get_collective_plan: one ring over the members, a Local dimension
        # (MemBus's Fast transmission: 10 ns per bus transfer, whatever endpoint-delay says)
        algo = impls[0] if len(impls) == 1 else "ring"
        w = win[0] if len(impls) == 1 else None
        ph = Phase(0, coll, algo, True, tuple(group), list(group).index(npu), chunk, _LOCAL_BUS_NS, w)
        return StreamPlan(chunks, chunk, (ph,), active)
    used = [d for d, m in enumerate(dims) if m > 1 and (involved is None or involved[d])]
    if coll is Collective.ALLREDUCE and local_bw_aware and used:
        *up, last = used
        order = (
            [(d, Collective.REDUCESCATTER, True) for d in up]
            + [(last, Collective.ALLREDUCE, True)]
            + [(d, Collective.ALLGATHER, False) for d in reversed(up)]
        )
    else:
        order = [(d, coll, True) for d in (reversed(used) if coll is Collective.ALLGATHER else used)]
    phases = []
    data = chunk
    for d, kind, cw in order:
        members, pos = dimension_members(npu, dims, d)
        if not cw and impls[d] in _FOLLOWS_DIRECTION:  # (index + 1 of the reversed ring: index - 1)
            members, pos = members[::-1], len(members) - 1 - pos
        phases.append(Phase(d, kind, impls[d], cw, members, pos, data, delay, win[d]))
        data = _final(kind, impls[d], data, dims[d])
    return StreamPlan(chunks, chunk, tuple(phases), active)


def phase_schedule(ph: Phase, tree_no: int, local_mem_bw: float) -> Schedule:
    """The ops of one phase at the NPU's position (peers are positions in ``ph.members``);
    ``tree_no``: how many double-binary-tree phases of this kind and dimension the NPU generated
    before (which of the two trees)."""
    m = len(ph.members)
    if ph.algo == "ring":
        return ring_schedule(ph.kind, m, ph.pos, ph.data, ph.delay, local_mem_bw)
    if ph.algo == "direct":
        return direct_schedule(ph.kind, m, ph.pos, ph.data, ph.delay, local_mem_bw, ph.window)
    if ph.algo == "halvingDoubling":
        return hd_schedule(ph.kind, m, ph.pos, ph.data, ph.delay, local_mem_bw)
    return dbt_schedule(m, ph.pos, ph.data, tree_no, ph.delay, local_mem_bw)
