"""The walk of :mod:`._walk` in C, for the good case: it proves completion and computes the memories.

The Python walk moves symbolic values one node at a time, a few microseconds per node (43 s for
a 1024-rank ring). ``hub._native._verify.walk`` runs the same worklist step for step (eager SENDs,
FIFO RECVs per (src, dst, tag, size) key, the lowest ready global index first, so it pairs
concurrent messages exactly as the Python walk does) on compiled tables. A value is the pair
(input chunk index, set of contributing ranks), the set a bitset of ``ceil(ranks / 64)`` uint64
words: exact, like the Python walk's packed ints. A SEND's snapshot lives until its RECV consumes
it, so memory is bounded by the messages in flight.

It only proves the good case: on the first data error (an uninitialised read, an invalid
combination, a RECV whose message has another length) or an unusual node it stops, and on a
deadlock it says so; then the caller runs the Python walk, which words every problem as before.
``tests/verify/test_flow.py`` checks that both give equal reports on the built-ins, the hand-made
and 200 random algorithms.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from .._native import load_verify
from ..chakra import AlgorithmMeta, Collective, Op
from ._flat import Flat
from ._layout import layout_of
from ._pairing import pairing

__all__ = [
    "MAX_PY_MEMORY_BYTES",
    "MAX_SLOT_BYTES",
    "Slots",
    "completes",
    "data_too_large",
    "fast_memory",
    "single_contributors",
]

_REDUCE = int(Op.REDUCE)

#: memories beyond this many bytes (slots x bitset words) are not built; the Python walk runs
#: (``COLLHUB_MAX_DATA_BYTES`` sets another limit, for a user with the memory)
MAX_SLOT_BYTES = 1 << 30
#: the Python walk's memories (one int of a rank bit set per slot) are not built beyond this many
#: bytes either: then the data is reported as not checked instead of exhausting the memory
MAX_PY_MEMORY_BYTES = 1 << 32


def _slot_limit() -> int:
    """Bytes the C walk's memories may take: ``COLLHUB_MAX_DATA_BYTES`` where set, else
    :data:`MAX_SLOT_BYTES`."""
    raw = os.environ.get("COLLHUB_MAX_DATA_BYTES", "").strip().replace("_", "")
    return int(raw) if raw.isdigit() and int(raw) > 0 else MAX_SLOT_BYTES


def _sizes(meta: AlgorithmMeta, ids: bool = False) -> tuple[int, int, int]:
    """(slots of every rank's memory, bitset words a value, bytes of the C walk's memories);
    with ``ids`` a value's set is one rank id (see :func:`single_contributors`)."""
    R = meta.ranks
    M = max((layout_of(meta, r).size for r in range(R)), default=0)
    words = 1 if ids else max(1, (R + 63) // 64)
    return R * M, words, R * M * (words * 8 + 4)


#: collectives whose every output chunk comes from one rank (no sum is expected)
_SINGLE = (Collective.ALLGATHER, Collective.GATHER, Collective.ALLTOALL, Collective.BROADCAST, Collective.SCATTER)


def single_contributors(f: Flat, meta: AlgorithmMeta) -> bool:
    """Whether every value stays one input chunk of one rank: no node reduces, and the collective
    expects no sums. Then the C walk stores a rank id per slot instead of a rank bitset (COPY
    moves values verbatim), 8 bytes instead of ``ranks / 8``: an all-gather on 4096 ranks needs
    0.2 GiB instead of 8.1."""
    return meta.collective in _SINGLE and not bool(np.any(f.op == _REDUCE))


def data_too_large(meta: AlgorithmMeta, ids: bool = False) -> str | None:
    """Why neither walk can hold the symbolic memories of ``meta`` (a value is a set of ranks, so
    they grow as ranks x slots x ranks: 128 GiB for the 8192-rank all-reduce), or None."""
    slots, words, fast = _sizes(meta, ids)
    py = slots * (max(1, (meta.ranks + 63) // 64) * 8 + 32)  # a Python int of R bits per slot, and its list entry
    if fast <= _slot_limit() or py <= MAX_PY_MEMORY_BYTES:
        return None
    return (
        f"the symbolic chunk values would need {fast / 2**30:.1f} GiB ({slots} chunk slots, each a set of "
        f"{meta.ranks} ranks), beyond the limit of {_slot_limit() / 2**30:g} GiB (set COLLHUB_MAX_DATA_BYTES "
        f"to {fast} or more to check it with that much memory)"
    )


@dataclass
class Slots:
    """Every rank's memory as one table: rank r's flat address x is slot ``r * M + x``;
    ``index[s]`` is the input chunk index it holds (-1: uninitialised), ``mask[s]`` the bitset of
    contributing ranks (bit r of word r // 64)."""

    index: np.ndarray
    mask: np.ndarray
    M: int
    #: ``mask[s, 0]`` is the one contributing rank's id, not a bitset (see :func:`single_contributors`)
    ids: bool = False


def _keys(f: Flat) -> tuple[np.ndarray, int]:
    """A dense FIFO id per SEND/RECV (src, dst, tag, size), -1 elsewhere, and how many; the ids
    do not depend on the issue order, so positions serve when the structure level kept none."""
    p = f.pairing if f.pairing is not None else pairing(f, np.arange(f.n) - f.offsets[f.rank])
    return p.key, p.nkeys


def _run(f: Flat, data: tuple | None) -> tuple[int, int]:
    key, nkeys = _keys(f)
    return load_verify().walk(np.ascontiguousarray(f.kind, np.int8), key, nkeys, f.dep_ptr, f.succ_ptr, f.succ, data)


def completes(f: Flat) -> bool:
    """Whether the walk without data runs every node (no deadlock)."""
    done, _ = _run(f, None)
    return done == f.n


def fast_memory(f: Flat, meta: AlgorithmMeta, base: np.ndarray, ids: bool = False) -> Slots | None:
    """The memories after the walk (input chunk i of rank r starts as in[r][i], aliasing applied),
    or None when the walk hits a data error, deadlocks, or its memories would exceed
    :data:`MAX_SLOT_BYTES` (then the Python walk runs). ``ids``: :func:`single_contributors` holds,
    so each slot holds a rank id."""
    R = meta.ranks
    M = max((layout_of(meta, r).size for r in range(R)), default=0)
    _, words, need = _sizes(meta, ids)
    if need > _slot_limit():
        return None
    index = np.full(R * M, -1, dtype=np.int32)
    mask = np.zeros((R * M, words), dtype=np.uint64)
    k = meta.in_chunks
    for r in range(R):  # input chunk i of rank r holds in[r][i], after aliasing
        a = r * M + int(base[r, 0])
        index[a : a + k] = np.arange(k, dtype=np.int32)
        if ids:
            mask[a : a + k, 0] = r
        else:
            mask[a : a + k, r >> 6] = np.uint64(1) << np.uint64(r & 63)
    rank = np.ascontiguousarray(f.rank, np.int64)
    saddr = base[rank, np.clip(f.src_buf, 0, 2)]  # flat address in the rank's memory
    saddr += f.src_off
    daddr = base[rank, np.clip(f.dst_buf, 0, 2)]
    daddr += f.dst_off
    cnt = np.ascontiguousarray(f.count, np.int32)
    op = np.ascontiguousarray(f.op, np.int8)
    done, status = _run(f, (op, cnt, saddr, daddr, rank, M, index, mask.reshape(-1), words))
    if status or done != f.n:
        return None
    return Slots(index, mask, M, ids)
