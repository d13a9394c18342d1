# Type stub of the compiled extension collhub_tacos/_score.c (see its header comment).
from typing import Any

# anything with the buffer protocol (collections.abc.Buffer is Python 3.12+)
Buffer = Any

def first_min(
    S: Buffer, H: Buffer, rows: int, cols: int, v: Buffer, u: Buffer, low: int, best: Buffer, val: Buffer, /
) -> None: ...
def take_columns(a: Buffer, rows: int, cols: int, order: Buffer, out: Buffer, /) -> None: ...
def bump(a: Buffer, flat: Buffer, /) -> None: ...
def claim(
    P: Buffer,
    HB: Buffer,
    CB: Buffer,
    rows: int,
    cols: int,
    v: Buffer,
    u: Buffer,
    low: int,
    best: Buffer,
    val: Buffer,
    /,
) -> None: ...
def take_packed(
    a: Buffer,
    rows: int,
    cols: int,
    order: Buffer,
    P: Buffer,
    HB: Buffer,
    CB: Buffer,
    HS: Buffer | None = None,
    NS: Buffer | None = None,
    /,
) -> None: ...
def land(P: Buffer, HB: Buffer, rows: int, cols: int, v: Buffer, c: Buffer, /) -> None: ...
def deliver_packed(
    arrays: tuple[Buffer, ...], rows: int, cols: int, links: int, depth: int, scarce: bool, until: float, /
) -> int: ...
def match_packed(
    arrays: tuple[Buffer, ...],
    rows: int,
    cols: int,
    links: int,
    depth: int,
    low: int,
    n_recs: int,
    t: float,
    until: float,
    /,
) -> tuple[int, float]: ...
