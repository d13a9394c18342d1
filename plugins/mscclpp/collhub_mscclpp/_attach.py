"""Second pass of the lowering: the edges that need every rank's nodes (profile §10.3).

In order:

1. barriers: each (GPU, barrier id, occurrence) must be reached by ``num_threadblocks`` blocks,
   else the blocks that reach it wait forever;
2. device semaphores: the n-th acquire of a semaphore with initial value v depends on its
   (n−v)-th release (in plan order); an acquire without a release hangs, and a launch must end
   with every semaphore at its initial value;
3. packets: a packet read depends on every node writing those scratch chunks in this launch; a
   read nobody writes spins forever;
4. signals and waits: per connection (type, sender, receiver, k) consecutive signals, and
   consecutive waits, are chained, so FIFO matching pairs the k-th with the k-th; counts that
   differ are left for the verifier's matching check (an unmatched SEND/RECV);
5. the owner side of each one-sided access (``Access``): *before* edges from the owner's signals
   whose matched waits happen before the access on the actor (relaxed ones only for writes), and
   *after* edges into the owner's waits whose matched normal signals happen after it (memory and
   switch: any connection between the two ranks; port: the access's connection only).
"""

from __future__ import annotations

from ._graphs import Ancestors
from ._lower import Lowering, PlanProblem

__all__ = ["attach"]


def attach(low: Lowering) -> None:
    _barriers(low)
    _semaphores(low)
    _packets(low)
    matched = _signals(low)
    _accesses(low, matched)


def _barriers(low: Lowering) -> None:
    for (r, bid, occ), (_node, got, need, tb, idx) in low.barrier_nodes.items():
        if need and got != need:
            low.problems.append(
                PlanProblem(
                    r,
                    tb,
                    idx,
                    "barrier",
                    f"barrier {bid} (occurrence {occ + 1}) is reached by {got} thread block(s) but waits for "
                    f"{need}: the blocks that reach it wait forever",
                )
            )


def _semaphores(low: Lowering) -> None:
    for (r, s), ops in low.sem_ops.items():
        nodes = low.nodes[r]
        init = low.plan.gpus[r].semaphores[s]
        releases = [pos for rel, pos, _ in ops if rel]
        acquires = [(pos, where) for rel, pos, where in ops if not rel]
        for n, (pos, where) in enumerate(acquires):
            j = n - init
            if j < 0:
                continue
            if j < len(releases):
                nodes.dep(pos, releases[j])
            else:
                low.problems.append(
                    PlanProblem(
                        r, None, None, "", f"{where}: sem_acquire of semaphore {s} is never released: waits forever"
                    )
                )
        if len(releases) != len(acquires):
            low.problems.append(
                PlanProblem(
                    r,
                    None,
                    None,
                    "",
                    f"semaphore {s} ends the launch at {init + len(releases) - len(acquires)}, not its initial "
                    f"value {init} ({len(releases)} release(s), {len(acquires)} acquire(s)): the next launch starts "
                    "out of step",
                )
            )


def _packets(low: Lowering) -> None:
    for r, pos, off, cnt, where in low.pkt_readers:
        writers = [w for o, c, w in low.pkt_writers[r] if o < off + cnt and off < o + c and w != pos]
        if not writers:
            low.problems.append(
                PlanProblem(
                    r,
                    None,
                    None,
                    "",
                    f"{where}: reads packets from scratch chunks [{off}, {off + cnt}) (refined x{low.refine}) that "
                    "nothing writes in this launch: it spins forever",
                )
            )
        for w in writers:
            low.nodes[r].dep(pos, w)


def _signals(low: Lowering) -> list[tuple[int, int, int, int, bool, str, int]]:
    """Chain each connection's signals and waits; return the matched pairs as
    (signaller, signal node, waiter, wait node, relaxed, channel type, k)."""
    out = []
    for key in set(low.signals) | set(low.waits):
        ty, a, b, k = key
        sig = low.signals.get(key, [])
        wai = low.waits.get(key, [])
        for (p, _), (q, _) in zip(sig, sig[1:], strict=False):
            low.nodes[a].dep(q, p)
        for (p, _), (q, _) in zip(wai, wai[1:], strict=False):
            low.nodes[b].dep(q, p)
        for (s, rs), (w, rw) in zip(sig, wai, strict=False):
            out.append((a, s, b, w, rs or rw, ty, k))
    return out


