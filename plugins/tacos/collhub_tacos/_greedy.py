"""The greedy link-chunk matcher on the time-expanded network (TEN), event-driven and vectorised.

State is kept as bitsets over chunks, one row of ``ceil(C/64)`` uint64 words per NPU:
``has`` (arrived by now) and ``claimed`` (arrived or on its way). At every event time:

1. transfers that end now deliver their chunk (``has`` gains the bit);
2. every free link ``u -> v`` is a candidate for the chunks ``has[u] & ~claimed[v]``: chunks
   ``u`` holds and ``v`` neither holds nor is already being sent. The free links are shuffled
   and dealt into *slots* so that one slot holds at most one link into each destination; slot
   after slot, each link takes one random candidate chunk (vectorised over the whole slot), so
   no destination ever gets the same chunk on two links.
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

Randomness comes from one ``numpy.random.Generator`` seeded by the caller: a seed reproduces a
schedule bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from hub.errors import AlgorithmError

from ._network import Network

__all__ = ["Schedule", "greedy_allgather"]

_EPS = 1e-9
_ONE = np.uint64(1)


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


def _bits(c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return c >> 6, np.left_shift(_ONE, (c & 63).astype(np.uint64))


def _pick(cand: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One random set bit per row of ``cand`` (rows of uint64 words) as a chunk id; -1 if none.

    A random rotation of the word order finds the first non-empty word, a random rotation of
    that word its first set bit: cheap, vectorised, and every candidate can be chosen.
    """
    m, w = cand.shape
    rows = np.arange(m)
    if w == 1:
        word = np.zeros(m, dtype=np.int64)
        x = cand[:, 0]
    else:
        rot = rng.integers(0, w, m)
        key = (np.arange(w)[None, :] - rot[:, None]) % w
        key = np.where(cand != 0, key, w)
        word = np.argmin(key, axis=1)
        x = cand[rows, word]
    s = rng.integers(0, 64, m).astype(np.uint64)
    y = (x >> s) | (x << ((np.uint64(64) - s) & np.uint64(63)))
    low = y & (~y + _ONE)
    pos = (np.bitwise_count(low - _ONE).astype(np.int64) + s.astype(np.int64)) & 63
    out = word.astype(np.int64) * 64 + pos
    out[x == 0] = -1
    return out


