"""The data ops of a thread block (profile §10.3), as a mixin of the block lowerer.

* ``copy``, ``cpkt``, ``upkt``: a COMP COPY per (src, dst) pair; ``cpkt`` writes packets,
  ``upkt`` reads them.
* ``put``, ``pws``, ``pwsf``, ``ppkt``, ``rppkt``: a message per pair, SEND here and RECV COPY on
  the owner; ``pws``/``pwsf`` then signal on the pair's channel.
* ``get``: a pull, SEND on the owner and RECV COPY here.
* ``re res rre rres repkt recpkt respkt recspkt``: the result starts as the first source (a COMP
  COPY into the first local destination unless it is that source); then one COMP REDUCE per
  further local source and one pulled RECV REDUCE per remote source, chained; then a COMP COPY
  to each further local destination and a put to each remote one.
* ``glres``: per other member a pulled RECV REDUCE, then per other member a multicast message.
* ``gstore``, ``gstorepkt``: a local COMP COPY (unless in place), then per other member a
  multicast message.
"""

from __future__ import annotations

from typing import Any

from hub.chakra import ONESIDED as OS

from ._block import BlockCore
from ._model import Access

__all__ = ["DataOps"]

Rng = tuple[int, int, int]


def _is_local(d: dict[str, Any]) -> bool:
    return "type" in d


