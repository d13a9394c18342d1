"""A rank's buffers for one case (torch; imported only inside rank processes).

The algorithm works on one flat padded memory (input, output, scratch; aliasing applied). What
the caller of a collective sees are *logical* tensors: ``units x count`` elements, the chunk
padding cut off. Running an algorithm in the other mode than it was built for costs one local
copy: an in-place algorithm called out of place first copies the send buffer into its input
region; an out-of-place algorithm called in place runs on a staging input and copies back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._geometry import Geometry
from ._plan import Plan, RankPlan

__all__ = ["Buffers", "expected", "fill", "make_buffers", "reduce_into"]

_SAME = ("allreduce", "alltoall", "broadcast", "reduce")


def _units(t: Any, units: int, per_unit: int, count: int) -> Any:
    """The logical (units, count) view of a padded flat region of ``units * per_unit``."""
    return t.view(units, per_unit)[:, :count]


@dataclass
class Buffers:
    """``mem``: the algorithm's memory; ``send``/``recv``: the caller's logical views
    ``(units, count)``; ``pre``/``post``: local copies (dst, src) around each run."""

    mem: Any
    send: Any
    recv: Any
    pre: list[tuple[Any, Any]]
    post: list[tuple[Any, Any]]
    inplace: bool


def make_buffers(
    torch: Any, plan: Plan, rp: RankPlan, geo: Geometry, dtype: Any, device: Any, inplace: bool
) -> Buffers:
    lay, ce, me = rp.layout, geo.chunk, rp.rank
    per_unit = plan.chunks_per_unit * ce
    mem = torch.zeros(lay.size * ce, dtype=dtype, device=device)
    in_reg = mem[lay.in_base * ce : (lay.in_base + plan.in_chunks) * ce]
    out_reg = mem[lay.out_base * ce : (lay.out_base + plan.out_chunks) * ce]
    iu, ou, cnt = plan.in_units, plan.out_units, geo.unit
    pre: list[tuple[Any, Any]] = []
    post: list[tuple[Any, Any]] = []
    coll = plan.collective
    if inplace == plan.inplace:
        send, recv = _units(in_reg, iu, per_unit, cnt), _units(out_reg, ou, per_unit, cnt)
    elif plan.inplace:  # in-place algorithm, out-of-place call: stage the send buffer in
        user = torch.zeros(iu * per_unit, dtype=dtype, device=device)
        pre.append((in_reg, user))
        send, recv = _units(user, iu, per_unit, cnt), _units(out_reg, ou, per_unit, cnt)
    else:  # out-of-place algorithm, in-place call
        if coll == "allgather":
            send = _units(out_reg, ou, per_unit, cnt)[me : me + 1]
            recv = _units(out_reg, ou, per_unit, cnt)
            pre.append((in_reg, out_reg[me * per_unit : (me + 1) * per_unit]))
        elif coll == "reducescatter":
            send = _units(in_reg, iu, per_unit, cnt)
            recv = send[me : me + 1]
            post.append((in_reg[me * per_unit : (me + 1) * per_unit], out_reg))
        else:
            send = _units(in_reg, iu, per_unit, cnt)
            recv = send
            post.append((in_reg, out_reg))
    return Buffers(mem, send, recv, pre, post, inplace)


def fill(torch: Any, rank: int, units: int, count: int, op: str, dtype: Any, device: Any, salt: int = 0) -> Any:
    """Rank ``rank``'s input, ``(units, count)`` small integers, so every sum, product, min and
    max is exact in every supported dtype (nccl-tests fills by rank and iteration too)."""
    k = torch.arange(units * count, dtype=torch.int64, device=device)
    if op == "prod":
        vals = 1 + (k + rank + salt) % 2
    else:
        vals = (k * 7 + rank * 131 + salt * 3) % 17 - 8
    return vals.to(dtype).view(units, count)


def reduce_into(torch: Any, op: str, dst: Any, src: Any) -> None:
    """``dst := dst (+) src`` in place."""
    if op == "sum":
        dst.add_(src)
    elif op == "prod":
        dst.mul_(src)
    elif op == "min":
        torch.minimum(dst, src, out=dst)
    else:
        torch.maximum(dst, src, out=dst)


def expected(torch: Any, plan: Plan, me: int, inputs: list[Any], op: str) -> Any | None:
    """The collective's definition: rank ``me``'s logical output from every rank's input
    ``(in_units, count)``; None where it is unconstrained (reduce on a non-root)."""
    coll, root, n = plan.collective, plan.root, plan.ranks

    def reduced(parts: list[Any]) -> Any:
        acc = parts[0].clone()
        for p in parts[1:]:
            reduce_into(torch, op, acc, p)
        return acc

    if coll == "allreduce":
        return reduced(inputs)
    if coll == "reduce":
        return reduced(inputs) if me == root else None
    if coll == "broadcast":
        return inputs[root].clone()
    if coll == "allgather":
        return torch.cat([inputs[q] for q in range(n)], dim=0)
    if coll == "reducescatter":
        return reduced([inputs[q][me : me + 1] for q in range(n)])
    if coll == "alltoall":
        return torch.cat([inputs[q][me : me + 1] for q in range(n)], dim=0)
    return None
