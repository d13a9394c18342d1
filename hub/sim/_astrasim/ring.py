"""ASTRA-sim's native ``ring`` (``Ring.cc``; ``oneRing`` is the same on a 1-D network): one packet
at a time around the ring, to the next position, receiving from the previous one.

Per chunk of ``c`` bytes on ``n`` NPUs (sends = ``stream_count``, message = ``msg_size``):

| collective | sends | message | processed packets |
|---|---|---|---|
| all-reduce | ``2(n-1)`` | ``c // n`` | the first round's ``n-1`` receipts (the reduce-scatter half) |
| reduce-scatter | ``n-1`` | ``c // n`` | every receipt |
| all-gather | ``n-1`` | ``c`` | none |
| all-to-all | ``n(n-1)/2`` | ``c // n`` | none |

Packets come in rounds of one bound for the memory and ``n-1`` for the NPU
(:func:`hub.sim._astrasim.ops.round_flags`); one more packet than sends is inserted (the first at
stream start, then one per receipt), and the stream ends when the last one has passed the bus.
"""

from __future__ import annotations

from ...chakra import Collective
from .ops import Packet, Schedule, chain, round_flags

__all__ = ["ring_schedule"]


def ring_schedule(coll: Collective, n: int, pos: int, chunk: int, delay: int, bw_GBps: float) -> Schedule:
    """The ring's chunk schedule at position ``pos`` of ``n`` (module doc)."""
    if coll is Collective.ALLREDUCE:
        sends, msg = 2 * (n - 1), chunk // n
    elif coll is Collective.REDUCESCATTER:
        sends, msg = n - 1, chunk // n
    elif coll is Collective.ALLGATHER:
        sends, msg = n - 1, chunk
    elif coll is Collective.ALLTOALL:
        sends, msg = n * (n - 1) // 2, chunk // n
    else:  # (refused before: ASTRA-sim has no native one)
        raise ValueError(f"no native ring {coll.value}")
    flags = round_flags(sends + 1, 1, n - 1, coll is Collective.ALLREDUCE, coll is Collective.REDUCESCATTER)
    nxt, prv = (pos + 1) % n, (pos - 1) % n
    return chain([Packet(msg, nxt, prv, f) for f in flags], delay, bw_GBps)
