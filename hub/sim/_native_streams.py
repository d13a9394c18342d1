"""ASTRA-sim's native collectives as streams: chunks, phases across dimensions, per-dimension queues.

Rules, read in ASTRA-sim 518bd51 (``Sys::generate_collective``, ``Sys::determine_chunk_size``,
``Sys::SchedulerUnit``, ``Sys::proceed_to_next_vnet_baseline``, ``QueueLevelHandler``, ``Ring``)
and checked against its binaries (tests/sim/test_native_streams.py):

* **Chunks.** A collective of S bytes is cut into ``ceil(S' / c)`` streams of ``c`` bytes each,
  ``c = S // preferred-dataset-splits`` (if ``c`` is below the NPU count, ``c`` = NPU count and
  ``S' = splits * c``; otherwise ``S' = S``). Every stream has the same phases.
* **Phases.** An all-reduce stream visits the dimensions with more than one NPU:
  ``baseline``: an all-reduce of the whole chunk in each dimension, ascending;
  ``localBWAware``: a reduce-scatter in each dimension but the last (ascending), an all-reduce
  in the last, then an all-gather in each dimension but the last (descending). A phase's data is
  the previous phase's result: reduce-scatter divides it by the dimension's NPU count (integer
  division), all-gather multiplies it back.
* **Directions.** ``baseline`` runs every ring clockwise (to index + 1 in the dimension);
  ``localBWAware`` runs its reduce-scatters and the all-reduce clockwise and its all-gathers
  anticlockwise (``get_next_queue_id_first`` / ``_last`` with one queue per dimension).
* **Queues.** Each dimension has one queue (``--num-queues-per-dim`` 1) in which at most
  ``active-chunks-per-dimension`` streams run at once; the others wait in arrival order (one
  collective's streams share one priority, so ``LIFO``/``FIFO`` never reorders them, and a NPU
  runs one collective at a time). A stream ending a phase joins the next phase's queue and
  leaves its own in the same tick; the waiting stream it makes room for starts first, then the
  stream's next phase (if its queue has room). The engine holds a queue slot from a phase's
  first bus transfer to its last packet's processing (a resource class with k slots).
* **A ring phase** (``Ring.cc``) over m NPUs: all-reduce: ``2(m-1)`` messages of ``D // m``;
  reduce-scatter: ``m-1`` of ``D // m``; all-gather: ``m-1`` of ``D``. The phase starts with a
  bus transfer (``endpoint-delay``); each received message is processed by another bus
  transfer, plus a reduction (``3 * trunc(bytes / local-mem-bw)``) for the first ``m-1``
  received by an all-reduce and for every one received by a reduce-scatter; each processing
  releases the next send, and the phase ends when its last received message is processed.

* **Process groups** (``pg_name``; ``CommunicatorGroup``): a group of every NPU runs as above
  (the network's own rings, whatever order it lists them in). A smaller group runs one
  all-reduce phase on a ring of its members in the order the group lists them (index + 1 is
  the receiver), in dimension 0's queue, with ``localBWAware`` or not; the ring is a *local*
  dimension, so each bus transfer takes 10 ns instead of ``endpoint-delay``. Chunks are still
  sized by the network's NPU count.

Everything here is per rank and static: :func:`stream_plan` gives the chunk count and the phases;
``hub.sim._workload`` turns them into engine nodes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..chakra import Collective

__all__ = ["QUEUE_CLASS", "Phase", "StreamPlan", "chunking", "ring_peers", "stream_plan"]

#: the engine's resource class of dimension d's queue is QUEUE_CLASS + d (classes 1-3: workload)
QUEUE_CLASS = 4
_LOCAL_BUS_NS = 10  # MemBus, Transmition::Fast


@dataclass(frozen=True)
class Phase:
    """One ring phase of a stream: ``kind`` (ALLREDUCE / REDUCESCATTER / ALLGATHER) in ``dim``,
    ``clockwise`` or not, ``msg`` bytes per message, ``after[k]``: ns of the bus transfer and of
    the reduction (0: none) that process message k once received: two events in ASTRA-sim, and
    two engine nodes, so that same-tick events keep ASTRA-sim's order."""

    dim: int
    kind: Collective
    clockwise: bool
    msg: int
    after: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class StreamPlan:
    """A native collective on one NPU: ``chunks`` streams, each running ``phases`` in turn; the
    first bus transfer of a phase takes ``delay`` ns; ``active`` streams per dimension queue."""

    chunks: int
    phases: tuple[Phase, ...]
    delay: int
    active: int


