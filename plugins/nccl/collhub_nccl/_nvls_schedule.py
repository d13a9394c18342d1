"""NCCL 2.30.7's NVLS and NVLSTree all-reduce as Chakra ET (``src/device/all_reduce.h``,
``RunWorkColl<AllReduce, NVLS | NVLS_TREE, SIMPLE>``; heads and trees from ``connectNvls`` in
``src/graph/connect.cc``), lowered with the one-sided profile's switch rules (spec section 10.3).

Rules:

* **Heads.** A node has ``H`` NVLS heads (:attr:`System.nvls_heads`); head h is local GPU h. A
  channel part is processed in loops of ``H x chunk`` elements; in a loop, head h owns the chunk
  at ``h x chunk`` (``nelem = min(chunk, rest)``; nothing when <= 0). The last, short loop's chunk
  is ``ceil(rem / H)`` rounded up to 16 KiB (NVLS, one node) or 16 bytes (NVLSTree).
* **Warp groups.** Every rank's *scatter* warps hand each loop's chunks to their heads, one after
  the other; a head's *reduce* warps load-reduce its chunk through the switch (``multimem``); its
  *gather* warps collect the heads' results. Each group runs its loops in order on its rank.
* **NVLS** (one node): the head load-reduces its chunk over the node's GPUs and multicast-stores
  the sum (``directRecvDirectSend`` with multimem source and destination): the profile's ``glres``
  lowering: per GPU g != head a SEND g -> head and a RECV REDUCE on the head
  (``switch-reduce-as-p2p``), then a SEND head -> g and a RECV COPY on g
  (``switch-multicast-as-p2p``).
* **NVLSTree** (several nodes): head h of every node joins NCCL's double binary tree over nodes
  (tree 0 on even channels, tree 1 on odd ones: ``c % 2``) whose parent and children are head h of
  the parent and child nodes. Its reduce warps add the switch load-reduce of its node and the
  partial sums of its children, then send to the parent; the root multicasts the total into its
  node and sends it to its children; a non-root's broadcast warps receive the total from the
  parent, multicast it into the node and forward it to the children.
* **Order and tags.** Each warp group is one chain per rank and channel (a node depends on the
  group's previous node; a multicast's stores are concurrent). Messages are tagged
  ``4 x channel + role`` (0 switch contribution, 1 multicast, 2 tree up, 3 tree down) so that the
  FIFO of one (src, dst, tag) never mixes groups that NCCL runs on different connections.
* **What the time means.** As spec section 10.5 says, the switch stand-ins are an upper bound on
  traffic: (|G| - 1) messages into the head and (|G| - 1) out, where NVLS moves one load and one
  store per GPU through the switch; in-switch reduction is not modelled.

In place: the buffer is the input (the postcondition is the profile's all-reduce).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hub.chakra import ONESIDED as OS, Algorithm, Buffer, Op, RankGraphBuilder

from ._schedule import Plan, _meta, _Ranges
from ._trees import dtree

__all__ = ["nvls_schedule"]

_CONTRIB, _MCAST, _UP, _DOWN = range(4)


def _divup(a: int, b: int) -> int:
    return -(-a // b)


def _loops(p: Plan, heads: int, ranges: _Ranges) -> list[tuple[int, list[list[int | None]]]]:
    """Per channel part: its loops, each a list over heads of a range id (None: no data)."""
    align = (16384 if p.system.nodes == 1 else 16) // p.elem
    out: list[tuple[int, list[list[int | None]]]] = []
    for part in p.split.parts:
        chunk = part.chunk_bytes // p.elem
        loop_count = heads * chunk
        last = _divup(_divup(part.count % loop_count, heads), align) * align
        loops: list[list[int | None]] = []
        for off in range(0, part.count, loop_count):
            ck = last if part.count - off < loop_count else chunk
            row: list[int | None] = []
            for h in range(heads):
                nelem = min(ck, part.count - (off + h * ck))
                row.append(ranges.add(part.offset + off + h * ck, nelem) if nelem > 0 else None)
            loops.append(row)
        out.append((part.channel, loops))
    return out


@dataclass
class _Rank:
    """One rank's builder, its foreign attributes, and the last node of each warp group."""

    b: RankGraphBuilder
    attrs: dict[int, tuple[tuple[str, Any], ...]] = field(default_factory=dict)
    scatter: list[int] = field(default_factory=list)
    gather: list[int] = field(default_factory=list)
    reduce: list[int] = field(default_factory=list)
    bcast: list[int] = field(default_factory=list)


