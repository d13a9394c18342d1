# Type stub of the C extension hub/_native/_sim.c and _sim_prep.c (the event loop of hub.simulate and
# the tables it walks). Each signature is the function's PyArg_ParseTuple format, argument for
# argument (tests/native/test_stubs.py compares them); "Buffer" is anything with the buffer protocol.
from collections.abc import Callable
from typing import Any

# anything with the buffer protocol (collections.abc.Buffer is Python 3.12+)
Buffer = Any

def run(
    n: int,
    nranks: int,
    nchan: int,
    feeder: bool,
    reorder: Callable[[int, list[int]], list[int]],
    kind: Buffer,
    chan: Buffer,
    dur: Buffer,
    chan_delay: Buffer,
    succ_ptr: Buffer,
    succ_idx: Buffer,
    indeg: Buffer,
    rank: Buffer,
    perm: Buffer,
    ids: Buffer,
    aware: tuple[Buffer, ...] | None,
    res: tuple[Buffer, ...] | None,
    start: Buffer,
    fin: Buffer,
    cause: Buffer,
    rank_finish: Buffer,
    arm: Buffer | None = None,
    seqw: Buffer | None = None,
    order: Buffer | None = None,
    fkey: Buffer | None = None,
    fstate: Buffer | None = None,
    /,
) -> tuple[int, list[list[int]], list[list[int]], int, int]: ...
def channels(
    kind: Buffer, rank: Buffer, peer: Buffer, tagx: Buffer, size: Buffer, chan: Buffer, /
) -> tuple[int, bytes]: ...
def layout(
    offsets: Buffer,
    inv: Buffer,
    kind: Buffer,
    chan: Buffer,
    dur: Buffer,
    rank: Buffer,
    succ_ptr: Buffer,
    succ_idx: Buffer,
    indeg: Buffer,
    roots: Buffer,
    kind_e: Buffer,
    chan_e: Buffer,
    dur_e: Buffer,
    rank_e: Buffer,
    indeg_e: Buffer,
    succ_ptr_e: Buffer,
    succ_idx_e: Buffer,
    swap2: bool,
    /,
) -> None: ...
def successors(parents: Buffer, indeg: Buffer, succ_ptr: Buffer, succ_idx: Buffer, /) -> bool: ...
def pair_loads(
    kind: Buffer, rank: Buffer, peer: Buffer, size: Buffer, npus: int, send: int, bytes: Buffer, msgs: Buffer, /
) -> None: ...
