"""ASTRA-sim's native ``direct`` (``AllToAll.cc``, a ``Ring`` with a window; ``oneDirect`` is the
same on a 1-D network) for all-gather, reduce-scatter and all-to-all: every peer at once.

With the window ``p`` = ``n-1`` (``direct``, or ``directN`` with N >= n-1) all ``n-1`` packets are
sent at stream start, each after its own bus transfer, to positions ``pos+1, pos+2, ...`` (in
that order), each with a receive posted from ``pos-1, pos-2, ...``. Every receipt passes the bus
(and, in a reduce-scatter, a reduction of the message); the stream ends when the last has.
Messages: all-gather ``c`` bytes, reduce-scatter and all-to-all ``c // n``.

Not here (refused in ``hub.sim._native``): a window below ``n-1``, where which packet goes to
which peer follows the order receipts happen to arrive in, and the all-reduce, whose second
half waits for the first processing to end after the last receipt of the first (a condition on
event order that no dependency graph states).
"""

from __future__ import annotations

from ..chakra import Collective
from ._native_ops import Op, Schedule, processing, reduce_ns
from ._program import K_COMP, K_NOP, K_RECV, K_SEND

__all__ = ["direct_schedule"]


def direct_schedule(coll: Collective, n: int, pos: int, chunk: int, delay: int, bw_GBps: float) -> Schedule:
    """The direct chunk schedule at position ``pos`` of ``n`` (module doc)."""
    if coll is Collective.ALLGATHER:
        msg, red = chunk, None
    elif coll is Collective.REDUCESCATTER:
        msg = chunk // n
        red = reduce_ns(msg, bw_GBps)
    elif coll is Collective.ALLTOALL:
        msg, red = chunk // n, None
    else:  # (refused before)
        raise ValueError(f"no native direct {coll.value} here")
    m = n - 1
    ops = [Op(K_COMP, dur=delay) for _ in range(m)]
    for j in range(1, n):
        ops.append(Op(K_SEND, peer=(pos + j) % n, size=msg, deps=(j - 1,)))
        ops.append(Op(K_RECV, peer=(pos - j) % n, size=msg, deps=(j - 1,)))
    procs = []
    for j in range(m):
        procs.append(processing(ops, delay, red, (m + 2 * j + 1,)))
    ops.append(Op(K_NOP, deps=tuple(procs)))
    return tuple(ops), (len(ops) - 1,)
