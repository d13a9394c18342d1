"""The types the loaders return: what ``hub._native._sim`` and ``_verify`` offer, as Protocols.

mypy cannot name a module as a type, so :func:`hub._native.load_sim` cannot say "returns the
module ``_sim``"; it says "returns a :class:`SimExtension`", and its ``return _sim`` makes mypy
prove that the module (as its stub ``_sim.pyi`` describes it) is one. So a caller of a loader
is type-checked against the stub, and the stub against the C by ``tests/native/test_stubs.py``
(each function's ``PyArg_ParseTuple`` format). Arguments are positional-only, as the C takes them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

__all__ = ["SimExtension", "VerifyExtension"]

# anything with the buffer protocol (collections.abc.Buffer is Python 3.12+)
Buffer = Any


class SimExtension(Protocol):
    """``hub._native._sim``: the event loop of ``hub.simulate`` and the tables it walks."""

    def run(
        self,
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
        self, kind: Buffer, rank: Buffer, peer: Buffer, tagx: Buffer, size: Buffer, chan: Buffer, /
    ) -> tuple[int, bytes]: ...
    def layout(
        self,
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
    def successors(self, parents: Buffer, indeg: Buffer, succ_ptr: Buffer, succ_idx: Buffer, /) -> bool: ...
    def pair_loads(
        self,
        kind: Buffer,
        rank: Buffer,
        peer: Buffer,
        size: Buffer,
        npus: int,
        send: int,
        bytes: Buffer,
        msgs: Buffer,
        /,
    ) -> None: ...


class VerifyExtension(Protocol):
    """``hub._native._verify``: the verifier's per-node loops."""

    def csr(self, owner: Buffer, other: Buffer, n: int, ptr: Buffer, out: Buffer, /) -> None: ...
    def levels(self, pred_ptr: Buffer, succ_ptr: Buffer, succ: Buffer, level: Buffer, /) -> int: ...
    def chain_parents(
        self, pred_ptr: Buffer, pred: Buffer, succ_ptr: Buffer, level: Buffer, rounds: int, par: Buffer, /
    ) -> None: ...
    def chain_heads(self, par: Buffer, top: Buffer, /) -> None: ...
    def reach(
        self,
        succ_ptr: Buffer,
        succ: Buffer,
        level: Buffer,
        top: Buffer,
        index: Buffer,
        qa: Buffer,
        qb: Buffer,
        budget: int,
        out: Buffer,
        /,
    ) -> None: ...
    def pairing(
        self,
        kind: Buffer,
        rank: Buffer,
        peer: Buffer,
        tag: Buffer,
        size: Buffer,
        seq: Buffer,
        conn: Buffer,
        side: Buffer,
        key: Buffer,
        match: Buffer,
        spairs: Buffer,
        rpairs: Buffer,
        /,
    ) -> tuple[int, int, int, int]: ...
    def walk(
        self,
        kind: Buffer,
        key: Buffer,
        nkeys: int,
        dep_ptr: Buffer,
        succ_ptr: Buffer,
        succ: Buffer,
        data: tuple[Buffer, ...] | None,
        /,
    ) -> tuple[int, int]: ...
