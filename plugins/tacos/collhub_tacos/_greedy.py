"""The greedy link-chunk matcher on the time-expanded network (TEN), event-driven and vectorised.

State is kept as boolean (NPU, chunk) matrices: ``has`` (arrived by now) and ``claimed``
(arrived or on its way), plus ``supply`` (how many in-neighbours of an NPU hold a chunk) and
per-chunk holder counts, all updated incrementally on arrival. At every event time:

1. transfers that end now deliver their chunk (``has`` gains the bit);
2. every free link ``u -> v`` is a candidate for the chunks ``has[u] & ~claimed[v]``: chunks
   ``u`` holds and ``v`` neither holds nor is already being sent. The free links are shuffled
   and dealt into *slots* so that one slot holds at most one link into each destination; slot
   after slot, each link takes one candidate chunk (vectorised over the whole slot), so no
   destination ever gets the same chunk on two links. The choice (policy ``scarce``) is the
   chunk the fewest *other* in-neighbours of the destination could supply, then the chunk the
   fewest NPUs hold (the chunk columns are re-sorted by holder count, ties at random, every
   event, or every 4th on big problems), so a link that alone can deliver a chunk does so, links
   with alternatives keep them, and rare chunks spread first. Policy ``random`` drops the
   supply count.
3. the clock jumps to the next time a link frees or a chunk lands.

This is TACOS's rule (unsatisfied (chunk, destination) pairs matched, in random order, to free
incoming links whose source holds the chunk), with one change: a (chunk, destination) pair that
is already in flight is not matched again unless a free link would land it strictly earlier
(possible only when links into the destination differ in speed). When that happens the slower
transfer becomes redundant, and the *replacement rule* applies to it at once: it is relabelled
with another chunk that its source already held when it started and its destination still
lacks and has not claimed; if there is none the transfer is cancelled and its link is freed
early, at the current time. TACOS instead lets duplicates run to the end and relabels them on
arrival, which can name a chunk the source only got after the transfer began.

Compiled path, uniform-speed sparse networks (under 64 in-links per NPU): the state is one byte
per (NPU, column), claimed/has/supply packed, plus has and claimed bitsets, and each event's
slots are matched in one compiled call, destination by destination (``_score.claim``): the scan
skips 64 columns per two words where a link has no candidate. The rest of the event is compiled
too: the landings (``deliver_packed``) and the deal, the transfers' start, their records and the next
event time (``match_packed``); Python keeps the random draws (this generator's permutation and
re-sort keys) and the rarest-first re-sort's column order. The numpy path is unchanged and makes
the same schedules (tested, and against schedules recorded before the change).

Randomness comes from one ``numpy.random.Generator`` seeded by the caller: a seed reproduces a
schedule bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType

import numpy as np

from hub.errors import AlgorithmError

from ._network import Network


def _load_compiled() -> ModuleType | None:
    """The compiled scoring (setup.py); without it the numpy path below gives the same schedules."""
    try:
        from . import _score
    except ImportError:  # pragma: no cover - a build without a C compiler
        return None
    return _score


_compiled = _load_compiled()

__all__ = ["Schedule", "greedy_allgather", "has_mixed_speeds"]

_EPS = 1e-9


@dataclass(frozen=True)
class Schedule:
    """An all-gather schedule: transfer ``i`` moves ``chunk[i]`` over link ``link[i]`` (indices
    into the network's link arrays), starting at ``start[i]`` and landing at ``end[i]`` (µs).
    Chunk ``c`` starts at NPU ``c // chunks``."""

    chunks: int
    chunk: np.ndarray
    link: np.ndarray
    start: np.ndarray
    end: np.ndarray
    makespan: float
    events: int
    replaced: int = 0
    cancelled: int = 0


def has_mixed_speeds(net: Network, delay: np.ndarray) -> bool:
    """Whether some NPU's in-links differ in speed (the slow-link rule can matter)."""
    lo = np.full(net.npus, np.inf)
    hi = np.full(net.npus, -np.inf)
    np.minimum.at(lo, net.dst, delay)
    np.maximum.at(hi, net.dst, delay)
    return bool((hi - lo > _EPS * np.maximum(hi, 1.0)).any())


def _csr(keys: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(ptr, idx): the indices i with keys[i] == x are idx[ptr[x]:ptr[x+1]]."""
    idx = np.argsort(keys, kind="stable")
    ptr = np.searchsorted(keys[idx], np.arange(n + 1))
    return ptr, idx


def _deal(
    links: np.ndarray, dst: np.ndarray, rng: np.random.Generator, delay: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(links by destination, each destination's in its slot order; their slot numbers): see
    :func:`_slots`."""
    f = links[rng.permutation(links.size)]
    if delay is not None:
        f = f[np.argsort(delay[f], kind="stable")]
    f = f[np.argsort(dst[f], kind="stable")]
    d = dst[f]
    first = np.flatnonzero(np.r_[True, d[1:] != d[:-1]])
    sizes = np.diff(np.r_[first, d.size])
    return f, np.arange(d.size) - np.repeat(first, sizes)


def _slots(
    links: np.ndarray, dst: np.ndarray, rng: np.random.Generator, delay: np.ndarray | None = None
) -> list[np.ndarray]:
    """Shuffle ``links`` and split them into slots with at most one link per destination; with
    ``delay``, a destination's faster links come first (they choose their chunks first)."""
    f, slot = _deal(links, dst, rng, delay)
    order = np.argsort(slot, kind="stable")
    bounds = np.searchsorted(slot[order], np.arange(int(slot.max()) + 2))
    return [f[order[bounds[s] : bounds[s + 1]]] for s in range(bounds.size - 1)]


def _bump(a: np.ndarray, flat: np.ndarray, compiled: bool = True) -> None:
    """``np.add.at(a.ravel(), flat, 1)``, faster: repeated indices (rare) are counted by one sort."""
    assert a.flags.c_contiguous  # ravel() must be a view, not a copy
    if compiled and _compiled is not None:
        _compiled.bump(a, np.ascontiguousarray(flat, dtype=np.int64))
        return
    flat = np.sort(flat)
    first = np.flatnonzero(np.r_[True, flat[1:] != flat[:-1]]) if flat.size else flat
    if first.size == flat.size:
        a.ravel()[flat] += 1
    else:
        a.ravel()[flat[first]] += np.diff(np.r_[first, flat.size]).astype(a.dtype)


class _State:
    """Mutable matcher state (one all-gather run)."""

    def __init__(
        self,
        net: Network,
        k: int,
        busy: np.ndarray,
        delay: np.ndarray,
        policy: str,
        rng: np.random.Generator,
        slow_rule: bool = True,
        compiled: bool = True,
    ) -> None:
        n = net.npus
        #: score links with the compiled scan (the numpy path stays, the reference of the tests)
        self.compiled = compiled
        self.policy = policy
        self.net, self.k, self.busy, self.delay = net, k, busy, delay
        self.C = n * k
        # matrices are indexed by *column*, a random relabelling of the chunks: ties between
        # equally good chunks go to the lowest column, i.e. to a random priority fixed per run
        self.col_of = rng.permutation(self.C)
        self.chunk_of = np.argsort(self.col_of)
        own = np.arange(self.C)
        self.has = np.zeros((n, self.C), dtype=bool)
        self.has[own // k, self.col_of] = True
        self.claimed = self.has.copy()
        e = net.links
        self.free_at = np.zeros(e)
        # in flight per link: up to D chunks (the pipelined model lets a link start the next
        # chunk while the last one is still travelling its latency); one row slot each
        d = int(np.ceil(float(np.max(delay / busy)) + 1e-9)) if e else 1
        self.D = max(d, 1)
        self.land_at = np.full((e, self.D), np.inf)
        self.start_at = np.zeros((e, self.D))
        self.carry = np.full((e, self.D), -1, dtype=np.int64)  # chunk (column) in flight
        self.rec_id = np.full((e, self.D), -1, dtype=np.int64)  # its record index
        self.mixed = self._mixed_destinations()
        # supply[v, c]: how many in-neighbours of v hold c (the score)
        self.out_of = _csr(net.src, n)
        self.in_of = _csr(net.dst, n)
        deg = int(np.bincount(net.dst, minlength=n).max())
        if deg >= 1 << 14:  # pragma: no cover - 16384 in-links per NPU
            raise AlgorithmError(f"tacos: an NPU has {deg} in-links; at most 16383 are supported")
        self.supply = np.zeros((n, self.C), dtype=np.uint8 if deg < 128 else np.int16)
        # dense graphs (unwound switches: every NPU linked to every other) recount the supply with
        # one matrix product per event instead of one increment per (landing, out-link)
        self.dense = e > 32 * n
        if self.dense:
            self.adj_t = np.zeros((n, n), dtype=np.float32)
            self.adj_t[net.dst, net.src] = 1.0
            self._recount()
        else:
            for j in range(k):
                np.add.at(self.supply, (net.dst, self.col_of[net.src.astype(np.int64) * k + j]), 1)
        self.holders = np.ones(self.C, dtype=np.int64)  # per column
        # coming[v, c]: in-neighbours of v with c on its way (mixed-speed sparse networks only)
        self.coming = np.zeros((n, self.C), dtype=np.int16) if self.mixed.any() and not self.dense else None
        # a link is slow when it takes over 1.5x the fastest link into its destination; covered[v, c]:
        # fast in-neighbours of v that hold or are getting c (a slow link leaves such chunks alone)
        self.covered: np.ndarray | None = None
        if self.coming is not None and slow_rule:
            fastest = np.full(n, np.inf)
            np.minimum.at(fastest, net.dst, busy)
            self.slow = busy > 1.5 * fastest[net.dst]
            self.fast_out = _csr(np.where(self.slow, -1, net.src), n)  # fast links only (src -1 = none)
            self.covered = np.zeros((n, self.C), dtype=bool)
            fl = np.flatnonzero(~self.slow)
            for j in range(k):
                self.covered[net.dst[fl], self.col_of[net.src[fl].astype(np.int64) * k + j]] = True
        self.rng = rng
        # columns looked at first per link (see match): rarest-first order puts the likely answer early
        # (below 256 chunks the second pass costs more than it saves)
        self._head = self.C if self.C < 256 else self.C // 8
        self._scratch = np.empty(0, dtype=np.uint8)
        self._spares: list[np.ndarray] = []  # matrices a re-sort replaced (see _take_columns)
        # where the score is the supply itself (no chunks-on-their-way term, no matrix recount), the
        # key matrices of match are kept up to date with the state instead of rebuilt every event
        self.kept = self.coming is None and not self.dense and self.supply.dtype == np.uint8
        self.key_dtype = self.supply.dtype
        if self.kept:
            self._H = (~self.has).view(np.uint8) << np.uint8(7)
            self._S = (self.supply if policy == "scarce" else np.zeros_like(self.supply)) | (
                self.claimed.view(np.uint8) << np.uint8(7)
            )
            # then S and H are the whole state (has = H == 0, claimed = S >> 7, supply = S & 127):
            # the separate matrices are dropped, so that a stray use fails instead of reading stale data
            self.has = self.claimed = np.zeros((0, 0), dtype=bool)
            self.supply = np.zeros((0, 0), dtype=np.uint8)
        # the compiled path where supply < 64 packs has into S (bit 6; H is dropped) and keeps two
        # bitsets of it, has and claimed: the scan reads 2 words per 64 columns (see _score.c)
        self.packed = self.kept and compiled and _compiled is not None and deg < 64
        if self.packed:
            self._S |= (self._H == 0).view(np.uint8) << np.uint8(6)
            self._H = np.zeros((0, 0), dtype=np.uint8)
            self._words = (self.C + 63) // 64
            self._HB = np.zeros((n, self._words), dtype=np.uint64)
            self._CB = np.zeros((n, self._words), dtype=np.uint64)
            # their summaries, one bit per word (HB's not zero, CB's not full): the scan's skip list
            self._HS = np.zeros((n, (self._words + 63) // 64), dtype=np.uint64)
            self._NS = np.zeros_like(self._HS)
            self._permute_packed(np.arange(self.C, dtype=np.int32))
            # the event loop's index work in C (deliver_packed, match_packed): int64 link ends and
            # out-links, and the records written in place (one transfer per delivery: uniform
            # speeds never replace or cancel one)
            self._src64 = np.ascontiguousarray(net.src, dtype=np.int64)
            self._dst64 = np.ascontiguousarray(net.dst, dtype=np.int64)
            self._times64 = (
                np.ascontiguousarray(busy, dtype=np.float64),
                np.ascontiguousarray(delay, dtype=np.float64),
            )
            self._out64 = tuple(np.ascontiguousarray(a, dtype=np.int64) for a in self.out_of)
            cap = n * (self.C - k)
            self._rec_chunk = np.zeros(cap, dtype=np.int32)
            self._rec_link = np.zeros(cap, dtype=np.int32)
            self._rec_start = np.zeros(cap)
            self._rec_end = np.zeros(cap)
            self._next: tuple[float, float] | None = None  # (event time, next_time) from match_packed
        self.recs: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.n_recs = 0
        self.dead: list[int] = []  # cancelled record indices
        self.relabel: dict[int, int] = {}  # record index -> replacement chunk
        self.remaining = n * (self.C - k)
        self.replaced = 0
        self.cancelled = 0

    def _score(self) -> np.ndarray:
        """Suppliers per (NPU, chunk): holders among the in-neighbours, plus, on mixed-speed
        networks, in-neighbours that have the chunk on its way (a slow link then leaves chunks
        a neighbour is about to get to the neighbour's fast link, and NPUs sharing slow links
        pull different chunks)."""
        if self.coming is None:
            return self.supply
        top = 127 if self.supply.dtype == np.uint8 else (1 << 14) - 1
        return np.minimum(self.supply.astype(np.int16) + self.coming, top).astype(self.supply.dtype)

    def _announce(self, v: np.ndarray, c: np.ndarray) -> None:
        """NPUs ``v`` claimed chunks ``c``: their out-neighbours count them as coming."""
        if self.covered is not None:
            fp, fi = self.fast_out
            cnt = fp[v + 1] - fp[v]
            fo = fi[np.repeat(fp[v], cnt) + (np.arange(cnt.sum()) - np.repeat(np.cumsum(cnt) - cnt, cnt))]
            self.covered[self.net.dst[fo], np.repeat(c, cnt)] = True
        ptr, idx = self.out_of
        cnt = ptr[v + 1] - ptr[v]
        outs = idx[np.repeat(ptr[v], cnt) + (np.arange(cnt.sum()) - np.repeat(np.cumsum(cnt) - cnt, cnt))]
        assert self.coming is not None  # called only on mixed-speed sparse networks
        np.add.at(self.coming, (self.net.dst[outs], np.repeat(c, cnt)), 1)

    def _arrived(self, v: np.ndarray, c: np.ndarray) -> None:
        """Claimed chunks that landed stop counting as coming (they count as held)."""
        ptr, idx = self.out_of
        cnt = ptr[v + 1] - ptr[v]
        outs = idx[np.repeat(ptr[v], cnt) + (np.arange(cnt.sum()) - np.repeat(np.cumsum(cnt) - cnt, cnt))]
        assert self.coming is not None  # called only on mixed-speed sparse networks
        np.subtract.at(self.coming, (self.net.dst[outs], np.repeat(c, cnt)), 1)

    def _recount(self) -> None:
        """supply = (in-adjacency) @ has, saturated to the score's dtype."""
        prod = self.adj_t @ self.has.astype(np.float32)
        top = 127 if self.supply.dtype == np.uint8 else (1 << 14) - 1
        np.minimum(prod, top, out=prod)
        self.supply[...] = prod.astype(self.supply.dtype)

    def _mixed_destinations(self) -> np.ndarray:
        """NPUs whose in-links differ in speed: only there can a later transfer land first."""
        n = self.net.npus
        lo = np.full(n, np.inf)
        hi = np.full(n, -np.inf)
        np.minimum.at(lo, self.net.dst, self.delay)
        np.maximum.at(hi, self.net.dst, self.delay)
        return hi - lo > _EPS * np.maximum(hi, 1.0)

    def rarest_first(self) -> None:
        """Relabel the columns so that rarer chunks (fewer holders) come first, ties at random:
        the first-minimum rule of the matcher then prefers them."""
        order = np.lexsort((self.rng.random(self.C), self.holders))
        inv = np.empty(self.C, dtype=np.int64)
        inv[order] = np.arange(self.C)
        if self.packed:
            self._permute_packed(order.astype(np.int32))
        elif self.kept and self.compiled and _compiled is not None:
            self._S = self._take_columns(self._S, order)
            self._H = self._take_columns(self._H, order)
        elif self.kept:
            self._S = np.take(self._S, order, axis=1)
            self._H = np.take(self._H, order, axis=1)
        else:
            self.has = np.take(self.has, order, axis=1)
            self.claimed = np.take(self.claimed, order, axis=1)
            self.supply = np.take(self.supply, order, axis=1)
        if self.coming is not None:
            self.coming = np.take(self.coming, order, axis=1)
        if self.covered is not None:
            self.covered = np.take(self.covered, order, axis=1)
        self.holders = self.holders[order]
        self.chunk_of = self.chunk_of[order]
        self.col_of = np.argsort(self.chunk_of)
        busy = self.carry >= 0
        self.carry[busy] = inv[self.carry[busy]]

    def _take_columns(self, a: np.ndarray, order: np.ndarray) -> np.ndarray:
        """``np.take(a, order, axis=1)`` by the compiled gather, into a spare matrix (one that an
        earlier re-sort replaced: no fresh 16 MiB and its page faults per re-sort)."""
        assert _compiled is not None
        fits = [i for i, m in enumerate(self._spares) if m.shape == a.shape and m.dtype == a.dtype]
        out = self._spares.pop(fits[0]) if fits else np.empty_like(a)
        _compiled.take_columns(a, a.shape[0], a.shape[1], np.ascontiguousarray(order, dtype=np.int64), out)
        self._spares.append(a)
        return out

    def _permute_packed(self, order: np.ndarray) -> None:
        """The packed state's columns in ``order``, its bitsets rebuilt from it (compiled)."""
        assert _compiled is not None
        fits = [i for i, m in enumerate(self._spares) if m.shape == self._S.shape]
        out = self._spares.pop(fits[0]) if fits else np.empty_like(self._S)
        n = self.net.npus
        _compiled.take_packed(self._S, n, self.C, order, out, self._HB, self._CB, self._HS, self._NS)
        self._spares.append(self._S)
        self._S = out

    # -- arrivals ----------------------------------------------------------------------------
    def deliver(self, t: float) -> None:
        if self.packed:
            assert _compiled is not None
            arrays = (self._S, self._HB, self.land_at, self.carry, self._dst64, *self._out64, self.holders, self._HS)
            e, d = self.land_at.shape
            scarce = self.policy == "scarce"
            self.remaining -= _compiled.deliver_packed(arrays, self.net.npus, self.C, e, d, scarce, t + _EPS)
            return
        dl, ds = np.nonzero(self.land_at <= t + _EPS)
        if not dl.size:
            return
        done = dl
        c = self.carry[dl, ds]
        v = self.net.dst[done].astype(np.int64)
        if not self.kept:
            self.has[v, c] = True
        self.holders += np.bincount(c, minlength=self.C)
        if self.coming is not None:
            self._arrived(v, c)
        if self.dense:
            self._recount()
        else:
            ptr, idx = self.out_of
            cnt = ptr[v + 1] - ptr[v]
            outs = idx[np.repeat(ptr[v], cnt) + (np.arange(cnt.sum()) - np.repeat(np.cumsum(cnt) - cnt, cnt))]
            flat = self.net.dst[outs].astype(np.int64) * self.C + np.repeat(c, cnt)
            if not self.kept:
                _bump(self.supply, flat, self.compiled)
            elif self.policy == "scarce":
                # supply < 128 (< 64 packed): the count never reaches the claimed (or has) bit
                _bump(self._S, flat, self.compiled)
        if self.packed:
            assert _compiled is not None
            _compiled.land(self._S, self._HB, self.net.npus, self.C, v, np.ascontiguousarray(c, dtype=np.int64))
        elif self.kept:
            self._H[v, c] = 0
        self.land_at[dl, ds] = np.inf
        self.carry[dl, ds] = -1
        self.remaining -= done.size

    # -- matching ----------------------------------------------------------------------------
    def match(self, t: float, rng: np.random.Generator) -> None:
        free = np.flatnonzero(self.free_at <= t + _EPS)
        if not free.size:
            return
        # every candidate's key is at least `low` (its source holds it, so its supply is >= 1): a
        # link whose first columns reach `low` needs no look at the rest (first minimum = lowest column)
        low = 1 if self.policy == "scarce" else 0
        if self.packed:
            self._match_packed(t, free, rng, low)
            return
        src, dst = self.net.src, self.net.dst
        kt, top = (np.uint8, 7) if self.key_dtype == np.uint8 else (np.int16, 14)
        flag = kt(1 << top)
        # per event: S = score with the top bit set where already claimed, H = top bit where
        # the source lacks the chunk; per slot the key is one gather of each and an OR
        H: np.ndarray
        S: np.ndarray
        lack = (~self.has).view(np.uint8)
        claimed = self.claimed.view(np.uint8)
        if self.kept:
            S, H = self._S, self._H
        elif kt is np.uint8:
            H = lack << np.uint8(7)
            S = (self._score() if self.policy == "scarce" else np.zeros_like(self.supply)) | (claimed << np.uint8(7))
        else:
            H = lack.astype(np.int16) << np.int16(14)
            S = (self._score() if self.policy == "scarce" else np.zeros_like(self.supply)) | (
                claimed.astype(np.int16) << np.int16(14)
            )
        self._S, self._flag = S, flag  # _replace claims chunks too
        self._latest: np.ndarray | None = None  # per event (see _latest_landing)
        for links in _slots(free, dst, rng, self.delay if self.mixed.any() else None):
            v = dst[links]
            u = src[links]
            slow = np.flatnonzero(self.slow[links]) if self.covered is not None else None
            if _compiled is not None and self.compiled and (slow is None or not slow.size):
                best, val = self._first_min_compiled(S, H, v, u, low)
            else:
                best, val = self._first_min_split(S, H, links, v, u, slow, low)
            hit = val < flag
            if hit.any():
                lk, c = links[hit], best[hit].astype(np.int64)
                vv = dst[lk]
                if not self.kept:
                    self.claimed[vv, c] = True
                if self.coming is not None:
                    self._announce(vv, c)
                S[vv, c] |= flag
                self._start(t, lk, c)
            if self.mixed.any():
                self._overtake(t, links, rng)

    def _match_packed(self, t: float, free: np.ndarray, rng: np.random.Generator, low: int) -> None:
        """The whole event's matching in one compiled call (``_score.match_packed``): the free links
        shuffled (this generator's permutation, as :func:`_deal`) and dealt by destination, every
        link's first minimum claimed (``claim``), the transfers started in slot order and recorded.
        Uniform link speeds: nothing but the claims at a destination changes between slots (no
        landing, no overtaking), so the links can go destination by destination, each destination's
        in slot order (its rows stay in cache), and the transfers then start in slot order, as slot
        after slot would. The call also gives the next event time (see :meth:`next_time`)."""
        assert _compiled is not None
        perm = rng.permutation(free.size)
        arrays = (
            self._S, self._HB, self._CB, free, perm, self._src64, self._dst64, *self._times64,
            self.free_at, self.land_at, self.start_at, self.carry, self.rec_id, self.chunk_of,
            self._rec_chunk, self._rec_link, self._rec_start, self._rec_end, self._HS, self._NS,
        )  # fmt: skip
        e, d = self.land_at.shape
        self.n_recs, nxt = _compiled.match_packed(arrays, self.net.npus, self.C, e, d, low, self.n_recs, t, t + _EPS)
        self._next = (t, nxt)

    def _first_min_split(
        self,
        S: np.ndarray,
        H: np.ndarray,
        links: np.ndarray,
        v: np.ndarray,
        u: np.ndarray,
        slow: np.ndarray | None,
        low: int,
    ) -> tuple[np.ndarray, np.ndarray]:
        """numpy's first minimum per link: the first ``_head`` columns, then the rest for the
        links whose best key there is above ``low``."""
        best, val = self._first_min(S, H, v, u, slow, 0, self._head)
        rest = np.flatnonzero(val > low)
        if rest.size and self._head < self.C:
            r_best, r_val = self._first_min(
                S,
                H,
                v[rest],
                u[rest],
                None if slow is None else np.flatnonzero(self.slow[links[rest]]),
                self._head,
                self.C,
            )
            later = r_val < val[rest]
            best[rest[later]] = r_best[later] + self._head
            val[rest[later]] = r_val[later]
        return best, val

    def _first_min_compiled(
        self, S: np.ndarray, H: np.ndarray, v: np.ndarray, u: np.ndarray, low: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """The same first minimum over every column, by the compiled scan (``_score.c``), for the
        links with a candidate (a key below the flag); the others get the flag as their key."""
        assert _compiled is not None
        best = np.empty(v.size, dtype=np.int64)
        val = np.empty(v.size, dtype=S.dtype)
        S = np.ascontiguousarray(S)
        H = np.ascontiguousarray(H, dtype=S.dtype)
        _compiled.first_min(S, H, S.shape[0], S.shape[1], v.astype(np.int64), u.astype(np.int64), low, best, val)
        return best, val

    def _first_min(
        self, S: np.ndarray, H: np.ndarray, v: np.ndarray, u: np.ndarray, slow: np.ndarray | None, lo: int, hi: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Per link (``u -> v``), the first column of ``lo:hi`` with the smallest key and that key."""
        kt, top = (np.uint8, 7) if S.dtype == np.uint8 else (np.int16, 14)
        Sv, Hv = S[:, lo:hi], H[:, lo:hi]
        buf = self._buffer(S.dtype, v.size, hi - lo)
        if v.size == self.net.npus and not self.mixed.any():
            # a slot into every NPU (the usual case): its destination rows are S itself, in order
            perm = np.argsort(v)
            if np.array_equal(v[perm], np.arange(v.size)):
                np.take(Hv, u[perm], axis=0, out=buf)
                buf |= Sv
                best = np.empty(v.size, dtype=np.int64)
                best[perm] = buf.argmin(axis=1)
                val = np.empty(v.size, dtype=buf.dtype)
                val[perm] = buf[np.arange(v.size), best[perm]]
                return best, val
        key = np.take(Sv, v, axis=0, out=buf)
        key |= np.take(Hv, u, axis=0)
        if slow is not None and slow.size:
            assert self.covered is not None
            key[slow] |= np.take(self.covered[:, lo:hi], v[slow], axis=0).view(np.uint8).astype(kt) << kt(top)
        best = key.argmin(axis=1)
        return best, key[np.arange(v.size), best]

    def _buffer(self, dtype: np.dtype, rows: int, cols: int) -> np.ndarray:
        """A reused (rows, cols) scratch array (fresh big arrays every slot cost page faults)."""
        need = rows * cols
        if self._scratch.dtype != dtype or self._scratch.size < need:
            self._scratch = np.empty(max(need, self.net.npus * self.C), dtype=dtype)
        return self._scratch[:need].reshape(rows, cols)

    def _start(self, t: float, links: np.ndarray, chunk: np.ndarray) -> None:
        self.free_at[links] = t + self.busy[links]
        d = np.argmax(self.carry[links] < 0, axis=1)  # a free flight slot (one always is)
        self.land_at[links, d] = t + self.delay[links]
        self.start_at[links, d] = t
        self.carry[links, d] = chunk
        self.rec_id[links, d] = np.arange(self.n_recs, self.n_recs + links.size)
        self.n_recs += links.size
        self.recs.append((self.chunk_of[chunk].astype(np.int32), links.astype(np.int32), np.full(links.size, t)))

    def _overtake(self, t: float, links: np.ndarray, rng: np.random.Generator) -> None:
        """Links into mixed-speed destinations still free after their slot may land an in-flight
        chunk earlier than its current transfer; that transfer is then replaced or cancelled."""
        src, dst = self.net.src, self.net.dst
        idle = links[(self.free_at[links] <= t + _EPS) & self.mixed[dst[links]]]
        if not idle.size:
            return
        # only where something in flight lands later than this link would (vectorised filter)
        idle = idle[t + self.delay[idle] + _EPS < self._latest_landing()[dst[idle]]]
        ptr, idx = self.in_of
        for ln in idle.tolist():
            v, u = int(dst[ln]), int(src[ln])
            arrive = t + self.delay[ln]
            into = idx[ptr[v] : ptr[v + 1]]
            sub_l, isl = np.nonzero((self.land_at[into] > arrive + _EPS) & (self.carry[into] >= 0))
            il = into[sub_l]
            if not il.size:
                continue
            held = self.has[u, self.carry[il, isl]]
            if not held.any():
                continue
            j = int(rng.choice(np.flatnonzero(held)))
            c = int(self.carry[il[j], isl[j]])
            self._replace(t, int(il[j]), int(isl[j]), rng)
            self._start(t, np.array([ln]), np.array([c]))

    def _latest_landing(self) -> np.ndarray:
        """Per NPU, the latest landing time of a chunk in flight to it (-inf if none), as of the
        start of the event (a filter: transfers started in this event are not overtaken)."""
        if self._latest is not None:
            return self._latest
        out = np.full(self.net.npus, -np.inf)
        land = np.where(np.isfinite(self.land_at), self.land_at, -np.inf).max(axis=1)
        np.maximum.at(out, self.net.dst, land)
        self._latest = out
        return out

    def _replace(self, t: float, ln: int, slot: int, rng: np.random.Generator) -> None:
        """The replacement rule for the now redundant transfer on link ``ln`` (module docs)."""
        u, v = int(self.net.src[ln]), int(self.net.dst[ln])
        began = float(self.start_at[ln, slot])
        cand = np.flatnonzero(self._held_at(u, began) & ~self.claimed[v])
        rid = int(self.rec_id[ln, slot])
        if cand.size:
            c = int(cand[int(rng.integers(cand.size))])
            self.claimed[v, c] = True
            self._S[v, c] |= self._flag
            if self.coming is not None:
                self._announce(np.array([v]), np.array([c]))
            self.carry[ln, slot] = c
            self.relabel[rid] = int(self.chunk_of[c])
            self.replaced += 1
            return
        # nothing to carry instead: cancel it; the link is free from now (freed early)
        self.dead.append(rid)
        self.cancelled += 1
        if began + self.busy[ln] > t + _EPS:  # it still occupies the link: free it now
            self.free_at[ln] = t
        self.land_at[ln, slot] = np.inf
        self.carry[ln, slot] = -1
        # (the overtaking transfer delivers the chunk and is counted when it lands)

    def _held_at(self, u: int, when: float) -> np.ndarray:
        """The chunks NPU ``u`` had by time ``when`` (its own, plus every transfer landed by then)."""
        out = np.zeros(self.C, dtype=bool)
        out[self.col_of[u * self.k : (u + 1) * self.k]] = True
        dead = set(self.dead)
        base = 0
        for chunk, links, start in self.recs:
            sel = np.flatnonzero((self.net.dst[links] == u) & (start + self.delay[links] <= when + _EPS))
            for i in sel.tolist():
                rid = base + i
                if rid not in dead:
                    out[self.col_of[self.relabel.get(rid, int(chunk[i]))]] = True
            base += chunk.size
        return out

    def next_time(self, t: float) -> float:
        if self.packed and self._next is not None and self._next[0] == t:
            return self._next[1]  # computed by this event's match_packed
        busy = self.free_at[self.free_at > t + _EPS]
        nxt = min(float(self.land_at.min()), float(busy.min()) if busy.size else np.inf)
        return nxt

    def schedule(self, events: int) -> Schedule:
        if self.packed:  # recorded in place by match_packed, landing times included; nothing relabelled
            n = self.n_recs
            chunk, link, start, end = self._rec_chunk[:n], self._rec_link[:n], self._rec_start[:n], self._rec_end[:n]
            makespan = float(end.max()) if n else 0.0
            return Schedule(self.k, chunk, link, start, end, makespan, events, self.replaced, self.cancelled)
        chunk = np.concatenate([r[0] for r in self.recs]) if self.recs else np.zeros(0, np.int32)
        link = np.concatenate([r[1] for r in self.recs]) if self.recs else np.zeros(0, np.int32)
        start = np.concatenate([r[2] for r in self.recs]) if self.recs else np.zeros(0)
        for rid, c in self.relabel.items():
            chunk[rid] = c
        if self.dead:
            keep = np.ones(chunk.size, dtype=bool)
            keep[np.asarray(self.dead)] = False
            chunk, link, start = chunk[keep], link[keep], start[keep]
        end = start + self.delay[link]
        makespan = float(end.max()) if end.size else 0.0
        return Schedule(self.k, chunk, link, start, end, makespan, events, self.replaced, self.cancelled)


def greedy_allgather(
    net: Network,
    chunks: int,
    busy: np.ndarray,
    delay: np.ndarray,
    rng: np.random.Generator,
    progress: Callable[[int, int], None] | None = None,
    policy: str = "scarce",
    slow_rule: bool = True,
    compiled: bool = True,
) -> Schedule:
    """All-gather of ``chunks`` chunks per NPU on ``net`` (link busy/landing times in µs per chunk).

    ``slow_rule`` (mixed-speed networks): a link over 1.5x slower than the fastest link into its
    destination leaves alone the chunks a faster in-neighbour holds or is getting. ``compiled``:
    score with the compiled scan where it applies (False: numpy only; the schedules are the same)."""
    st = _State(net, chunks, busy, delay, policy, rng, slow_rule, compiled)
    # re-sorting costs three matrix copies; on big problems do it every few events
    resort = 1 if net.npus * st.C <= 1 << 21 else 4
    total = st.remaining
    t = 0.0
    events = 0
    while True:
        st.deliver(t)
        if st.remaining <= 0:
            break
        if events % resort == 0:
            st.rarest_first()
        st.match(t, rng)
        events += 1
        if progress is not None and events % 16 == 0:
            progress(total - st.remaining, total)
        nxt = st.next_time(t)
        if not np.isfinite(nxt):  # pragma: no cover - connectivity is checked before
            raise AlgorithmError(
                f"tacos: the greedy matcher stalled with {st.remaining} deliveries left",
                hint="is every NPU reachable from every other?",
            )
        t = nxt
    if progress is not None:
        progress(total, total)
    return st.schedule(events)
