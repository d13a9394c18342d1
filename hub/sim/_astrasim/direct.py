"""ASTRA-sim's native ``direct`` (``AllToAll.cc``, a ``Ring`` with a window; ``oneDirect`` is the
same on a 1-D network) for all four collectives, with any window ``directN``.

Rules (ASTRA-sim 518bd51), per chunk of ``c`` bytes on ``n`` NPUs, window ``p = min(N, n-1)``
(``direct``: ``n-1``):

* **Sends and messages**: all-reduce ``2(n-1)`` sends of ``c // n`` bytes; reduce-scatter
  ``n-1`` of ``c // n``; all-gather ``n-1`` of ``c``; all-to-all ``n-1`` of ``c // n``.
* **Packets**: ``p`` at stream start, then one per receipt (``p`` + sends in all). Packet ``j``
  goes to position ``pos + 1 + j mod (n-1)`` and posts its receive from ``pos - 1 - j mod (n-1)``.
  Each passes the bus (``endpoint-delay``); packets come in rounds of ``p`` bound for the memory
  then ``p`` for the NPU (:func:`hub.sim._astrasim.ops.round_flags`), and an NPU-bound one is then
  processed (a reduction of the message) in a reduce-scatter, and in an all-reduce's odd rounds.
  The processing is a second event, registered when the bus transfer ends.
* **Send i** (packet ``i``, FIFO) is issued at the ``(i+1)``-th packet to finish (bus, and
  processing if any) *in event order*, which need not be packet ``i``'s own; packet ``p+m-1``
  starts at the ``m``-th receipt, from whichever peer it comes.
* **All-reduce, second half** (``AllToAll::run``): once ``n-1`` sends are out, a finishing
  packet sends nothing until all ``n-1`` first-half receipts are in; the first packet to finish
  after that sends every packet the waiting ones left (at most ``p``), later ones one each.
  So send ``i >= n-1`` is issued at the later of the ``(i+1)``-th finish and the first finish
  after the last first-half receipt.
* The stream ends (``exit()``) when every packet has finished.

Which packet finishes ``k``-th and which receipt comes ``m``-th depend on event order, which no
dependency graph states; the engine counts them (``hub/_native/_sim.c``): a **sequencer** over
the packets' finishes releases send ``i``'s SEND and RECV at the ``(i+1)``-th (``Op.seq`` 2), one over the
receives starts packet ``p+m-1`` at the ``m``-th (``Op.seq`` 1), and a **gated join** (``Op.arm``:
armed by the join of the first-half receives, then released by the next finish) is the first
finish after the last first-half receipt, which the second-half sends also wait for. Each
packet and send adds a bounded number of edges: the schedule is linear in the packets.
"""

from __future__ import annotations

from functools import lru_cache

from ...chakra import Collective
from .._engine.program import K_COMP, K_NOP, K_RECV, K_SEND
from .ops import Op, Schedule, reduce_ns, round_flags

__all__ = ["direct_schedule"]


def _sends(coll: Collective, n: int, chunk: int) -> tuple[int, int]:
    """(sends, message bytes) of one chunk (``Ring``'s constructor, ``AllToAll`` for all-to-all)."""
    if coll is Collective.ALLREDUCE:
        return 2 * (n - 1), chunk // n
    if coll is Collective.ALLGATHER:
        return n - 1, chunk
    if coll in (Collective.REDUCESCATTER, Collective.ALLTOALL):
        return n - 1, chunk // n
    raise ValueError(f"no native direct {coll.value}")  # (refused before)


@lru_cache(maxsize=16)  # (pure: the chunks of one rank's collective share it; small, as n can be large)
def direct_schedule(
    coll: Collective, n: int, pos: int, chunk: int, delay: int, bw_GBps: float, window: int | None = None
) -> Schedule:
    """The direct chunk schedule at position ``pos`` of ``n`` with ``window`` (None: ``n-1``;
    module doc)."""
    p = n - 1 if window is None else min(window, n - 1)
    sends, msg = _sends(coll, n, chunk)
    ar = coll is Collective.ALLREDUCE
    count = p + sends
    flags = round_flags(count, p, p, ar, coll is Collective.REDUCESCATTER)
    red = reduce_ns(msg, bw_GBps)
    # op layout: [bus_j, (proc_j)] per packet; SEND_i, RECV_i per send; the two sequencers; (an
    # all-reduce's last first-half receipt and first finish after it); the end
    sent = count + sum(flags) + 2 * sends
    received = sent + 1
    after = received + 2 if ar else -1  # the first finish after the last first-half receipt
    ops: list[Op] = []
    final: list[int] = []
    first = Op(K_COMP, dur=delay)
    later = Op(K_COMP, dur=delay, deps=(received,))
    for j in range(count):
        ops.append(first if j < p else later)
        if flags[j]:
            ops.append(Op(K_COMP, dur=red, deps=(len(ops) - 1,)))
        final.append(len(ops) - 1)
    for i in range(sends):
        j = i % (n - 1)
        deps = (sent, after) if ar and i >= n - 1 else (sent,)
        ops.append(Op(K_SEND, peer=(pos + 1 + j) % n, size=msg, deps=deps))
        ops.append(Op(K_RECV, peer=(pos - 1 - j) % n, size=msg, deps=deps))
    recv = list(range(sent - 2 * sends + 1, sent, 2))
    ops.append(Op(K_NOP, deps=tuple(final), seq=2))  # sent: finish k issues SEND/RECV k
    ops.append(Op(K_NOP, deps=tuple(recv), seq=1))  # received: receipt m starts packet p+m
    if ar:
        ops.append(Op(K_NOP, deps=tuple(recv[: n - 1])))
        ops.append(Op(K_NOP, deps=tuple(final), need=1, arm=after - 1))
    ops.append(Op(K_NOP, deps=tuple(final)))
    return tuple(ops), (len(ops) - 1,)
