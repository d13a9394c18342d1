"""The records the lowering shares between its modules: located problems, one-sided accesses,
the per-block state and :class:`Lowering` (everything made so far)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hub.chakra import Buffer, NodeType, Op

from ._graphs import RankNodes
from ._plan import Plan

__all__ = ["DATA_TAG_BASE", "PACKET_OPS", "Access", "BlockState", "Lowering", "PlanProblem"]

SCRATCH = int(Buffer.SCRATCH)
COPY, REDUCE = int(Op.COPY), int(Op.REDUCE)
SEND, RECV, COMP = NodeType.SEND, NodeType.RECV, NodeType.COMP
#: data messages get tags from here up (one per message per rank pair); sync tags are below
DATA_TAG_BASE = 1 << 16
PACKET_OPS = frozenset({"ppkt", "rppkt", "cpkt", "upkt", "repkt", "recpkt", "respkt", "recspkt", "gstorepkt"})
THREAD_OPS = frozenset({"signal", "wait", "rlxsignal", "rlxwait", "flush", "sem_acquire", "sem_release"})


@dataclass(frozen=True)
class PlanProblem:
    """A finding located as GPU / thread block / op index (the op's name in brackets)."""

    gpu: int
    block: int | None
    op: int | None
    opname: str
    message: str

    def __str__(self) -> str:
        at = f"gpu {self.gpu}"
        if self.block is not None:
            at += f" tb {self.block}"
        if self.op is not None:
            at += f" op {self.op} ({self.opname})"
        return f"{at}: {self.message}"


@dataclass
class Access:
    """A one-sided access by ``actor`` to ``owner``'s memory: ``local`` is the actor's node (the
    put's SEND, the pull's RECV), ``remote`` the owner's (the put's RECV, the pull's SEND)."""

    write: bool
    actor: int
    owner: int
    local: int
    remote: int
    channel: str
    conn: int | None  # port: the connection whose signals cover it


@dataclass
class BlockState:
    gate: int | None = None
    pending: list[int] = field(default_factory=list)
    chains: dict[int, int] = field(default_factory=dict)
    barriers: dict[int, int] = field(default_factory=dict)  # barrier id -> occurrences so far
    elementwise: list[tuple[tuple[tuple[int, int, int], ...], int]] = field(default_factory=list)


@dataclass
class Lowering:
    """Everything the lowering made: per-rank nodes and what :mod:`._attach` still has to wire."""

    plan: Plan
    refine: int
    iterations: dict[int, int]  # id(pipeline op) -> iterations
    nodes: list[RankNodes]
    scratch_sub: int  # first flag chunk (program scratch, refined)
    flags: list[int]  # flag chunks used per rank
    problems: list[PlanProblem] = field(default_factory=list)
    accesses: list[Access] = field(default_factory=list)
    signals: dict[tuple[str, int, int, int], list[tuple[int, bool]]] = field(default_factory=dict)
    waits: dict[tuple[str, int, int, int], list[tuple[int, bool]]] = field(default_factory=dict)
    pkt_writers: list[list[tuple[int, int, int]]] = field(default_factory=list)  # rank -> (off, cnt, pos)
    pkt_readers: list[tuple[int, int, int, int, str]] = field(default_factory=list)  # rank, pos, off, cnt, where
    sem_ops: dict[tuple[int, int], list[tuple[bool, int, str]]] = field(default_factory=dict)
    barrier_nodes: dict[tuple[int, int, int], list[Any]] = field(default_factory=dict)
    tags: dict[tuple[int, int], int] = field(default_factory=dict)
    launches: list[int] = field(default_factory=list)
    _conn: dict[tuple[int, str], list[int]] = field(default_factory=dict)

    def conn_index(self, rank: int, ty: str) -> list[int]:
        """Per rank channel index of type ``ty``: its connection k (earlier channels to the same peer)."""
        key = (rank, ty)
        out = self._conn.get(key)
        if out is None:
            seen: dict[int, int] = {}
            out = []
            for p in self.plan.gpus[rank].peers.get(ty, []):
                out.append(seen.get(p, 0))
                seen[p] = out[-1] + 1
            self._conn[key] = out
        return out
