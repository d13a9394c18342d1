"""Symbolic chunk values: one Python int per buffer slot.

A reduction only ever combines the same input chunk index across ranks, so the value of a slot
is fully described by (input chunk index, set of contributing ranks). We pack both into one
int: ``(rank_mask << W) | index`` with ``W`` bits for the index. Then

* ``0`` means uninitialised and ``-1`` an invalid value (the result of an earlier error, which
  propagates silently so that one mistake is reported once);
* combining ``a`` and ``b`` is valid iff both are positive, ``(a ^ b) & LOW == 0`` (same index)
  and ``(a & b) >> W == 0`` (disjoint contributors); the result is simply ``a | b``.
"""

from __future__ import annotations

__all__ = ["BAD", "UNINIT", "Codec"]

UNINIT = 0
BAD = -1


def _bits(mask: int) -> list[int]:
    ranks = []
    r = 0
    while mask:
        if mask & 1:
            ranks.append(r)
        mask >>= 1
        r += 1
    return ranks


def _ranks_text(mask: int) -> str:
    """``0..3,5`` for the set bits of ``mask``."""
    ranks = _bits(mask)
    parts: list[str] = []
    i = 0
    while i < len(ranks):
        j = i
        while j + 1 < len(ranks) and ranks[j + 1] == ranks[j] + 1:
            j += 1
        if j - i >= 2:
            parts.append(f"{ranks[i]}..{ranks[j]}")
        else:
            parts.extend(str(x) for x in ranks[i : j + 1])
        i = j + 1
    return ",".join(parts)


class Codec:
    """Packs and describes values for an algorithm whose input has ``in_chunks`` chunks."""

    def __init__(self, in_chunks: int) -> None:
        self.W = max(int(in_chunks), 1).bit_length()
        self.LOW = (1 << self.W) - 1

    def make(self, mask: int, index: int) -> int:
        return (mask << self.W) | index

    def describe(self, v: int) -> str:
        """``in[3][5]``, ``in[2][5]+in[3][5]`` or ``sum of in[0..7][5]``."""
        if v == UNINIT:
            return "nothing (uninitialised)"
        if v < 0:
            return "an invalid value (see the earlier problem)"
        mask, idx = v >> self.W, v & self.LOW
        n = bin(mask).count("1")
        if n == 1 or n > 3:
            prefix = "" if n == 1 else "sum of "
            return f"{prefix}in[{_ranks_text(mask)}][{idx}]"
        return "+".join(f"in[{r}][{idx}]" for r in _bits(mask))

    def expected(self, v: int) -> str:
        """Like :meth:`describe`, with ``sum of`` for any reduction."""
        mask, idx = v >> self.W, v & self.LOW
        if bin(mask).count("1") == 1:
            return f"in[{_ranks_text(mask)}][{idx}]"
        return f"sum of in[{_ranks_text(mask)}][{idx}]"

    def combine_error(self, dst: int, src: int) -> str:
        """Why ``dst (+) src`` is invalid (call only when it is)."""
        if dst == UNINIT:
            return "reduces into an uninitialised chunk"
        if src == UNINIT:
            return "reduces an uninitialised chunk"
        if (dst ^ src) & self.LOW:
            return (
                f"combines different chunks: {self.describe(dst)} with {self.describe(src)} "
                "(a reduction must combine the same chunk index of different ranks)"
            )
        both = (dst & src) >> self.W
        return (
            f"double-counts in[{_ranks_text(both)}][{dst & self.LOW}]: the destination holds "
            f"{self.describe(dst)} and the incoming value holds {self.describe(src)}"
        )
