"""PAT ("Parallel Aggregated Trees", NCCL >= 2.23): the op sequence NCCL's generator thread emits
(``PatAGAlgorithm`` / ``PatRSAlgorithm::getNextOp``, ``src/include/collectives.h``), re-derived
here as two small state machines.

Connections link rank r with r +- 2^d (dimension d). Each op moves ``nelem`` elements between a
receive slot of dimension ``recvDim`` (or the user buffer) and a send slot of dimension ``sendDim``
(or the user buffer); ``postRecv`` / ``postSend`` release / hand over a slot. Ops run in rounds of
``parallelFactor`` (one per worker group). Small per-rank parts are *aggregated*: ``aggFactor``
pieces share one message (``postFreq`` of them before a post).

Construction (both collectives): ``nrPow2`` = next power of two >= n; ``aggFactor`` doubles (and
``aggDelta`` = nrPow2 halves) while ``stepSize / (channelBytes x aggFactor) >= 2`` and
``aggFactor < n/2``; ``postFreq = aggFactor``; ``parallelFactor = min(16, postFreq)``; then
``aggFactor`` doubles once more per halving of the pipeline depth 8 (while < n/2).

All-gather walks the "aggregated steps" ``as`` in the order of a bit-counting sequence and per
step either receives (phase 0: data of rank r+s arrives on dimension 0), forwards (phase 1: from
dimension of the low bit to the next), or in the first phase (2) sends its own data up scaled
strides; reduce-scatter runs the mirror image (phases 0..4, with a final receive into the output).
Everything is rank-symmetric: rank r's ops are rank 0's with data ranks shifted by r.

Fields of an op (NCCL's names): ``flags recvDim sendDim recvOffset sendOffset stepOffset postRecv
postSend nelem last inpIx outIx``, plus what the kernel derives: the two peers and the absolute
slots read and written (per connection step counters, advanced by the posts at each round's end).
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from typing import Any

__all__ = ["PAT_FIELDS", "PatOp", "pat_ops", "pat_parallel_factor"]

PAT_FIELDS = (
    "flags", "recvDim", "sendDim", "recvOffset", "sendOffset", "stepOffset", "postRecv", "postSend",
    "nelem", "last", "inpIx", "outIx", "recvPeer", "sendPeer", "recvSlot", "sendSlot",
)  # fmt: skip
USED, SKIPPED = 1, 2

#: one op: a tuple of PAT_FIELDS, or ``(3,)`` for a skipped op (its group only joins the barriers)
PatOp = tuple[int, ...]


def _log2up(n: int) -> int:
    return (n - 1).bit_length() if n > 1 else 0


def _ffs(i: int, limit: int) -> int:
    """Index of the lowest set bit, ``limit`` when none (NCCL's firstBitSet)."""
    return (i & -i).bit_length() - 1 if i else limit


def _mirror(i: int, top: int, invert: bool) -> int:
    """Bit-reverse ``i`` over log2(top) bits (all-gather), or of its complement (reduce-scatter)."""
    out, mask, imask = 0, 1, top // 2
    while mask < top:
        if bool(i & mask) != invert:
            out += imask
        mask, imask = mask << 1, imask >> 1
    return out


def _new_peer(i: int, pow2: int) -> bool:
    return ((i ^ (pow2 - 1)) + 1).bit_count() == 1


class _Agg:
    """Construction shared by both generators."""

    def __init__(self, step_size: int, depth: int, max_par: int, offset: int, end: int, chunk: int, n: int):
        self.offset, self.end, self.chunk, self.n = offset, end, chunk, n
        self.nr_pow2 = self.agg_delta = 1 << _log2up(n)
        self.agg = 1
        size = end - offset
        while size > 0 and step_size // (size * self.agg) >= 2 and self.agg < n // 2:
            self.agg *= 2
            self.agg_delta //= 2
        self.post_freq = self.agg
        self.par = min(max_par, self.post_freq)
        d = depth
        while d > 1 and self.agg < n // 2:
            d //= 2
            self.agg *= 2
            self.agg_delta //= 2

    def nelem(self) -> int:
        return min(self.chunk, self.end - self.offset)


def _ag_ops(g: _Agg, count: int) -> Iterator[tuple[int, ...]]:
    """All-gather op fields (flags .. outIx) for rank 0, in generation order."""
    n, pf, apf = g.n, g.post_freq, g.par
    as_dim = _log2up(g.agg_delta)
    st: dict[str, Any] = {"v": 0, "bit_count": [0] * as_dim, "bit_zero": [1] * as_dim}

    def next_as() -> int:
        v: int = st["v"]
        bc: list[int] = st["bit_count"]
        bz: list[int] = st["bit_zero"]
        for d in range(as_dim):
            p = 1 << d
            bc[d] -= 1
            if bc[d] == 0:
                v ^= p
                bc[d] = p
                if not v & p:
                    bc[d] += _ffs(bz[d], as_dim) - 1
                    if bc[d] == 0:
                        v ^= p
                        bc[d] = p
                    bz[d] += 1
        st["v"] = v
        return v

    def reset() -> tuple[int, int, int, int]:
        scale = g.agg // 2
        st["v"] = 0
        st["bit_count"] = [as_dim - i for i in range(as_dim)]
        st["bit_zero"] = [1] * as_dim
        return g.nelem(), scale, 2 if scale else 1, next_as()

    nelem, scale, phase, as_ = reset()
    a, last_a = 0, g.agg // (2 * scale) if phase >= 2 else g.agg
    ad = g.agg_delta
    ps = [0] * 12
    while True:
        ps[9] = 0
        ps[8] = nelem
        ps[10] = g.offset
        skip = False
        if a >= last_a:
            skip = True
        elif phase == 0:
            s = a * ad + as_
            skip = s >= n
            ps[11] = (s % n) * count + g.offset
            ps[2], ps[1], ps[10], ps[4] = -1, 0, 0, -1
            ps[3] = (a % pf) * nelem
            ps[5] = 0
            ps[6] = 1 if (a % pf == pf - 1) or ((a + 1) * ad + as_ >= n) else 0
            ps[7] = 0
        elif phase == 1:
            s = a * ad + as_
            skip = s >= n
            ps[2] = send_dim = _ffs(s, g.nr_pow2)
            s -= 1 << send_dim
            ps[11] = ((n + s) % n) * count + g.offset
            ps[1] = recv_dim = _ffs(s, g.nr_pow2) if s else -1
            ps[4] = ps[3] = (a % pf) * nelem
            ps[7] = 1 if (a % pf == pf - 1) or ((a + 1) * ad + as_ >= n) else 0
            ps[6] = 1 if send_dim == 0 and ((a % pf == pf - 1) or ((a + 1) * ad + as_ - 1 >= n)) else 0
            ps[5] = 0 if send_dim == 0 else a // pf
            if recv_dim == -1:
                ps[3], ps[6] = -1, 0
            elif as_ - (1 << send_dim) == 0:
                fo = (a * ad) >> (recv_dim + 1)
                ps[3] = (fo % pf) * nelem
                ps[6] = 1 if send_dim == 0 and ((fo % pf == pf - 1) or ((((fo + 1) * 2) + 1) << recv_dim) >= n) else 0
                ps[5] = 0 if send_dim == 0 else fo // pf
            if s < n and send_dim == 0 and skip:
                ps[2], ps[4], ps[7] = -1, -1, 0
                skip = False
        else:  # phase 2
            s = (2 * a + 1) * scale * ad
            ps[7] = 1 if (a % pf == pf - 1) or ((2 * (a + 1) + 1) * scale * ad >= n) else 0
            ps[6] = 0
            skip = s >= n
            ps[2] = send_dim = _ffs(s, g.nr_pow2)
            s -= 1 << send_dim
            ps[4] = (a % pf) * nelem
            ps[5] = a // pf
            ps[11] = ((n + s) % n) * count + g.offset
            ps[1] = recv_dim = _ffs(s, g.nr_pow2) if s else -1
            if recv_dim == -1:
                ps[3] = -1
            else:
                fo = (a * 2 * scale * ad) >> (recv_dim + 1)
                ps[3] = (fo % pf) * nelem
                ps[5] = fo // pf
        a += 1
        if a >= last_a and a >= apf:
            p = phase
            if p == 2:
                scale //= 2
            phase = (2 if scale else 1) if p == 2 else (0 if as_ % 2 == 1 else 1) if p == 1 else 1
            if p == 0 or (p == 1 and as_ % 2 == 0):
                as_ = next_as()
            if p == 0 and as_ == ad // 2:
                g.offset += g.chunk
                if g.offset >= g.end:
                    ps[9] = 2
                else:
                    nelem, scale, phase, as_ = reset()
            a = 0
            last_a = g.agg // (2 * scale) if phase >= 2 else g.agg
        elif phase == 0 and as_ == 1 and g.offset + g.chunk >= g.end and a - 1 >= ((last_a - 1) // apf) * apf:
            ps[9] = 1
        ps[0] = USED | (SKIPPED if skip else 0)
        yield tuple(ps)
        if ps[9] == 2:
            return


def _rs_ops(g: _Agg, count: int) -> Iterator[tuple[int, ...]]:
    """Reduce-scatter op fields (flags .. outIx) for rank 0, in generation order."""
    n, pf, apf, ad = g.n, g.post_freq, g.par, g.agg_delta
    st = {"a": 0, "skipped": 0, "step_off": 0, "last_a": 0, "scale": 1, "phase": 0, "as": 0, "nelem": 0}

    def reset_a() -> None:
        st["a"] = st["skipped"] = st["step_off"] = 0
        la = g.agg
        if st["phase"] >= 2:
            la //= 2 * st["scale"]
        if st["phase"] == 4:
            la = 1
        st["last_a"] = la

    def reset() -> None:
        st["nelem"], st["phase"], st["scale"], st["as"] = g.nelem(), 0, 1, ad - 1
        reset_a()

    reset()
    ps = [0] * 12
    while True:
        a, phase, as_, nelem, last_a, scale = st["a"], st["phase"], st["as"], st["nelem"], st["last_a"], st["scale"]
        ps[9] = 0
        ps[8] = nelem
        ps[11] = g.offset
        ps[5] = st["step_off"]
        skip = False
        if a >= last_a:
            skip = True
        elif phase == 0:
            s = _mirror(a, last_a, True) * ad + as_
            skip = s >= n
            ps[10] = (s % n) * count + g.offset
            ps[1], ps[2], ps[11], ps[3] = -1, 0, 0, -1
            ps[4] = (a % pf) * nelem
            ps[7] = 1 if ((a % pf) + 1 >= pf) or (a == last_a - 1) else 0
            ps[6] = 0
        elif phase == 1:
            s = _mirror(a, last_a, True) * ad + as_
            skip = s >= n
            ps[1] = recv_dim = _ffs(s, g.nr_pow2)
            ps[4] = ps[3] = (a % pf) * nelem
            ps[7] = 0
            boundary = ((a % pf) + 1 >= pf) or (a == last_a - 1)
            if recv_dim == 0 and boundary:
                ps[7] = 1
            ps[6] = 1 if boundary else 0
            s -= 1 << recv_dim
            ps[10] = ((n + s) % n) * count + g.offset
            ps[2] = send_dim = _ffs(s, g.nr_pow2) if s else -1
            if send_dim == -1:
                ps[4] = -1
            elif as_ - (1 << recv_dim) == 0:
                if _new_peer(a, g.agg):
                    st["skipped"] = a
                    ps[5] = st["step_off"] = 0
                ps[4] = ((a - st["skipped"]) % pf) * nelem
            if s < n and skip:
                ps[1], ps[3], ps[6] = -1, -1, 0
                skip = False
            if recv_dim > 0 and (((a - st["skipped"]) % pf) + 1 >= pf) and not skip:
                st["step_off"] += 1
        elif phase == 2:
            s = (2 * _mirror(a, last_a, True) + 1) * scale * ad + 1
            ps[6] = 0
            skip = s >= n
            ps[1] = 0
            ps[7] = 1 if a == last_a - 1 else 0
            s -= 1
            if s < n and skip:
                ps[1], ps[3] = -1, -1
                skip = False
            elif not skip:
                fo = a + g.agg - g.agg // scale
                ps[6] |= 1 if (fo + 1) % pf == 0 else 0
                ps[3] = (fo % pf) * nelem
            ps[10] = ((n + s) % n) * count + g.offset
            ps[2] = _ffs(s, g.nr_pow2) if s else -1
            ps[7] |= 1 if (a + 1) % pf == 0 else 0
            ps[4] = (a % pf) * nelem
        elif phase == 3:
            s = (2 * _mirror(a, last_a, True) + 1) * scale * ad
            ps[6] = 1 if a == last_a - 1 else 0
            skip = s >= n
            ps[1] = recv_dim = _ffs(s, g.nr_pow2)
            ps[7] = 0
            s -= 1 << recv_dim
            ps[6] |= 1 if (a + 1) % pf == 0 else 0
            ps[3] = (a % pf) * nelem
            ps[10] = ((n + s) % n) * count + g.offset
            ps[2] = send_dim = _ffs(s, g.nr_pow2) if s else -1
            if s < n and skip:
                ps[1], ps[3], ps[6] = -1, -1, 0
                skip = False
            if _new_peer(a, g.agg // (2 * scale)):
                st["skipped"] = a
                ps[5] = st["step_off"] = 0
            fo = a - st["skipped"]
            if (fo % pf) + 1 >= pf and not skip:
                st["step_off"] += 1
            ps[4] = (fo % pf) * nelem if send_dim >= 0 else -1
        elif phase == 4:
            ps[1], ps[2] = 0, -1
            ps[10] = g.offset  # rank 0's own data
            ps[3] = ((g.agg - 1) % pf) * nelem
            ps[4], ps[6], ps[7] = -1, 1, 0
            g.offset += g.chunk
        a += 1
        st["a"] = a
        if a >= last_a and a >= apf:
            p = phase
            if p == 1:
                st["as"] -= 1
            if p == 3:
                st["scale"] *= 2
            as2, sc2 = st["as"], st["scale"]
            st["phase"] = (
                ((2 if g.agg > 1 else 4) if as2 == 1 else 1)
                if p == 0
                else (0 if as2 % 2 == 1 else 1)
                if p == 1
                else 3
                if p == 2
                else (2 if sc2 < g.agg else 4)
                if p == 3
                else 5
            )
            if p == 4:
                if g.offset >= g.end:
                    ps[9] = 2
                else:
                    reset()
            else:
                reset_a()
        elif phase == 4 and g.offset >= g.end:
            ps[9] = 1
        ps[0] = USED | (SKIPPED if skip else 0)
        yield tuple(ps)
        if ps[9] == 2:
            return


@lru_cache(maxsize=16)
def _raw(
    ag: bool, n: int, count: int, offset: int, channel_count: int, chunk: int
) -> tuple[int, tuple[tuple[int, ...], ...]]:
    """Rank 0's generator output (every rank's follows by symmetry); cached across ranks."""
    # NCCL passes stepSize = chunkCount x sizeof(T) and divides it by channelCount x sizeof(T):
    # the element size cancels, so elements are used throughout
    g = _Agg(chunk, 8, 16, offset, offset + channel_count, chunk, n)
    par = g.par
    return par, tuple((_ag_ops if ag else _rs_ops)(g, count))


def pat_parallel_factor(channel_count: int, chunk_count: int, nranks: int) -> int:
    return _Agg(chunk_count, 8, 16, 0, channel_count, chunk_count, nranks).par


def pat_ops(
    coll: str,
    nranks: int,
    rank: int,
    *,
    count: int,
    channel_offset: int,
    channel_count: int,
    chunk_count: int,
) -> tuple[int, list[PatOp]]:
    """(parallelFactor, ops) of ``rank`` as NCCL's generator emits them (counts in elements).

    Skipped ops are ``(3,)``; others carry all 16 :data:`PAT_FIELDS` (peers and slots derived)."""
    if coll not in ("AllGather", "ReduceScatter"):
        raise ValueError(f"PAT does {coll!r}? only AllGather and ReduceScatter")
    ag = coll == "AllGather"
    par, raw = _raw(ag, nranks, count, channel_offset, channel_count, chunk_count)
    ops: list[PatOp] = []
    n = nranks
    send_step = [0] * 32
    recv_step = [0] * 32
    for i0 in range(0, len(raw), par):
        round_ops = raw[i0 : i0 + par]
        posts: list[tuple[int, int, int, int]] = []
        for f in round_ops:
            if f[0] & SKIPPED:
                ops.append((f[0],))
                continue
            rd, sd = f[1], f[2]
            inp, out = f[10], f[11]
            if ag:  # data rank part of outIx shifts with the rank
                if count:
                    out = ((out // count + rank) % n) * count + out % count
            elif count:
                inp = ((inp // count + rank) % n) * count + inp % count
            rpeer = -1 if rd < 0 else ((rank + (1 << rd)) % n if ag else (rank - (1 << rd)) % n)
            speer = -1 if sd < 0 else ((rank - (1 << sd)) % n if ag else (rank + (1 << sd)) % n)
            rslot = -1 if rd < 0 else recv_step[rd] + (f[5] if ag else 0)
            sslot = -1 if sd < 0 else send_step[sd] + (0 if ag else f[5])
            ops.append((*f[:10], inp, out, rpeer, speer, rslot, sslot))
            posts.append((rd, sd, f[6], f[7]))
        for rd, sd, pr, pst in posts:
            if pr and rd >= 0:
                recv_step[rd] += 1
            if pst and sd >= 0:
                send_step[sd] += 1
    return par, ops
