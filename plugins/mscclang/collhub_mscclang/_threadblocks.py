"""Threadblock assignment for export: which tb of its rank each node runs in.

Two modes:

* **keep**: every node already carries a ``tb`` (e.g. imported from MSCCL-IR) and the tbs obey
  MSCCL's rules (one send peer, one recv peer, one channel per tb; one tb per connection).
  Reusing them makes XML -> Algorithm -> XML reproduce the original structure exactly.
* **auto**: one tb per connection (peer, channel, direction). With fusion, a receive connection
  and a send connection of the same channel share a tb when the rank forwards what it receives
  (a SEND fed only by a RECV, possibly through one COMP), so that the emitter can form
  rcs/rrcs/rrs/rrc steps. Local COMP nodes join the tb of the RECV they depend on, or a local tb.

Inside a tb, nodes run in position order (a topological order of the rank graph).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from hub.chakra import Algorithm, NodeType, RankGraph

__all__ = ["Tb", "assign"]

_SEND, _RECV, _COMP = int(NodeType.SEND), int(NodeType.RECV), int(NodeType.COMP)


@dataclass
class Tb:
    """One threadblock of a rank: its peers, channel and nodes (positions, in program order)."""

    send: int = -1
    recv: int = -1
    chan: int = 0
    nodes: list[int] = field(default_factory=list)
    key: tuple[int, ...] = ()


def channel_map(alg: Algorithm) -> list[list[int]]:
    """The MSCCL channel of every node, per rank.

    The nodes' ``chan`` column is used when it is safe: on every (sender, receiver, chan) the
    sender's transfers and the receiver's, in program order, carry the same tag sequence, so
    positional matching pairs exactly what tag matching pairs. Otherwise each tag becomes its
    own channel (dense numbering), which is always safe.
    """
    sides: list[list[np.ndarray]] = [[], []]
    ok = True
    for r, g in enumerate(alg.graphs):
        for side, k in ((0, _SEND), (1, _RECV)):
            m = np.flatnonzero(g.kind == k)
            if not m.size:
                continue
            if np.any(g.chan[m] < 0):
                ok = False
            me = np.full(m.size, r, dtype=np.int64)
            pr = g.peer[m].astype(np.int64)
            src, dst = (me, pr) if side == 0 else (pr, me)
            sides[side].append(
                np.stack([src, dst, g.chan[m].astype(np.int64), m.astype(np.int64), g.tag[m].astype(np.int64)])
            )
    if ok:
        arr = [np.concatenate(s, axis=1) if s else np.zeros((5, 0), np.int64) for s in sides]
        seqs = []
        for a in arr:  # order by connection, then program order (position) on that side
            o = np.lexsort((a[3], a[2], a[1], a[0]))
            seqs.append(a[[0, 1, 2, 4]][:, o])
        ok = seqs[0].shape == seqs[1].shape and bool(np.array_equal(seqs[0], seqs[1]))
    if ok:
        return [g.chan.tolist() for g in alg.graphs]
    tags_used: set[int] = set()
    for g in alg.graphs:
        comm = (g.kind == _SEND) | (g.kind == _RECV)
        tags_used.update(np.unique(g.tag[comm]).tolist())
    dense = {t: i for i, t in enumerate(sorted(tags_used))}
    return [[dense.get(t, 0) for t in g.tag.tolist()] for g in alg.graphs]


def assign(alg: Algorithm, chan_of: list[list[int]], *, mode: str, fuse: bool, skip: list[set[int]]) -> list[list[Tb]]:
    """Return the tbs of every rank. ``skip[r]``: positions emitted elsewhere (``<copy>``)."""
    if mode in ("auto", "keep-or-auto"):
        kept = _keep(alg, chan_of, skip) if mode == "keep-or-auto" else None
        if kept is not None:
            return kept
    elif mode == "keep":
        kept = _keep(alg, chan_of, skip)
        if kept is not None:
            return kept
        from hub.errors import ExportError

        raise ExportError(
            "threadblocks=keep: the algorithm's tb column is missing or breaks MSCCL's tb rules",
            hint="use threadblocks=auto",
        )
    return [_auto(g, chan_of[r], fuse, skip[r], alg.ranks) for r, g in enumerate(alg.graphs)]


def _keep(alg: Algorithm, chan_of: list[list[int]], skip: list[set[int]]) -> list[list[Tb]] | None:
    out: list[list[Tb]] = []
    for r, g in enumerate(alg.graphs):
        tb = g.tb.tolist()
        kind = g.kind.tolist()
        peer = g.peer.tolist()
        chancol = g.chan.tolist()
        chans = chan_of[r]
        sk = skip[r]
        tbs: dict[int, Tb] = {}
        for p in range(len(g)):
            if p in sk:
                continue
            t = tb[p]
            if t < 0:
                return None
            cur = tbs.get(t)
            if cur is None:
                cur = tbs[t] = Tb(chan=-1)
            k = kind[p]
            if k == _SEND or k == _RECV:
                c = chans[p]
                if cur.chan >= 0 and cur.chan != c:  # (< 0: unset or only local nodes so far)
                    return None
                cur.chan = c
                attr = "send" if k == _SEND else "recv"
                have = getattr(cur, attr)
                if have not in (-1, peer[p]):
                    return None
                setattr(cur, attr, peer[p])
            elif cur.chan == -1 and chancol[p] >= 0:
                cur.chan = -2 - chancol[p]  # provisional: a local tb's own channel
            cur.nodes.append(p)
        # tbs with no node (e.g. only nops in the source file) disappear; the rest keep their order
        seen: set[tuple[str, int, int]] = set()
        for t in tbs.values():
            if t.chan < -1:
                t.chan = -2 - t.chan
            t.chan = max(t.chan, 0)
            for attr in ("send", "recv"):
                peer_v = getattr(t, attr)
                if peer_v >= 0:
                    key = (attr, peer_v, t.chan)
                    if key in seen:
                        return None
                    seen.add(key)
        out.append([tbs[i] for i in sorted(tbs)])
    return out


def _auto(g: RankGraph, chans: list[int], fuse: bool, skip: set[int], ranks: int) -> list[Tb]:
    n = len(g)
    kind = g.kind.astype(np.int64)
    peer = g.peer.astype(np.int64)
    tag = g.tag.astype(np.int64)
    ch = np.asarray(chans, dtype=np.int64)
    ptr = g.dep_ptr
    ndeps = np.diff(ptr)
    node_of_edge = np.repeat(np.arange(n), ndeps)
    dep = g.dep_pos.astype(np.int64)
    comm = (kind == _SEND) | (kind == _RECV)
    R1 = ranks + 1
    conn_id = np.where(comm, ((kind == _RECV) * R1 + peer) * (int(ch.max(initial=0)) + 1) + ch, -1)

    partner: dict[int, int] = {}  # connection id -> peer of the partner connection
    if fuse and n:
        # the feeder of a SEND: its one dependency that is not an earlier send on its connection
        e_send = kind[node_of_edge] == _SEND
        same_conn = (kind[dep] == _SEND) & (peer[dep] == peer[node_of_edge]) & (tag[dep] == tag[node_of_edge])
        keep = e_send & ~same_conn
        nfeed = np.bincount(node_of_edge[keep], minlength=n)
        cand = np.flatnonzero((kind == _SEND) & (nfeed == 1))
        if cand.size:
            first_keep = np.full(n, -1, dtype=np.int64)
            first_keep[node_of_edge[keep][::-1]] = dep[keep][::-1]
            x = first_keep[cand]
            mid = first_keep[cand]
            through = (kind[mid] == _COMP) & (ndeps[mid] == 1)
            x = np.where(through, dep[np.minimum(ptr[mid], max(dep.size - 1, 0))], mid) if dep.size else mid
            ok = (kind[x] == _RECV) & (ch[x] == ch[cand])
            # only an exclusive feeder is worth a shared tb: if another tb waited for the
            # RECV (or its COMP), a fused step would make it wait for the forward as well
            succ_ptr = np.zeros(n + 1, dtype=np.int64)
            np.cumsum(np.bincount(dep, minlength=n), out=succ_ptr[1:])
            succ = node_of_edge[np.argsort(dep, kind="stable")].tolist()
            sp_l = succ_ptr.tolist()
            cid = conn_id.tolist()
            # successors that are single-dependency COMPs stay in the RECV's tb: harmless
            harmless = ((kind == _COMP) & (ndeps == 1)).tolist()
            xl, cl, ml = x.tolist(), cand.tolist(), mid.tolist()
            for k in np.flatnonzero(ok).tolist():
                xs, p_send, m_ = xl[k], cl[k], ml[k]
                a_, b_ = cid[xs], cid[p_send]
                for v in (xs, m_) if m_ != xs else (xs,):
                    for w in succ[sp_l[v] : sp_l[v + 1]]:
                        if w != p_send and w != m_ and cid[w] != a_ and cid[w] != b_ and not harmless[w]:
                            ok[k] = False
            pairs = np.stack([conn_id[x[ok]], conn_id[cand[ok]]], axis=1)
            if pairs.size:
                uniq, counts = np.unique(pairs, axis=0, return_counts=True)
                peer_of_conn = dict(zip(conn_id[comm].tolist(), peer[comm].tolist(), strict=False))
                taken: set[int] = set()
                for k in np.argsort(-counts, kind="stable").tolist():
                    rc, sc = int(uniq[k, 0]), int(uniq[k, 1])
                    if rc not in taken and sc not in taken:
                        taken.update((rc, sc))
                        partner[rc] = peer_of_conn[sc]
                        partner[sc] = peer_of_conn[rc]
    other = np.full(n, -1, dtype=np.int64)
    if partner:
        ids = np.fromiter(partner.keys(), dtype=np.int64)
        vals = np.fromiter(partner.values(), dtype=np.int64)
        order = np.argsort(ids)
        ids, vals = ids[order], vals[order]
        loc = np.clip(np.searchsorted(ids, conn_id), 0, ids.size - 1)
        other = np.where(comm & (ids[loc] == conn_id), vals[loc], -1)
    send = np.where(kind == _SEND, peer, np.where(kind == _RECV, other, -1))
    recv = np.where(kind == _RECV, peer, np.where(kind == _SEND, other, -1))
    chan = np.where(comm, ch, np.maximum(g.chan.astype(np.int64), 0))
    # a COMP right after a RECV (the reduction of an rrc, say) stays in that RECV's tb
    if dep.size:
        one = (~comm) & (ndeps == 1)
        x = dep[np.minimum(ptr[:-1], dep.size - 1)]
        follow = one & (kind[x] == _RECV)
        send = np.where(follow, send[x], send)
        recv = np.where(follow, recv[x], recv)
        chan = np.where(follow, chan[x], chan)
    key = (chan * R1 + (send + 1)) * R1 + (recv + 1)
    alive = np.ones(n, dtype=bool)
    if skip:
        alive[list(skip)] = False
    pos = np.flatnonzero(alive)
    uniq_keys, inv = np.unique(key[pos], return_inverse=True)
    order = np.argsort(inv, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(inv, minlength=uniq_keys.size))])
    nodes_sorted = pos[order].tolist()
    tbs: list[Tb] = []
    for k, kv in enumerate(uniq_keys.tolist()):
        c, rest = divmod(kv, R1 * R1)
        sp, rp = divmod(rest, R1)
        tbs.append(
            Tb(send=sp - 1, recv=rp - 1, chan=c, nodes=nodes_sorted[bounds[k] : bounds[k + 1]], key=(c, sp - 1, rp - 1))
        )
    # MSCCLang numbers tbs sorted by (send, recv, chan)
    tbs.sort(key=lambda t: (t.send, t.recv, t.chan))
    return tbs