class _Lowering:
    def __init__(self, p: Plan, ranges: _Ranges) -> None:
        self.p, self.ranges = p, ranges
        self.ranks = [_Rank(RankGraphBuilder(r)) for r in range(p.system.ranks)]

    def kw(self, rng: int, channel: int, role: int) -> dict[str, Any]:
        return {
            "count": self.ranges.cnt(rng),
            "size": self.ranges.sizes[rng] * self.p.elem,
            "tag": 4 * channel + role,
            "chan": channel,
        }

    def message(self, src: int, dst: int, rng: int, channel: int, role: int, sdeps: list[int], rdeps: list[int],
                op: Op, attrs: tuple[tuple[str, Any], ...] = ()) -> tuple[int, int]:  # fmt: skip
        """A SEND on ``src`` and its RECV on ``dst`` of range ``rng`` (same offset both sides)."""
        kw, off = self.kw(rng, channel, role), self.ranges.off(rng)
        a, b = self.ranks[src], self.ranks[dst]
        s = a.b.send(dst, src=(Buffer.INPUT, off), deps=sdeps, **kw)
        r = b.b.recv(src, dst=(Buffer.INPUT, off), op=op, deps=rdeps, **kw)
        if attrs:
            a.attrs[s] = attrs
            b.attrs[r] = attrs
        return s, r

    def switch_reduce(self, head: int, group: list[int], rng: int, channel: int, deps: list[int]) -> list[int]:
        """The head's load-reduce of ``rng`` over ``group``; returns the head's last node."""
        attrs = _attrs("multimem.ld_reduce", OS.SWITCH_REDUCE, group)
        for g in group:
            if g == head:
                continue
            rg = self.ranks[g]
            s, r = self.message(g, head, rng, channel, _CONTRIB, rg.scatter, deps, Op.REDUCE, attrs)
            rg.scatter = [s]
            deps = [r]
        return deps

    def multicast(self, head: int, group: list[int], rng: int, channel: int, deps: list[int]) -> list[int]:
        """The head's multicast store of ``rng`` into ``group``; returns its store nodes."""
        attrs = _attrs("multimem.st", OS.SWITCH_MULTICAST, group)
        sends = []
        for g in group:
            if g == head:
                continue
            rg = self.ranks[g]
            s, r = self.message(head, g, rng, channel, _MCAST, deps, rg.gather, Op.COPY, attrs)
            rg.gather = [r]
            sends.append(s)
        return sends


def _attrs(op: str, mapping: str, group: list[int]) -> tuple[tuple[str, Any], ...]:
    return ((OS.OP, op), (OS.CHANNEL, "switch"), (OS.MAPPING, mapping), (OS.GROUP, tuple(group)))


def nvls_schedule(p: Plan, name: str | None = None) -> Algorithm:
    """The per-rank graphs of an NVLS (one node) or NVLSTree (several nodes) all-reduce plan."""
    s = p.system
    ppn, nodes, heads = s.gpus_per_node, s.nodes, s.nvls_heads
    ranges = _Ranges([], [])
    per_part = _loops(p, heads, ranges)
    c = ranges.seal()
    low = _Lowering(p, ranges)
    trees = [dtree(nodes, nd) for nd in range(nodes)]
    for channel, loops in per_part:
        for row in loops:
            for h, rng in enumerate(row):
                if rng is None:
                    continue
                for nd in range(nodes):
                    _head_step(low, rng, channel, h, nd, ppn, trees[nd][channel % 2] if nodes > 1 else None)
        for rk in low.ranks:  # the next channel's warps are other warps: fresh chains
            rk.scatter, rk.gather, rk.reduce, rk.bcast = [], [], [], []
    graphs = []
    for rk in low.ranks:
        g = rk.b.build()
        g.extra = rk.attrs
        graphs.append(g)
    extra = (("nccl_nvls_heads", heads), ("nccl_switch_lowering", f"{OS.SWITCH_REDUCE},{OS.SWITCH_MULTICAST}"))
    return Algorithm(_meta(p, name, c, c, extra), tuple(graphs))


def _head_step(
    low: _Lowering, rng: int, channel: int, h: int, nd: int, ppn: int, tree: tuple[int, int, int, int] | None
) -> None:
    """Head h of node ``nd``: its chunk ``rng`` of one loop (reduce warps, then broadcast warps)."""
    base = nd * ppn
    hr = base + h
    group = list(range(base, base + ppn))
    me = low.ranks[hr]
    deps = low.switch_reduce(hr, group, rng, channel, me.reduce)
    up, kids = -1, []
    if tree is not None:
        up_node, d0, d1, _ct = tree
        up = -1 if up_node == -1 else up_node * ppn + h
        kids = [k * ppn + h for k in (d0, d1) if k != -1]
    for k in kids:  # the children's partial sums (their SEND up is created when their node runs)
        deps = [
            me.b.recv(k, dst=(Buffer.INPUT, low.ranges.off(rng)), op=Op.REDUCE, deps=deps, **low.kw(rng, channel, _UP))
        ]
    if up == -1:  # root (or one node): the sum is final; multicast it and send it down
        sends = low.multicast(hr, group, rng, channel, deps)
        sends += [_tree_down(low, hr, k, rng, channel, deps) for k in kids]
        me.reduce = sends or deps
        return
    s = me.b.send(up, src=(Buffer.INPUT, low.ranges.off(rng)), deps=deps, **low.kw(rng, channel, _UP))
    me.reduce = [s]
    # broadcast warps: the total from the parent, into the node and on to the children
    r = me.b.recv(up, dst=(Buffer.INPUT, low.ranges.off(rng)), op=Op.COPY, deps=me.bcast, **low.kw(rng, channel, _DOWN))
    sends = low.multicast(hr, group, rng, channel, [r])
    sends += [_tree_down(low, hr, k, rng, channel, [r]) for k in kids]
    me.bcast = sends or [r]


def _tree_down(low: _Lowering, hr: int, child: int, rng: int, channel: int, deps: list[int]) -> int:
    return low.ranks[hr].b.send(
        child, src=(Buffer.INPUT, low.ranges.off(rng)), deps=deps, **low.kw(rng, channel, _DOWN)
    )
