# Type stub of the C extension hub/_native/_verify.c (the verifier's per-node loops).
from typing import Any

def csr(owner: Any, other: Any, n: int, ptr: Any, out: Any, /) -> None: ...
def levels(pred_ptr: Any, succ_ptr: Any, succ: Any, level: Any, /) -> int: ...
def chain_parents(pred_ptr: Any, pred: Any, succ_ptr: Any, level: Any, rounds: int, par: Any, /) -> None: ...
def chain_heads(par: Any, top: Any, /) -> None: ...
def reach(
    succ_ptr: Any, succ: Any, level: Any, top: Any, index: Any, qa: Any, qb: Any, budget: int, out: Any, /
) -> None: ...
def pairing(
    kind: Any,
    rank: Any,
    peer: Any,
    tag: Any,
    size: Any,
    seq: Any,
    conn: Any,
    side: Any,
    key: Any,
    match: Any,
    spairs: Any,
    rpairs: Any,
    /,
) -> tuple[int, int, int, int]: ...
def walk(
    kind: Any, key: Any, nkeys: int, dep_ptr: Any, succ_ptr: Any, succ: Any, data: tuple[Any, ...] | None, /
) -> tuple[int, int]: ...
