# Type stub of the C extension hub/_native/_sim.c (the event loop of hub.simulate).
from collections.abc import Callable
from typing import Any

def run(
    n: int,
    nranks: int,
    nchan: int,
    feeder: bool,
    reorder: Callable[[int, list[int]], list[int]],
    kind: Any,
    chan: Any,
    dur: Any,
    chan_delay: Any,
    succ_ptr: Any,
    succ_idx: Any,
    indeg: Any,
    rank: Any,
    perm: Any,
    ids: Any,
    aware: tuple[Any, ...] | None,
    res: tuple[Any, ...] | None,
    start: Any,
    fin: Any,
    cause: Any,
    rank_finish: Any,
) -> tuple[int, list[list[int]], list[list[int]], int]: ...
def pair_loads(kind: Any, rank: Any, peer: Any, size: Any, npus: int, send: int, bytes: Any, msgs: Any) -> None: ...
