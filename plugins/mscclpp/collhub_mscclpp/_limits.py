"""The executor's fixed capacities (``execution_common.hpp`` at upstream ``1f5f065``).

| limit | upstream name | what happens past it |
|---|---|---|
| 64 ops per block, pipeline bodies counted | ``MAX_OPERATION`` | the executor refuses at launch set-up |
| 8 ``channel_ids`` per op | ``MAX_CHANNEL_PER_OPERATION`` | unchecked: overwrites neighbouring fields |
| 10 ``src_buff`` / 10 ``dst_buff`` per op | ``MAX_DEVICE_FUNCTIONS_IN_OPERATION`` (2 local + 8 remote) | unchecked |
| 16 channels of one type per block | ``MAX_CHANNEL`` | unchecked |
| 16 remote buffers of one access type per block | ``MAX_CHANNEL`` | unchecked |
| 16 ``semaphore_ids`` per op | | unchecked |
| ``barrier_id`` < 16 | | unchecked |
| local channel / remote buffer / switch channel positions inside their tables | | unchecked |

Each finding is ``(gpu, block, op index or None, op name, message, rejected)``; ``rejected`` marks
what the executor itself refuses (the others are undefined behaviour that runs).
"""

from __future__ import annotations

from typing import NamedTuple

from ._plan import Op, Plan

__all__ = ["LimitFinding", "check_limits"]

MAX_OPERATION = 64
MAX_CHANNEL_PER_OPERATION = 8
MAX_OPERANDS = 10
MAX_CHANNEL = 16
MAX_SEMAPHORES_PER_OP = 16
MAX_BARRIER = 16


class LimitFinding(NamedTuple):
    gpu: int
    block: int
    op: int | None
    opname: str
    message: str
    rejected: bool

    def __str__(self) -> str:
        at = f"GPU {self.gpu} thread block {self.block}"
        if self.op is not None:
            at += f" op {self.op} ({self.opname})"
        return f"{at}: {self.message}"


def check_limits(plan: Plan) -> list[LimitFinding]:
    out: list[LimitFinding] = []
    for g in plan.gpus:
        for b in g.blocks:
            total = sum(1 + len(o.body) for o in b.ops)
            if total > MAX_OPERATION:
                out.append(
                    LimitFinding(
                        g.id,
                        b.id,
                        None,
                        "",
                        f"Executor plan launching {total} operations, exceeding device execution plan "
                        f"support ({MAX_OPERATION})",
                        True,
                    )
                )
            for ty, ids in b.channels.items():
                if ty in ("memory", "port") and len(ids) > MAX_CHANNEL:
                    out.append(LimitFinding(g.id, b.id, None, "", f"{len(ids)} {ty} channels > {MAX_CHANNEL}", False))
                n = len(g.peers.get(ty, [])) if ty != "switch" else len(g.switch)
                bad = [x for x in ids if not 0 <= x < n]
                if ty != "none" and bad:
                    out.append(
                        LimitFinding(
                            g.id, b.id, None, "", f"{ty} channel id {bad[0]} not declared (GPU has {n})", False
                        )
                    )
            for ty, ids in b.remote_refs.items():
                if len(ids) > MAX_CHANNEL:
                    out.append(
                        LimitFinding(g.id, b.id, None, "", f"{len(ids)} {ty} remote buffers > {MAX_CHANNEL}", False)
                    )
            for i, o in enumerate(b.ops):
                out.extend(_op_limits(g.id, b.id, i, o))
                for j, body in enumerate(o.body):
                    out.extend(_op_limits(g.id, b.id, i + 1 + j, body))
    return out


def _op_limits(gpu: int, block: int, i: int, o: Op) -> list[LimitFinding]:
    raw = o.raw
    msgs = []
    n = len(raw.get("channel_ids") or ())
    if n > MAX_CHANNEL_PER_OPERATION:
        msgs.append(f"{n} channel_ids > {MAX_CHANNEL_PER_OPERATION}")
    for key in ("src_buff", "dst_buff"):
        n = len(raw.get(key) or ())
        if n > MAX_OPERANDS:
            msgs.append(f"{n} {key} > {MAX_OPERANDS}")
    n = len(raw.get("semaphore_ids") or ())
    if n > MAX_SEMAPHORES_PER_OP:
        msgs.append(f"{n} semaphore_ids > {MAX_SEMAPHORES_PER_OP}")
    bid = raw.get("barrier_id")
    if isinstance(bid, int) and not 0 <= bid < MAX_BARRIER:
        msgs.append(f"barrier_id {bid} >= {MAX_BARRIER}")
    return [LimitFinding(gpu, block, i, o.name, m, False) for m in msgs]
