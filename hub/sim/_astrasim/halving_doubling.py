"""ASTRA-sim's native ``halvingDoubling`` (``HalvingDoubling.cc``; ``oneHalvingDoubling`` is the
same on a 1-D network): one packet at a time, each exchanged with a partner at a distance that
changes every step. Only for a power-of-two number of NPUs (``log2`` of anything else truncates
into step counts that never finish); ASTRA-sim has no halving-doubling all-to-all (it exits).

Per chunk of ``c`` bytes on ``n = 2^L`` NPUs, packet k (sends = ``stream_count``):

* all-reduce: ``2L`` sends; distance 1, 2, ..., n/2, then n/2, ..., 1; message ``c/2`` halved
  (truncating) after each step of the first half, doubled after each of the second;
* reduce-scatter: ``L`` sends, distances 1, 2, ..., n/2, messages as the all-reduce's first half;
* all-gather: ``L`` sends, distances n/2, ..., 1, message ``c`` doubled after each step.

The partner at distance ``d`` is ``pos + d`` when ``(pos // d)`` is even, else ``pos - d``.
Packets come in rounds of one bound for the memory and ``L-1`` for the NPU
(:func:`hub.sim._astrasim.ops.round_flags`): in an all-reduce only the first round's are reduced,
so the receipt that ends the reduce-scatter half is not.
"""

from __future__ import annotations

from ...chakra import Collective
from .ops import Packet, Schedule, chain, round_flags

__all__ = ["hd_schedule"]


def _partner(pos: int, dist: int, n: int) -> int:
    if dist == 0:  # (after the last step: the never-sent packet stays home)
        return pos
    return (pos + dist) % n if (pos // dist) % 2 == 0 else (pos - dist) % n


def hd_schedule(coll: Collective, n: int, pos: int, chunk: int, delay: int, bw_GBps: float) -> Schedule:
    """The halving-doubling chunk schedule at position ``pos`` of ``n`` (module doc)."""
    steps = n.bit_length() - 1
    if coll is Collective.ALLREDUCE:
        sends, dist, msg, grow = 2 * steps, 1, chunk // 2, True
    elif coll is Collective.REDUCESCATTER:
        sends, dist, msg, grow = steps, 1, chunk // 2, True
    elif coll is Collective.ALLGATHER:
        sends, dist, msg, grow = steps, n // 2, chunk, False
    else:  # (refused before)
        raise ValueError(f"no native halving-doubling {coll.value}")
    flags = round_flags(sends + 1, 1, steps - 1, coll is Collective.ALLREDUCE, coll is Collective.REDUCESCATTER)
    packets = []
    for f in flags:
        p = _partner(pos, dist, n)
        packets.append(Packet(msg, p, p, f))
        if grow:
            dist, msg = dist * 2, msg // 2
            if dist == n and coll is Collective.ALLREDUCE:  # the turn: back down, same size again
                dist, msg, grow = dist // 2, msg * 2, False
        else:
            dist, msg = dist // 2, msg * 2
    return chain(packets, delay, bw_GBps)
