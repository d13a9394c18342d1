"""The static message pairing, computed once for every level (in C: ``hub._native._verify.pairing``).

Per connection (src, dst, tag) the k-th SEND and the k-th RECV, each side in issue order, match
(the structure level checks them, the race analysis orders them, see docs/verify.md). The same
pass names each message's FIFO key (src, dst, tag, size), which the C walk uses, and lists the
consecutive SENDs (RECVs) of one key, whose order decides the pairing at run time (the race
analysis checks that happens-before orders them). Hashing makes it O(nodes); sorting 4M
messages by their keys cost seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._native import load_verify
from ..chakra import NodeType
from ..errors import UsageError
from ._flat import Flat

__all__ = ["Pairing", "pairing"]


@dataclass
class Pairing:
    """Per node (-1 for non-messages): ``conn`` (dense id of (src, dst, tag)), ``side`` (how many
    messages of its kind precede it on its connection, in issue order), ``key`` (dense id of
    (src, dst, tag, size)) and ``match`` (a RECV's SEND, when the connection has one for it);
    ``pairs`` holds the consecutive (2, k) SEND pairs and RECV pairs of one key."""

    conn: np.ndarray
    side: np.ndarray
    key: np.ndarray
    nconn: int
    nkeys: int
    match: np.ndarray
    pairs: list[np.ndarray]


def pairing(f: Flat, order: np.ndarray) -> Pairing:
    """The pairing of ``f`` whose nodes have issue positions ``order`` within their ranks."""
    n = f.n
    seq = np.empty(n, dtype=np.int64)  # global nodes in issue order, rank by rank
    seq[f.offsets[f.rank] + order] = np.arange(n, dtype=np.int64)
    kind = np.ascontiguousarray(f.kind, np.int8)
    ns, nr = int(np.count_nonzero(kind == NodeType.SEND)), int(np.count_nonzero(kind == NodeType.RECV))
    if n >= 2**31:
        raise UsageError(f"an algorithm of {n} nodes is beyond the verifier's limit of 2^31 nodes")
    # node indices and counts per connection fit int32 below 2^31 nodes: half the memory
    conn, side, key, match = (np.empty(n, dtype=np.int32) for _ in range(4))
    sp = np.empty((2, ns), dtype=np.int64)
    rp = np.empty((2, nr), dtype=np.int64)
    nconn, nkeys, ks, kr = load_verify().pairing(
        kind,
        np.ascontiguousarray(f.rank, np.int64),
        np.ascontiguousarray(f.peer, np.int32),
        np.ascontiguousarray(f.tag, np.int32),
        np.ascontiguousarray(f.size, np.int64),
        seq,
        conn,
        side,
        key,
        match,
        sp,
        rp,
    )
    # the pairs are copied, as they are few on most algorithms and a view would keep both full
    # tables alive
    return Pairing(conn, side, key, int(nconn), int(nkeys), match, [sp[:, :ks].copy(), rp[:, :kr].copy()])