def _bits(m: int) -> list[int]:  # the set bits of m, lowest first
    out = []
    while m:
        low = m & -m
        out.append(low.bit_length() - 1)
        m ^= low
    return out


def _accesses(low: Lowering, matched: list[tuple[int, int, int, int, bool, str, int]]) -> None:
    """Bit sets instead of pairwise tests. The signals (and the waits) of one connection form a
    chain, so per access and connection only the latest wait before it (*before* edge) and the
    first signal after it (*after* edge) need an edge: the others follow through the chain."""
    if not low.accesses:
        return
    anc = [Ancestors(n).anc for n in low.nodes]
    # the actor's waits: all of them as one bit mask, each with its owner and connection
    all_waits: dict[int, int] = {}
    wait_info: dict[tuple[int, int], tuple[int, str, int]] = {}
    signal_of: dict[tuple[int, int], tuple[int, bool]] = {}
    for a, s, b, w, relaxed, ty, k in matched:
        all_waits[b] = all_waits.get(b, 0) | (1 << w)
        wait_info[(b, w)] = (a, ty, k)
        signal_of[(b, w)] = (s, relaxed)
    by_local: dict[tuple[int, int, int], list[int]] = {}  # (actor, owner, local node) -> accesses
    acc_mask: dict[tuple[int, int], int] = {}
    before: dict[tuple[int, bool, tuple[int, ...]], dict[int, list[int]]] = {}
    for i, acc in enumerate(low.accesses):
        by_local.setdefault((acc.actor, acc.owner, acc.local), []).append(i)
        acc_mask[(acc.actor, acc.owner)] = acc_mask.get((acc.actor, acc.owner), 0) | (1 << acc.local)
        # before: the owner signalled, the actor waited, then accessed. An access node is never
        # a wait, so the waits before it are those before its dependencies: the fan-out of one op
        # (a multicast to 63 peers) shares the answer.
        key = (acc.actor, acc.write, tuple(low.nodes[acc.actor].deps[acc.local]))
        per_owner = before.get(key)
        if per_owner is None:
            m = anc[acc.actor][acc.local] & all_waits.get(acc.actor, 0)
            per_owner = before[key] = _latest_per_connection(m, acc.write, acc.actor, wait_info, signal_of)
        for s in per_owner.get(acc.owner, ()):
            low.nodes[acc.owner].dep(acc.remote, s)
    # after: the actor accessed, then signalled, the owner waited (normal signals make data
    # visible); pairs come per connection in chain order, so the first signal after an access wins
    covered = [False] * len(low.accesses)
    done: dict[tuple[int, int, str, int, bool], int] = {}
    for a, s, b, w, relaxed, ty, k in matched:
        ckey = (a, b, ty, k, relaxed)
        m = anc[a][s] & acc_mask.get((a, b), 0) & ~done.get(ckey, 0)
        if not m:
            continue
        done[ckey] = done.get(ckey, 0) | m
        owner_nodes = low.nodes[b]
        for local in _bits(m):
            for i in by_local[(a, b, local)]:
                covered[i] = True
                acc = low.accesses[i]
                if relaxed or (acc.channel == "port" and (ty != "port" or k != acc.conn)):
                    continue
                owner_nodes.dep(w, acc.remote)
    for i, acc in enumerate(low.accesses):
        if acc.write and not covered[i]:
            where = low.nodes[acc.actor].names[acc.local]
            low.problems.append(
                PlanProblem(
                    acc.actor,
                    None,
                    None,
                    "",
                    f"{where}: writes into gpu {acc.owner}'s memory but no signal that gpu {acc.owner} waits for "
                    f"follows it: gpu {acc.owner} can finish before the data lands",
                )
            )


def _latest_per_connection(
    m: int,
    write: bool,
    actor: int,
    wait_info: dict[tuple[int, int], tuple[int, str, int]],
    signal_of: dict[tuple[int, int], tuple[int, bool]],
) -> dict[int, list[int]]:
    """owner -> the signals to depend on: per connection the latest wait's signal (the chain
    orders the earlier ones before it); a read needs the latest *normal* one, as relaxed pairs make
    no data visible (a memory connection carries both kinds)."""
    out: dict[int, list[int]] = {}
    closed: set[tuple[int, str, int]] = set()
    for w in reversed(_bits(m)):
        conn = wait_info[(actor, w)]
        if conn in closed:
            continue
        s, relaxed = signal_of[(actor, w)]
        if write or not relaxed:
            out.setdefault(conn[0], []).append(s)
            if not relaxed:
                closed.add(conn)
    return out