class DataOps(BlockCore):
    def _pair_check(self, src: Rng, dst: Rng) -> bool:
        if src[2] != dst[2]:
            self.problem(f"source and destination sizes differ ({src[2]} vs {dst[2]} sub-chunks)")
            return False
        return True

    def _op_copy(self) -> None:
        for s, d in zip(self.srcs(), self.dsts(), strict=False):
            if _is_local(s) and _is_local(d):
                src, dst = self.local(s), self.local(d)
                if self._pair_check(src, dst):
                    self.comp(1, src, dst, [])
            else:
                self.problem("copy operands must be local")

    def _op_cpkt(self) -> None:
        for s, d in zip(self.srcs(), self.dsts(), strict=False):
            src, dst = self.local(s), self.local(d, packet=True)
            if self._pair_check(src, dst):
                self.pkt_write(self.r, dst, self.comp(1, src, dst, []))

    def _op_upkt(self) -> None:
        for s, d in zip(self.srcs(), self.dsts(), strict=False):
            src, dst = self.local(s, packet=True), self.local(d)
            if self._pair_check(src, dst):
                self.pkt_read(src, self.comp(1, src, dst, []))

    def _put(self, packet: bool, src_is_packet: bool) -> dict[int, list[int]]:
        ty = self.o.raw.get("channel_type", "memory")
        by_channel: dict[int, list[int]] = {}
        nchan = len(self.o.raw.get("channel_ids", []) or [])
        srcs = self.srcs()
        dsts = self.dsts()
        if self.o.name == "rppkt" and len(srcs) == 1:
            srcs = srcs * len(dsts)
        for i, (s, d) in enumerate(zip(srcs, dsts, strict=False)):
            if not _is_local(s) or _is_local(d):
                self.problem(f"pair {i}: a put goes from a local buffer to a remote one")
                continue
            src = self.local(s, packet=src_is_packet)
            rem = self.remote(d, packet=packet)
            if rem is None:
                continue
            owner, dst = rem
            conn = None
            more: tuple[tuple[str, Any], ...] = ((OS.CHANNEL, ty),)
            j = i if i < nchan else 0
            if ty == "port":
                ch = self.channel(j)
                if ch is None:
                    continue
                if ch[1] != owner:
                    self.problem(f"pair {i}: port channel goes to rank {ch[1]} but the buffer belongs to rank {owner}")
                    continue
                conn = ch[2]
                more += ((OS.CONN, conn),)
            if not self._pair_check(src, dst):
                continue
            send, recv = self.message(self.r, owner, src, dst, 1, OS.EXACT, [], [], local_is_send=True, more=more)
            if src_is_packet:
                self.pkt_read(src, send)
            if packet:
                self.pkt_write(owner, dst, recv)
            else:
                self.low.accesses.append(_access(True, self.r, owner, send, recv, ty, conn))
            by_channel.setdefault(j, []).append(send)
        return by_channel

    def _op_put(self) -> None:
        self._put(False, False)

    def _op_pws(self) -> None:
        self._signal(False, self._put(False, False))

    def _op_pwsf(self) -> None:
        self._signal(False, self._put(False, False))

    def _op_ppkt(self) -> None:
        # memory ppkt wraps data into packets; a port ppkt copies bytes that are packets already
        self._put(True, self.o.raw.get("channel_type") == "port")

    def _op_rppkt(self) -> None:
        self._put(True, True)

    def _op_get(self) -> None:
        for i, (s, d) in enumerate(zip(self.srcs(), self.dsts(), strict=False)):
            if _is_local(s) or not _is_local(d):
                self.problem(f"pair {i}: a get goes from a remote buffer to a local one")
                continue
            rem = self.remote(s)
            if rem is None:
                continue
            owner, src = rem
            dst = self.local(d)
            if self._pair_check(src, dst):
                send, recv = self.message(owner, self.r, src, dst, 1, OS.PULL, [], [], local_is_send=False)
                self.low.accesses.append(_access(False, self.r, owner, recv, send, "memory", None))

    def _reduce(self, packet: bool) -> None:
        srcs, dsts = self.srcs(), self.dsts()
        if not srcs or not dsts or not _is_local(srcs[0]) or not _is_local(dsts[0]):
            self.problem("a reduction needs a local first source and a local first destination")
            return
        first = self.local(srcs[0])
        dst = self.local(dsts[0])
        if not self._pair_check(first, dst):
            return
        local_srcs = [self.local(s, packet=packet) for s in srcs[1:] if _is_local(s)]
        remote_srcs = [s for s in srcs[1:] if not _is_local(s)]
        prev: list[int] = []
        if dst in local_srcs:  # in place on a later source: add the others into it
            local_srcs = [first if x == dst else x for x in local_srcs]
        elif first != dst:
            prev = [self.comp(1, first, dst, [])]
        for src in local_srcs:
            if not self._pair_check(src, dst):
                continue
            n = self.comp(2, src, dst, prev)
            if packet:
                self.pkt_read(src, n)
            prev = [n]
        for s in remote_srcs:
            rem = self.remote(s)
            if rem is None or not self._pair_check(rem[1], dst):
                continue
            owner, src = rem
            send, recv = self.message(owner, self.r, src, dst, 2, OS.PULL, [], prev, local_is_send=False)
            self.low.accesses.append(_access(False, self.r, owner, recv, send, "memory", None))
            prev = [recv]
        for d in dsts[1:]:
            if _is_local(d):
                out = self.local(d, packet=packet)
                if self._pair_check(dst, out):
                    n = self.comp(1, dst, out, prev)
                    if packet:
                        self.pkt_write(self.r, out, n)
                continue
            rem = self.remote(d, packet=packet)
            if rem is None or not self._pair_check(dst, rem[1]):
                continue
            owner, out = rem
            more = ((OS.CHANNEL, "memory"),)
            send, recv = self.message(self.r, owner, dst, out, 1, OS.EXACT, prev, [], local_is_send=True, more=more)
            if packet:
                self.pkt_write(owner, out, recv)
            else:
                self.low.accesses.append(_access(True, self.r, owner, send, recv, "memory", None))

    def _op_re(self) -> None:
        self._reduce(False)

    def _op_res(self) -> None:
        self._reduce(False)

    def _op_rre(self) -> None:
        self._reduce(False)

    def _op_rres(self) -> None:
        self._reduce(False)

    def _op_repkt(self) -> None:
        self._reduce(True)

    def _op_recpkt(self) -> None:
        self._reduce(True)

    def _op_respkt(self) -> None:
        self._reduce(True)

    def _op_recspkt(self) -> None:
        self._reduce(True)

    def _op_glres(self) -> None:
        for s, d in zip(self.srcs(), self.dsts(), strict=False):
            a, b = self.switch(s), self.switch(d)
            if a is None or b is None:
                continue
            group, src = a
            _g2, dst = b
            if not self._pair_check(src, dst):
                continue
            more = ((OS.CHANNEL, "switch"), (OS.GROUP, tuple(group)))
            prev = [self.comp(1, src, dst, [])] if src != dst else []
            others = [g for g in group if g != self.r]
            for g in others:
                send, recv = self.message(
                    g, self.r, src, dst, 2, OS.SWITCH_REDUCE, [], prev, local_is_send=False, more=more
                )
                self.low.accesses.append(_access(False, self.r, g, recv, send, "switch", None))
                prev = [recv]
            for g in others:
                send, recv = self.message(
                    self.r, g, dst, dst, 1, OS.SWITCH_MULTICAST, prev, [], local_is_send=True, more=more
                )
                self.low.accesses.append(_access(True, self.r, g, send, recv, "switch", None))

    def _store(self, packet: bool) -> None:
        for s, d in zip(self.srcs(), self.dsts(), strict=False):
            b = self.switch(d)
            if b is None or not _is_local(s):
                continue
            group, dst = b
            src = self.local(s, packet=packet)
            if not self._pair_check(src, dst):
                continue
            more = ((OS.CHANNEL, "switch"), (OS.GROUP, tuple(group)))
            if src != dst:
                n = self.comp(1, src, dst, [])
                if packet:
                    self.pkt_read(src, n)
                    self.pkt_write(self.r, dst, n)
            for g in group:
                if g == self.r:
                    continue
                send, recv = self.message(
                    self.r, g, src, dst, 1, OS.SWITCH_MULTICAST, [], [], local_is_send=True, more=more
                )
                if packet:
                    self.pkt_read(src, send)
                    self.pkt_write(g, dst, recv)
                else:
                    self.low.accesses.append(_access(True, self.r, g, send, recv, "switch", None))

    def _op_gstore(self) -> None:
        self._store(False)

    def _op_gstorepkt(self) -> None:
        self._store(True)


def _access(write: bool, actor: int, owner: int, local: int, remote: int, channel: str, conn: int | None) -> Access:
    return Access(write, actor, owner, local, remote, channel, conn)