def chunking(size: int, splits: int, npus: int) -> tuple[int, int]:
    """``(streams, bytes per stream)`` of a collective of ``size`` bytes (``determine_chunk_size``)."""
    chunk = size // splits
    total = size
    if npus > chunk:
        chunk = npus
        total = splits * chunk
    return math.ceil(total / chunk), chunk


def _reduce_ns(nbytes: int, bw_GBps: float) -> int:
    # the same double arithmetic as PacketBundle::call: three truncated terms
    return 3 * int(float(nbytes) / (bw_GBps * 1e9) * 1e9)


def _ring_phase(kind: Collective, dim: int, m: int, data: int, cw: bool, delay: int, bw: float) -> tuple[Phase, int]:
    """The phase and the data size it leaves (``Ring``'s ``final_data_size``)."""
    if kind is Collective.ALLREDUCE:
        msg, out, steps, reduced = data // m, data, 2 * (m - 1), m - 1
    elif kind is Collective.REDUCESCATTER:
        msg, out, steps, reduced = data // m, data // m, m - 1, m - 1
    else:  # ALLGATHER
        msg, out, steps, reduced = data, data * m, m - 1, 0
    red = _reduce_ns(msg, bw)
    after = tuple((delay, red if k < reduced else 0) for k in range(steps))
    return Phase(dim, kind, cw, msg, after), out


def stream_plan(
    size: int,
    dims: tuple[int, ...],
    *,
    splits: int,
    delay: int,
    local_mem_bw: float,
    active: int = 1,
    local_bw_aware: bool = False,
    group: int | None = None,
    involved: tuple[bool, ...] | None = None,
) -> StreamPlan:
    """The streams of a native ring all-reduce of ``size`` bytes over a network of ``dims`` NPUs
    per dimension, or over a process group of ``group`` NPUs, fewer than the network's (module doc);
    ``involved``: the node's ``involved_dim`` (dimensions marked false are skipped; ignored in a group)."""
    chunks, chunk = chunking(size, splits, math.prod(dims))
    if group is not None:
        # CommunicatorGroup::get_collective_plan: one ring over the members, a Local dimension
        # (MemBus's Fast transmission: 10 ns per bus transfer, whatever endpoint-delay says)
        ph, _ = _ring_phase(Collective.ALLREDUCE, 0, group, chunk, True, _LOCAL_BUS_NS, local_mem_bw)
        return StreamPlan(chunks, (ph,), _LOCAL_BUS_NS, active)
    used = [d for d, m in enumerate(dims) if m > 1 and (involved is None or involved[d])]
    if local_bw_aware and used:
        *up, last = used
        order = (
            [(d, Collective.REDUCESCATTER, True) for d in up]
            + [(last, Collective.ALLREDUCE, True)]
            + [(d, Collective.ALLGATHER, False) for d in reversed(up)]
        )
    else:
        order = [(d, Collective.ALLREDUCE, True) for d in used]
    phases = []
    data = chunk
    for d, kind, cw in order:
        ph, data = _ring_phase(kind, d, dims[d], data, cw, delay, local_mem_bw)
        phases.append(ph)
    return StreamPlan(chunks, tuple(phases), delay, active)


def ring_peers(npu: int, dims: tuple[int, ...], dim: int, clockwise: bool) -> tuple[int, int]:
    """``(receiver, sender)`` of ``npu`` in dimension ``dim``'s ring (``RingTopology``: the index
    in the ring is the coordinate, dimension 0 varying fastest)."""
    offset = math.prod(dims[:dim])
    m = dims[dim]
    idx = (npu // offset) % m
    up = npu + offset if idx < m - 1 else npu - (m - 1) * offset
    down = npu - offset if idx > 0 else npu + (m - 1) * offset
    return (up, down) if clockwise else (down, up)
