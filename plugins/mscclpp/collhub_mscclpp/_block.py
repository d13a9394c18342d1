"""Lowering one thread block: the block's order (segments between ``nop``/``barrier``, thread
chains), its nodes, its operands, and the sync ops (profile §10.3). The data ops are
:class:`._ops.DataOps`, a subclass."""

from __future__ import annotations

from typing import Any

from hub.chakra import ONESIDED as OS

from ._model import COMP, COPY, DATA_TAG_BASE, PACKET_OPS, RECV, SCRATCH, SEND, BlockState, Lowering, PlanProblem
from ._plan import Block, Gpu, Op as PlanOp

__all__ = ["BlockCore"]


class BlockCore:
    """Lowers the ops of one thread block, in order."""

    def __init__(self, low: Lowering, gpu: Gpu, block: Block) -> None:
        self.low, self.g, self.b = low, gpu, block
        self.r = gpu.id
        self.nodes = low.nodes[gpu.id]
        self.st = BlockState()
        self.packet = low.plan.protocol == "LL"

    # -- driving ---------------------------------------------------------------------------
    def run(self) -> None:
        for i, o in enumerate(self.b.ops):
            if o.name == "pipeline":
                k = self.low.iterations.get(id(o), 1)
                self._sync(i, "pipeline", None)
                for it in range(k):
                    for j, body in enumerate(o.body):
                        self._op(i + 1 + j, body, it, k)
                self._sync(i, "pipeline", None)
            else:
                self._op(i, o, 0, 1)

    def _op(self, idx: int, o: PlanOp, it: int, k: int) -> None:
        self.idx, self.o, self.it, self.k = idx, o, it, k
        self._attr_cache: dict[Any, tuple[tuple[str, Any], ...]] = {}
        self.tag = f"tb{self.b.id}/op{idx}/{o.name}" + (f"/it{it}" if k > 1 else "")
        tbg = o.raw.get("tbg_info") or {}
        self.slice = (int(tbg.get("tb_id", 0) or 0), max(int(tbg.get("tbg_size", 1) or 1), 1))
        handler = getattr(self, "_op_" + o.name, None)
        if handler is None:  # every parser op code has a handler; this guards a future one
            self.problem(f"op code {o.name!r} is not lowered")
            return
        handler()

    def problem(self, msg: str) -> None:
        self.low.problems.append(PlanProblem(self.r, self.b.id, self.idx, self.o.name, msg))

    # -- nodes -------------------------------------------------------------------------------
    def _attrs(self, mapping: str, *more: tuple[str, Any]) -> tuple[tuple[str, Any], ...]:
        key = (mapping, more)
        got = self._attr_cache.get(key)
        if got is None:
            base: tuple[tuple[str, Any], ...] = ((OS.OP, self.o.name), (OS.INDEX, self.idx), (OS.MAPPING, mapping))
            if self.k > 1:
                base += ((OS.ITER, self.it),)
            if self.o.name in PACKET_OPS:
                base += ((OS.PROTOCOL, "LL"),)
            got = self._attr_cache[key] = base + more
        return got

    def _base(self) -> list[int]:
        return [self.st.gate] if self.st.gate is not None else []

    def _issue(self, pos: int, ranges: tuple[tuple[int, int, int], ...] = ()) -> int:
        """Add ``pos`` to the segment. LL packet ops give every thread the same packets of equal
        operands, so a packet op on exactly the chunks an earlier packet op of the segment used
        is ordered after it element by element (same thread): an edge."""
        st = self.st
        st.pending.append(pos)
        if ranges and self.o.name in PACKET_OPS:
            for rs, p in st.elementwise:
                if p != pos and any(x in rs for x in ranges):
                    self.nodes.dep(pos, p)
            st.elementwise.append((ranges, pos))
        return pos

    def comp(
        self, op: int, src: tuple[int, int, int], dst: tuple[int, int, int], deps: list[int], role: str = "comp"
    ) -> int:
        pos = self.nodes.add(
            COMP,
            f"{self.tag}.{role}",
            self._attrs(OS.EXACT),
            self._base() + deps,
            count=dst[2],
            src=(src[0], src[1]),
            dst=(dst[0], dst[1]),
            op=op,
            tb=self.b.id,
        )
        return self._issue(pos, (src, dst) if src[0] >= 0 else (dst,))

    def _sync(self, idx: int, name: str, node: int | None) -> int:
        """A cost-only sync node closing the block's current segment (or ``node``, shared)."""
        st = self.st
        deps = st.pending or ([st.gate] if st.gate is not None else [])
        if node is None:
            node = self.nodes.add(
                COMP,
                f"tb{self.b.id}/op{idx}/{name}",
                ((OS.OP, name), (OS.INDEX, idx), (OS.MAPPING, OS.EXACT), (OS.SYNC, 1)),
                deps,
                tb=self.b.id,
            )
        else:
            for d in deps:
                self.nodes.dep(node, d)
        st.gate, st.pending, st.elementwise = node, [], []
        return node

    def message(
        self,
        sender: int,
        receiver: int,
        src: tuple[int, int, int],
        dst: tuple[int, int, int],
        op: int,
        mapping: str,
        send_deps: list[int],
        recv_deps: list[int],
        *,
        local_is_send: bool,
        more: tuple[tuple[str, Any], ...] = (),
    ) -> tuple[int, int]:
        """A data message: SEND on ``sender``, RECV on ``receiver``; the side on this rank joins
        the block's segment, the other side gets only the deps given."""
        low = self.low
        key = (sender, receiver)
        t = low.tags.get(key, DATA_TAG_BASE)
        low.tags[key] = t + 1
        attrs = self._attrs(mapping, *more)
        if self.o.name in PACKET_OPS and mapping != OS.PULL:
            attrs += ((OS.PAYLOAD, 2),)
        ns, nr = low.nodes[sender], low.nodes[receiver]
        base = self._base()
        s = ns.add(
            SEND,
            f"{self.tag}.send",
            attrs,
            (base if local_is_send else []) + send_deps,
            peer=receiver,
            tag=t,
            count=src[2],
            src=(src[0], src[1]),
            tb=self.b.id,
        )
        rv = nr.add(
            RECV,
            f"{self.tag}.recv",
            attrs,
            ([] if local_is_send else base) + recv_deps,
            peer=sender,
            tag=t,
            count=dst[2],
            dst=(dst[0], dst[1]),
            op=op,
            tb=self.b.id,
        )
        self._issue(s if local_is_send else rv, (src,) if local_is_send else (dst,))
        return s, rv

    def flag(self, rank: int) -> int:
        f = self.low.flags[rank]
        self.low.flags[rank] = f + 1
        return self.low.scratch_sub + f

    # -- operands ----------------------------------------------------------------------------
    def _window(self, index: int, size: int, packet: bool) -> tuple[int, int]:
        f = self.low.refine
        off, ln = index * f, size * f
        j, t = self.slice
        if t > 1:
            ln //= t
            off += j * ln
        if self.k > 1 and not packet:
            ln //= self.k
            off += self.it * ln
        return off, ln

    def _bounds(self, gpu: int, buf: int, index: int, size: int) -> None:
        """Operands must lie inside the owner's buffer as that GPU declares it (the executor does
        not check; a shrunk scratch silently overlaps whatever follows)."""
        g = self.low.plan.gpus[gpu]
        cap = (g.input_chunks, g.output_chunks, g.scratch_chunks)[buf]
        if self.low.plan.top.get("inplace") and buf in (0, 1):
            cap = max(g.input_chunks, g.output_chunks)
        if index + size > cap:
            name = ("input", "output", "scratch")[buf]
            self.problem(
                f"chunks [{index}, {index + size}) of gpu {gpu}'s {name} buffer are out of bounds (it has {cap})"
            )

    def local(self, d: dict[str, Any], packet: bool = False) -> tuple[int, int, int]:
        from ._plan import BUFFER_TYPES

        buf = BUFFER_TYPES[d["type"]]
        self._bounds(self.r, buf, int(d["index"]), int(d["size"]))
        off, ln = self._window(int(d["index"]), int(d["size"]), packet)
        return buf, off, ln

    def remote(self, d: dict[str, Any], packet: bool = False) -> tuple[int, tuple[int, int, int]] | None:
        """(owner, (buffer, off, cnt)) of a remote operand, through the block's table of the op's
        channel type."""
        ty = self.o.raw.get("channel_type", "memory")
        table = self.b.remote_refs.get(ty, [])
        bid = d.get("buffer_id")
        if not isinstance(bid, int) or not 0 <= bid < len(table) or not 0 <= table[bid] < len(self.g.remote_buffers):
            self.problem(f"remote buffer_id {bid} is outside the block's {ty} table ({len(table)} entries)")
            return None
        owner, buf, _acc = self.g.remote_buffers[table[bid]]
        self._bounds(owner, buf, int(d["index"]), int(d["size"]))
        off, ln = self._window(int(d["index"]), int(d["size"]), packet)
        return owner, (buf, off, ln)

    def switch(self, d: dict[str, Any]) -> tuple[list[int], tuple[int, int, int]] | None:
        table = self.b.channels.get("switch", [])
        sid = d.get("switch_channel_id")
        if not isinstance(sid, int) or not 0 <= sid < len(table) or not 0 <= table[sid] < len(self.g.switch):
            self.problem(f"switch_channel_id {sid} is outside the block's switch table ({len(table)} entries)")
            return None
        buf, group = self.g.switch[table[sid]]
        if self.r not in group:
            self.problem(f"rank {self.r} is not in its switch group {group}")
            return None
        for m in group:
            self._bounds(m, buf, int(d["index"]), int(d["size"]))
        off, ln = self._window(int(d["index"]), int(d["size"]), self.o.name == "gstorepkt")
        return group, (buf, off, ln)

    def channel(self, pos: int) -> tuple[str, int, int] | None:
        """(type, peer, connection k) of the op's ``pos``-th channel id."""
        ty = self.o.raw.get("channel_type", "memory")
        ids = self.o.raw.get("channel_ids", []) or []
        table = self.b.channels.get(ty, [])
        peers = self.g.peers.get(ty, [])
        if pos >= len(ids) or not isinstance(ids[pos], int) or not 0 <= ids[pos] < len(table):
            self.problem(f"channel id at position {pos} is outside the block's {ty} table ({len(table)} entries)")
            return None
        g = table[ids[pos]]
        if not 0 <= g < len(peers):
            self.problem(f"{ty} channel {g} is not declared on gpu {self.r}")
            return None
        return ty, peers[g], self.low.conn_index(self.r, ty)[g]

    def srcs(self) -> list[dict[str, Any]]:
        return list(self.o.raw.get("src_buff", []) or [])

    def dsts(self) -> list[dict[str, Any]]:
        return list(self.o.raw.get("dst_buff", []) or [])

    def pkt_write(self, rank: int, rng: tuple[int, int, int], pos: int) -> None:
        if rng[0] == SCRATCH:
            self.low.pkt_writers[rank].append((rng[1], rng[2], pos))

    def pkt_read(self, rng: tuple[int, int, int], pos: int) -> None:
        if rng[0] == SCRATCH:
            self.low.pkt_readers.append((self.r, pos, rng[1], rng[2], f"{self.tag}"))

    # -- sync ops ----------------------------------------------------------------------------
    def _op_nop(self) -> None:
        self._sync(self.idx, "nop", None)

    def _op_barrier(self) -> None:
        raw = self.o.raw
        bid = int(raw.get("barrier_id", 0) or 0)
        occ = self.st.barriers.get(bid, 0)
        self.st.barriers[bid] = occ + 1
        key = (self.r, bid, occ)
        entry = self.low.barrier_nodes.get(key)
        if entry is None:
            node = self._sync(self.idx, "barrier", None)
            self.nodes.attrs[node] += ((OS.BARRIER, bid),)
            self.low.barrier_nodes[key] = [node, 1, int(raw.get("num_threadblocks", 0) or 0), self.b.id, self.idx]
        else:
            self._sync(self.idx, "barrier", entry[0])
            entry[1] += 1

    def _thread(self, j: int, pos: int) -> None:
        prev = self.st.chains.get(j)
        if prev is not None:
            self.nodes.dep(pos, prev)
        self.st.chains[j] = pos
        self._issue(pos)

    def _signal(self, relaxed: bool, extra_deps: dict[int, list[int]] | None = None) -> dict[int, int]:
        return self._sync_messages(True, relaxed, extra_deps or {})

    def _wait(self, relaxed: bool) -> None:
        self._sync_messages(False, relaxed, {})

    def _sync_messages(self, send: bool, relaxed: bool, extra_deps: dict[int, list[int]]) -> dict[int, int]:
        """One SEND (signal) or RECV (wait) per channel of the op: tag 1 + 2k (+1 for port), one
        flag chunk each, chained on the channel's thread. Hot: a 64-rank plan has ~10^5 of them."""
        out = {}
        nodes, low, r, tb = self.nodes, self.low, self.r, self.b.id
        add, sync_msgs = nodes.add, nodes.sync_msgs
        name = f"{self.tag}.send" if send else f"{self.tag}.recv"
        base = self._base()
        registry = low.signals if send else low.waits
        kind, op = (SEND, 0) if send else (RECV, COPY)
        for j in range(len(self.o.raw.get("channel_ids", []) or [])):
            ch = self.channel(j)
            if ch is None:
                continue
            ty, p, k = ch
            relaxed_here = relaxed and ty == "memory"  # the kernel treats relaxed port ops as normal
            more: tuple[tuple[str, Any], ...] = ((OS.CHANNEL, ty), (OS.CONN, k), (OS.SYNC, 1), (OS.SYNTH, 1))
            if relaxed_here:
                more += ((OS.RELAXED, 1),)
            attrs = self._attrs(OS.SIGNAL, *more)
            f = low.scratch_sub + low.flags[r]
            low.flags[r] += 1
            deps = base + extra_deps.get(j, []) if send else list(base)
            # a signal is a flag message out of the sender's scratch into the waiter's
            end: dict[str, Any] = {"src": (SCRATCH, f)} if send else {"dst": (SCRATCH, f), "op": op}
            pos = add(kind, name, attrs, deps, peer=p, tag=1 + 2 * k + (ty == "port"), count=1, tb=tb, chan=k, **end)
            registry.setdefault((ty, r, p, k) if send else (ty, p, r, k), []).append((pos, relaxed_here))
            sync_msgs.append(pos)
            self._thread(j, pos)
            out[j] = pos
        return out

    def _op_signal(self) -> None:
        self._signal(False)

    def _op_rlxsignal(self) -> None:
        self._signal(True)

    def _op_wait(self) -> None:
        self._wait(False)

    def _op_rlxwait(self) -> None:
        self._wait(True)

    def _op_flush(self) -> None:
        # a no-op at upstream 1f5f065 (reference §14): kept as a cost-only node for round trips
        for j in range(max(len(self.o.raw.get("channel_ids", []) or []), 1)):
            pos = self.nodes.add(
                COMP, f"{self.tag}.comp", self._attrs(OS.EXACT, (OS.SYNC, 1)), self._base(), tb=self.b.id
            )
            self._thread(j, pos)

    def _sem(self, release: bool) -> None:
        for j, s in enumerate(self.o.raw.get("semaphore_ids", []) or []):
            if not isinstance(s, int) or not 0 <= s < len(self.g.semaphores):
                self.problem(f"semaphore id {s} is not declared ({len(self.g.semaphores)} on this gpu)")
                continue
            pos = self.nodes.add(
                COMP,
                f"{self.tag}.comp",
                self._attrs(OS.EXACT, (OS.SYNC, 1), (OS.SEMAPHORE, s)),
                self._base(),
                tb=self.b.id,
            )
            self._thread(j, pos)
            self.low.sem_ops.setdefault((self.r, s), []).append((release, pos, self.tag))

    def _op_sem_acquire(self) -> None:
        self._sem(False)

    def _op_sem_release(self) -> None:
        self._sem(True)

    def _op_pipeline(self) -> None:  # pragma: no cover - run() unrolls pipelines
        self.problem("nested pipeline")