def _csr(keys: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(ptr, idx): the indices i with keys[i] == x are idx[ptr[x]:ptr[x+1]]."""
    idx = np.argsort(keys, kind="stable")
    ptr = np.searchsorted(keys[idx], np.arange(n + 1))
    return ptr, idx


def _slots(links: np.ndarray, dst: np.ndarray, rng: np.random.Generator) -> list[np.ndarray]:
    """Shuffle ``links`` and split them into slots with at most one link per destination."""
    f = links[rng.permutation(links.size)]
    f = f[np.argsort(dst[f], kind="stable")]
    d = dst[f]
    first = np.flatnonzero(np.r_[True, d[1:] != d[:-1]])
    sizes = np.diff(np.r_[first, d.size])
    slot = np.arange(d.size) - np.repeat(first, sizes)
    order = np.argsort(slot, kind="stable")
    bounds = np.searchsorted(slot[order], np.arange(int(slot.max()) + 2))
    return [f[order[bounds[s]:bounds[s + 1]]] for s in range(bounds.size - 1)]


class _State:
    """Mutable matcher state (one all-gather run)."""

    def __init__(self, net: Network, k: int, busy: np.ndarray, delay: np.ndarray, policy: str) -> None:
        n = net.npus
        self.policy = policy
        self.net, self.k, self.busy, self.delay = net, k, busy, delay
        self.C = n * k
        self.W = (self.C + 63) // 64
        self.has = np.zeros((n, self.W), dtype=np.uint64)
        own = np.arange(self.C)
        w, b = _bits(own)
        np.bitwise_or.at(self.has, (own // k, w), b)
        self.claimed = self.has.copy()
        e = net.links
        self.free_at = np.zeros(e)
        self.land_at = np.full(e, np.inf)
        self.start_at = np.zeros(e)
        self.carry = np.full(e, -1, dtype=np.int64)  # chunk in flight per link
        self.rec_id = np.full(e, -1, dtype=np.int64)  # its record index
        # a destination whose in-links differ in speed may see a later transfer land first
        self.mixed = self._mixed_destinations()
        # supply[v, c]: in-neighbours of v holding c; holders[c]: NPUs holding c (scoring)
        self.out_of = _csr(net.src, n)
        self.supply = np.zeros((n, self.C), dtype=np.int32)
        for j in range(k):
            c = net.src.astype(np.int64) * k + j
            np.add.at(self.supply, (net.dst, c), 1)
        self.holders = np.ones(self.C, dtype=np.int64)
        self.recs: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.n_recs = 0
        self.dead: list[np.ndarray] = []  # cancelled record indices
        self.relabel: dict[int, int] = {}  # record index -> replacement chunk
        self.remaining = n * (self.C - k)
        self.replaced = 0
        self.cancelled = 0

    def _mixed_destinations(self) -> np.ndarray:
        n = self.net.npus
        lo = np.full(n, np.inf)
        hi = np.full(n, -np.inf)
        np.minimum.at(lo, self.net.dst, self.delay)
        np.maximum.at(hi, self.net.dst, self.delay)
        return hi - lo > _EPS * np.maximum(hi, 1.0)

    # -- arrivals ----------------------------------------------------------------------------
    def deliver(self, t: float) -> None:
        done = np.flatnonzero(self.land_at <= t + _EPS)
        if not done.size:
            return
        c = self.carry[done]
        w, b = _bits(c)
        v = self.net.dst[done]
        np.bitwise_or.at(self.has, (v, w), b)
        np.add.at(self.holders, c, 1)
        ptr, idx = self.out_of
        cnt = ptr[v + 1] - ptr[v]
        outs = idx[np.repeat(ptr[v], cnt) + (np.arange(cnt.sum()) - np.repeat(np.cumsum(cnt) - cnt, cnt))]
        np.add.at(self.supply, (self.net.dst[outs], np.repeat(c, cnt)), 1)
        self.land_at[done] = np.inf
        self.carry[done] = -1
        self.remaining -= done.size

    # -- matching ----------------------------------------------------------------------------
    def match(self, t: float, rng: np.random.Generator) -> None:
        free = np.flatnonzero(self.free_at <= t + _EPS)
        if not free.size:
            return
        src, dst = self.net.src, self.net.dst
        tie = rng.permutation(self.C)
        for links in _slots(free, dst, rng):
            cand = self.has[src[links]] & ~self.claimed[dst[links]]
            chunk = self._scarcest(cand, dst[links], tie) if self.policy == "scarce" else _pick(cand, rng)
            if self.mixed.any():
                chunk = self._overtake(t, links, chunk, rng)
            ok = chunk >= 0
            links, chunk = links[ok], chunk[ok]
            if not links.size:
                continue
            w, b = _bits(chunk)
            self.claimed[dst[links], w] |= b
            self._start(t, links, chunk)

    def _scarcest(self, cand: np.ndarray, v: np.ndarray, tie: np.ndarray) -> np.ndarray:
        """Per link, the candidate chunk fewest other in-neighbours of ``v`` could supply (then the
        globally rarest, then a per-event random order): links that have alternatives keep them."""
        m = cand.shape[0]
        ok = np.unpackbits(cand.view(np.uint8), axis=1, bitorder="little")[:, : self.C].astype(bool)
        key = (self.supply[v].astype(np.int64) * (self.C * (self.net.npus + 1))
               + self.holders[None, :] * self.C + tie[None, :])
        key = np.where(ok, key, np.iinfo(np.int64).max)
        out = np.argmin(key, axis=1)
        out[~ok[np.arange(m), out]] = -1
        return out

    def _start(self, t: float, links: np.ndarray, chunk: np.ndarray) -> None:
        self.free_at[links] = t + self.busy[links]
        self.land_at[links] = t + self.delay[links]
        self.start_at[links] = t
        self.carry[links] = chunk
        ids = np.arange(self.n_recs, self.n_recs + links.size)
        self.rec_id[links] = ids
        self.n_recs += links.size
        self.recs.append((chunk.astype(np.int32), links.astype(np.int32), np.full(links.size, t)))

    def _overtake(self, t: float, links: np.ndarray, chunk: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Links into mixed-speed destinations that found nothing new may land an in-flight chunk
        earlier than its current transfer; that transfer is then replaced or cancelled."""
        src, dst = self.net.src, self.net.dst
        for i in np.flatnonzero((chunk < 0) & self.mixed[dst[links]]).tolist():
            ln = int(links[i])
            v, u = int(dst[ln]), int(src[ln])
            arrive = t + self.delay[ln]
            into = np.flatnonzero((dst == v) & (self.land_at > arrive + _EPS) & (self.carry >= 0))
            if not into.size:
                continue
            cs = self.carry[into]
            w, b = _bits(cs)
            held = (self.has[u, w] & b) != 0
            if not held.any():
                continue
            j = int(rng.choice(np.flatnonzero(held)))
            chunk[i] = cs[j]
            self._replace(t, int(into[j]), rng)
        return chunk

    def _replace(self, t: float, ln: int, rng: np.random.Generator) -> None:
        """The replacement rule for the redundant transfer on link ``ln`` (see the module docs)."""
        u, v = int(self.net.src[ln]), int(self.net.dst[ln])
        began = self.start_at[ln]
        # chunks u held when the transfer began: those that landed at u by then
        held_then = self._held_at(u, began)
        cand = held_then & ~self.claimed[v]
        rid = int(self.rec_id[ln])
        if cand.any():
            c = int(_pick(cand[None, :], rng)[0])
            w, b = _bits(np.array([c]))
            self.claimed[v, w[0]] |= b[0]
            self.carry[ln] = c
            self.relabel[rid] = c
            self.replaced += 1
            return
        self.dead.append(np.array([rid]))
        self.cancelled += 1
        self.free_at[ln] = t
        self.land_at[ln] = np.inf
        self.carry[ln] = -1
        self.remaining += 0  # the chunk is re-sent by the overtaking link, which counts it

    def _held_at(self, u: int, when: float) -> np.ndarray:
        """Bitset of the chunks NPU ``u`` had received by time ``when`` (its own included)."""
        out = np.zeros(self.W, dtype=np.uint64)
        own = np.arange(u * self.k, (u + 1) * self.k)
        w, b = _bits(own)
        np.bitwise_or.at(out, w, b)
        for chunk, links, start in self.recs:
            sel = (self.net.dst[links] == u) & (start + self.delay[links] <= when + _EPS)
            if sel.any():
                cs = chunk[sel].astype(np.int64)
                w, b = _bits(cs)
                np.bitwise_or.at(out, w, b)
        dead = set(np.concatenate(self.dead).tolist()) if self.dead else set()
        if dead or self.relabel:  # rebuild exactly: cancelled transfers delivered nothing
            out = np.zeros(self.W, dtype=np.uint64)
            w, b = _bits(own)
            np.bitwise_or.at(out, w, b)
            base = 0
            for chunk, links, start in self.recs:
                ids = np.arange(base, base + chunk.size)
                base += chunk.size
                sel = (self.net.dst[links] == u) & (start + self.delay[links] <= when + _EPS)
                for i in np.flatnonzero(sel).tolist():
                    rid = int(ids[i])
                    if rid in dead:
                        continue
                    c = self.relabel.get(rid, int(chunk[i]))
                    out[c >> 6] |= _ONE << np.uint64(c & 63)
        return out

    def next_time(self, t: float) -> float:
        busy = self.free_at[self.free_at > t + _EPS]
        nxt = min(float(self.land_at.min()), float(busy.min()) if busy.size else np.inf)
        return nxt

    def schedule(self, events: int) -> Schedule:
        chunk = np.concatenate([r[0] for r in self.recs]) if self.recs else np.zeros(0, np.int32)
        link = np.concatenate([r[1] for r in self.recs]) if self.recs else np.zeros(0, np.int32)
        start = np.concatenate([r[2] for r in self.recs]) if self.recs else np.zeros(0)
        for rid, c in self.relabel.items():
            chunk[rid] = c
        if self.dead:
            keep = np.ones(chunk.size, dtype=bool)
            keep[np.concatenate(self.dead)] = False
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
) -> Schedule:
    """All-gather of ``chunks`` chunks per NPU on ``net`` (link busy/landing times in µs per chunk)."""
    st = _State(net, chunks, busy, delay, policy)
    total = st.remaining
    t = 0.0
    events = 0
    while True:
        st.deliver(t)
        if st.remaining <= 0:
            break
        st.match(t, rng)
        events += 1
        if progress is not None and events % 16 == 0:
            progress(total - st.remaining, total)
        nxt = st.next_time(t)
        if not np.isfinite(nxt):  # pragma: no cover - connectivity is checked before
            raise AlgorithmError(f"tacos: the greedy matcher stalled with {st.remaining} deliveries left",
                                 hint="is every NPU reachable from every other?")
        t = nxt
    if progress is not None:
        progress(total, total)
    return st.schedule(events)
