"""MSCCL-IR vocabulary shared by the reader and the writer: step types, buffers, spellings."""

from __future__ import annotations

import re

from hub.chakra import Buffer, Collective

__all__ = [
    "BUF_CODE",
    "BUF_OF",
    "INT_MAX",
    "INT_MIN",
    "INT_RE",
    "RECV_TYPES",
    "SEND_TYPES",
    "STEP_TYPES",
    "TARGETS",
    "TargetRules",
]

#: What the runtimes' atoi/strtol read as a whole integer: optional blanks and sign, ASCII digits
#: (Python's int() would also take '1_0' or non-ASCII digits).
INT_RE = re.compile(r"\s*[-+]?[0-9]+\s*", re.ASCII)
#: MSCCL-IR integers are C ints (ids, offsets, counts, sizes in chunks).
INT_MIN, INT_MAX = -(2**31), 2**31 - 1

#: Step types a runtime executes (``ra`` is parsed by the old runtime but never executed).
STEP_TYPES: frozenset[str] = frozenset({"s", "r", "rcs", "rrs", "rrc", "rrcs", "cpy", "re", "nop"})
#: Step types that send on the tb's ``send`` connection (msccl-ir.md §7).
SEND_TYPES: frozenset[str] = frozenset({"s", "rcs", "rrs", "rrcs"})
#: Step types that receive on the tb's ``recv`` connection.
RECV_TYPES: frozenset[str] = frozenset({"r", "rcs", "rrc", "rrs", "rrcs"})

BUF_OF: dict[str, Buffer] = {"i": Buffer.INPUT, "o": Buffer.OUTPUT, "s": Buffer.SCRATCH}
BUF_CODE: dict[int, str] = {int(Buffer.INPUT): "i", int(Buffer.OUTPUT): "o", int(Buffer.SCRATCH): "s"}


class TargetRules:
    """What one runtime accepts (msccl-ir.md §8-§10)."""

    def __init__(
        self,
        name: str,
        *,
        max_steps: int,
        max_tbs: int,
        max_channels: int,
        reducescatter: str,
        custom_ok: bool,
        outofplace_attr: bool,
        max_exclusive: bool,
        accepted: frozenset[Collective],
    ) -> None:
        self.name = name
        self.max_steps = max_steps
        self.max_tbs = max_tbs
        self.max_channels = max_channels
        self.reducescatter = reducescatter
        self.custom_ok = custom_ok
        self.outofplace_attr = outofplace_attr
        self.max_exclusive = max_exclusive
        self.accepted = accepted

    def coll_name(self, coll: Collective) -> str:
        if coll is Collective.REDUCESCATTER:
            return self.reducescatter
        return coll.value


_EXECUTOR_COLLS = frozenset(
    {
        Collective.ALLREDUCE,
        Collective.ALLGATHER,
        Collective.REDUCESCATTER,
        Collective.ALLTOALL,
        Collective.BROADCAST,
        Collective.REDUCE,
        Collective.GATHER,
        Collective.SCATTER,
    }
)

TARGETS: dict[str, TargetRules] = {
    "msccl-executor-nccl": TargetRules(
        "msccl-executor-nccl",
        max_steps=64,
        max_tbs=1024,
        max_channels=32,
        reducescatter="reducescatter",
        custom_ok=False,
        outofplace_attr=True,
        max_exclusive=False,
        accepted=_EXECUTOR_COLLS,
    ),
    "rccl": TargetRules(
        "rccl",
        max_steps=64,
        max_tbs=64,
        max_channels=128,
        reducescatter="reducescatter",
        custom_ok=False,
        outofplace_attr=True,
        max_exclusive=False,
        accepted=_EXECUTOR_COLLS,
    ),
    "msccl-legacy": TargetRules(
        "msccl-legacy",
        max_steps=256,
        max_tbs=216,
        max_channels=32,
        reducescatter="reduce_scatter",
        custom_ok=True,
        outofplace_attr=False,
        max_exclusive=True,
        accepted=frozenset(
            {
                Collective.ALLREDUCE,
                Collective.ALLGATHER,
                Collective.REDUCESCATTER,
                Collective.ALLTOALL,
                Collective.BROADCAST,
                Collective.REDUCE,
                Collective.CUSTOM,
            }
        ),
    ),
}
