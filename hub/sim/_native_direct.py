"""ASTRA-sim's native ``direct`` (``AllToAll.cc``, a ``Ring`` with a window; ``oneDirect`` is the
same on a 1-D network) for all four collectives, with any window ``directN``.

Rules (ASTRA-sim 518bd51), per chunk of ``c`` bytes on ``n`` NPUs, window ``p = min(N, n-1)``
(``direct``: ``n-1``):

* **Sends and messages**: all-reduce ``2(n-1)`` sends of ``c // n`` bytes; reduce-scatter
  ``n-1`` of ``c // n``; all-gather ``n-1`` of ``c``; all-to-all ``n-1`` of ``c // n``.
* **Packets**: ``p`` at stream start, then one per receipt (``p`` + sends in all). Packet ``j``
  goes to position ``pos + 1 + j mod (n-1)`` and posts its receive from ``pos - 1 - j mod (n-1)``.
  Each passes the bus (``endpoint-delay``); packets come in rounds of ``p`` bound for the memory
  then ``p`` for the NPU (:func:`hub.sim._native_ops.round_flags`), and an NPU-bound one is then
  processed (a reduction of the message) in a reduce-scatter, and in an all-reduce's odd rounds.
  The processing is a second event, registered when the bus transfer ends.
* **Send i** (packet ``i``, FIFO) is issued at the ``(i+1)``-th packet to finish (bus, and
  processing if any) *in event order*, which need not be packet ``i``'s own: a quorum join over
  the packets (``Op.need``). Packet ``p+m-1`` starts at the ``m``-th receipt, from whichever
  peer it comes: a quorum join over the receives.
* **All-reduce, second half** (``AllToAll::run``): once ``n-1`` sends are out, a finishing
  packet sends nothing until all ``n-1`` first-half receipts are in; the first packet to finish
  after that sends every packet the waiting ones left (at most ``p``), later ones one each.
  So send ``i >= n-1`` is issued at the first packet to finish that is both the ``(i+1)``-th or
  later and after the last first-half receipt: a quorum join gated by that receipt (``Op.arm``).
* The stream ends (``exit()``) when every packet has finished.

Which packet finishes ``k``-th and which receipt comes ``m``-th depend on event order, not on a
dependency graph: the engine counts them (``hub._native._sim``'s quorum and gated joins). The
first ``p`` packets start together with equal bus times, so they finish first and in order: send
``i < p`` waits on packet ``i`` alone. A packet can finish no earlier than the ``(j-2p+3)``-th
(its receipt needs that many sends), so each quorum lists only the candidates that can be
``k``-th. Without an all-reduce and with ``p = n-1``, every send leaves at stream start and the
later packets are alike, so packet ``p+m`` simply follows the ``m``-th receive node.
"""

from __future__ import annotations

from ..chakra import Collective
from ._native_ops import Op, Schedule, reduce_ns, round_flags
from ._program import K_COMP, K_NOP, K_RECV, K_SEND

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
    slack = 2 * p  # a superset of the module doc's bound, for both halves of an all-reduce
    # op layout: [bus_j, (proc_j)] per packet, then SEND_i, RECV_i per send, then the gate and end
    ops: list[Op] = []
    bus: list[int] = []
    final: list[int] = []
    for j in range(count):
        bus.append(len(ops))
        ops.append(Op(K_COMP, dur=delay))  # deps filled below (they name later ops)
        if flags[j]:
            ops.append(Op(K_COMP, dur=red, deps=(len(ops) - 1,)))
        final.append(len(ops) - 1)
    send0 = len(ops)
    recv = [send0 + 2 * i + 1 for i in range(sends)]
    gate = send0 + 2 * sends if ar else -1
    for i in range(sends):
        j = i % (n - 1)
        deps: tuple[int, ...]
        if i < p:
            deps, need = (final[i],), 0
        else:
            deps, need = tuple(final[: min(count, i + 1 + slack)]), i + 1
        arm = gate if ar and i >= n - 1 else -1
        ops.append(Op(K_SEND, peer=(pos + 1 + j) % n, size=msg, deps=deps, need=need, arm=arm))
        ops.append(Op(K_RECV, peer=(pos - 1 - j) % n, size=msg, deps=deps, need=need, arm=arm))
    alike = not ar and p == n - 1 and len(set(flags[p:])) <= 1
    for m in range(1, count - p + 1):  # packet p+m-1 starts at the m-th receipt
        j = p + m - 1
        if alike:
            ops[bus[j]] = Op(K_COMP, dur=delay, deps=(recv[m - 1],))
            continue
        # (an all-reduce's second-half receives are posted after every first-half receipt)
        lo, hi = (0, n - 1) if ar and m <= n - 1 else ((n - 1, sends) if ar else (0, sends))
        cand = tuple(recv[lo : min(hi, lo + m + slack)])
        ops[bus[j]] = Op(K_COMP, dur=delay, deps=cand, need=m - (lo if ar else 0))
    if ar:
        ops.append(Op(K_NOP, deps=tuple(recv[: n - 1])))
    ops.append(Op(K_NOP, deps=tuple(final)))
    return tuple(ops), (len(ops) - 1,)
