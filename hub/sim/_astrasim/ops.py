"""What one rank does in one phase of a stream of an ASTRA-sim native collective, as data.

A native algorithm's schedule (``ring``, ``halving_doubling``, ``direct``,
``double_binary_tree``) is a pure function of the settings, the collective the phase runs, the number
of NPUs it runs over (a network dimension, or a process group), the rank's position among them
and the phase's bytes (in the modules: "chunk", ``c``, ``n``); it returns a :data:`Schedule`: a
small DAG of :class:`Op` (bus transfers and reductions as timed COMPs, SENDs, RECVs, joins) and
the op whose completion ends the phase (ASTRA-sim's ``exit()``). ``hub.sim._astrasim.streams``
says which phases a stream has; ``hub.sim._astrasim.workload`` turns them into program nodes.

Rules shared by every algorithm (ASTRA-sim 518bd51, ``PacketBundle``/``MemBus`` without
``model-shared-bus``):

* every packet passes the memory bus once: ``endpoint-delay`` ns (10 ns in a process group
  smaller than the network, a local dimension), whichever way it goes;
* a packet that needs processing (a reduction) then takes ``3 * trunc(bytes / local-mem-bw)``
  ns more (two reads and a write, each truncated to whole ns), ``bytes`` being the packet's own
  message size: a second event, registered when the bus one fires, so a second op
  (:func:`processing`), and same-tick events keep ASTRA-sim's order;
* a SEND is issued with the RECV the same step posts, SEND first (``ready()``); ops that become
  ready together are issued in list order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .._engine.program import K_COMP, K_NOP, K_RECV, K_SEND

__all__ = ["Op", "Packet", "Schedule", "chain", "processing", "reduce_ns", "round_flags"]


@dataclass(frozen=True)
class Op:
    """One engine node of a chunk: ``peer`` is a position in the group; ``deps`` index ops of the
    same chunk (empty: the chunk's start). ``need`` > 0 makes it a quorum join: released by the
    ``need``-th of ``deps`` to finish, in event order; ``arm`` (an op index) gates it: released by
    the first such completion at which ``arm`` has finished too (``hub.sim._engine.program.Program.arm``);
    ``seq`` = w > 0 makes a no-op a sequencer: the k-th of its ``deps`` to finish releases the k-th
    w of the ops that depend on it (in op order; ``Program.seq``)."""

    kind: int
    peer: int = -1
    size: int = 0
    dur: int = 0
    deps: tuple[int, ...] = ()
    need: int = 0
    arm: int = -1
    seq: int = 0


#: (ops, indices of the ops whose completion ends the chunk)
Schedule = tuple[tuple[Op, ...], tuple[int, ...]]


@dataclass(frozen=True)
class Packet:
    """One packet of a one-at-a-time algorithm (``parallel_reduce`` 1): after its bus transfer
    (and reduction, when ``processed``) it is sent ``size`` bytes to ``dest`` and a receive from
    ``src`` is posted; the last packet is never sent (its processing ends the chunk)."""

    size: int
    dest: int
    src: int
    processed: bool


def reduce_ns(nbytes: int, bw_GBps: float) -> int:
    """The reduction of ``nbytes`` (PacketBundle::call: the same double arithmetic, three
    truncated terms)."""
    one = int(float(nbytes) / (bw_GBps * 1e9) * 1e9)
    return 3 * one


def processing(ops: list[Op], delay: int, red: int | None, deps: tuple[int, ...]) -> int:
    """Append a packet's bus transfer after ``deps`` and, unless ``red`` is None (not processed),
    its reduction; the index of the last (PacketBundle: the reduction is its own event, registered
    when the bus one fires, even when it takes 0 ns: with several streams in flight that event's
    place among same-tick events decides which stream goes on first)."""
    ops.append(Op(K_COMP, dur=delay, deps=deps))
    if red is not None:
        ops.append(Op(K_COMP, dur=red, deps=(len(ops) - 1,)))
    return len(ops) - 1


def round_flags(count: int, zero: int, nonzero: int, reduce_first: bool, reduce_all: bool) -> list[bool]:
    """Which of ``count`` packets are processed. Packets come in rounds of ``zero`` packets bound
    for the memory (never processed) then ``nonzero`` bound for the NPU; a nonzero packet is
    processed in a reduce-scatter (``reduce_all``) and, in an all-reduce (``reduce_first``), in
    odd rounds only (``insert_packet``'s toggle flips at each round's start)."""
    out: list[bool] = []
    z = nz = 0
    toggle = False
    for _ in range(count):
        if z == 0 and nz == 0:
            z, nz, toggle = zero, nonzero, not toggle
        if z > 0:
            z -= 1
            out.append(False)
        else:
            nz -= 1
            out.append(reduce_all or (reduce_first and toggle))
    return out


def chain(packets: Sequence[Packet], delay: int, bw_GBps: float) -> Schedule:
    """The DAG of a one-at-a-time algorithm: packet i's bus (and reduction), then its SEND and
    RECV; packet i+1's bus starts when that RECV completes; the last packet's bus ends the chunk."""
    ops: list[Op] = []
    after: tuple[int, ...] = ()
    for i, p in enumerate(packets):
        bus = processing(ops, delay, reduce_ns(p.size, bw_GBps) if p.processed else None, after)
        if i == len(packets) - 1:
            return tuple(ops), (bus,)
        ops.append(Op(K_SEND, peer=p.dest, size=p.size, deps=(bus,)))
        ops.append(Op(K_RECV, peer=p.src, size=p.size, deps=(bus,)))
        after = (len(ops) - 1,)
    ops.append(Op(K_NOP, deps=after))
    return tuple(ops), (len(ops) - 1,)
