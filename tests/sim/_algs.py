"""Hand-built algorithms for the fidelity tests (shapes from the reference docs, not from hub code)."""

from __future__ import annotations

from hub.chakra import Algorithm, AlgorithmMeta, Buffer, Collective, RankGraphBuilder, build_algorithm


def pipelined_ring_allreduce(n: int, msg: int, *, comps: bool) -> Algorithm:
    """astra-sim.md §9: step k issues SEND(k) to r+1 and RECV(k) from r-1; SEND(k+1) depends on RECV(k)
    (or on its COMP, duration 0 -> 1 ns, in the reduce-scatter half); RECV(k+1) depends on RECV(k)."""
    builders = []
    for r in range(n):
        b = RankGraphBuilder(r)
        prev_recv = None
        release = None  # what the next SEND waits for
        for k in range(2 * (n - 1)):
            b.send((r + 1) % n, src=(Buffer.INPUT, 0), size=msg, deps=[release] if release is not None else [])
            recv = b.recv(
                (r - 1) % n, dst=(Buffer.INPUT, 0), size=msg, deps=[prev_recv] if prev_recv is not None else []
            )
            prev_recv = recv
            release = recv
            if comps and k < n - 1:
                release = b.comp(deps=[recv], duration_micros=0)
        builders.append(b)
    return build_algorithm(AlgorithmMeta(Collective.ALLREDUCE, n, n, n, size=n * msg, name="pipelined-ring"), builders)


def msccl_chain_allreduce(n: int, msg: int, comp_us: int) -> Algorithm:
    """chakra-et.md §6.9: one chain per rank: s, (n-1) x (rrc = RECV + COMP, s), (n-2) x (r, s), r
    (35 nodes for n = 8: 14 SEND, 14 RECV, 7 COMP)."""
    builders = []
    for r in range(n):
        b = RankGraphBuilder(r)
        last = b.send((r + 1) % n, src=(Buffer.INPUT, 0), size=msg)
        for _ in range(n - 1):  # reduce-scatter: rrc then s
            rv = b.recv((r - 1) % n, dst=(Buffer.INPUT, 0), size=msg, deps=[last])
            c = b.comp(deps=[rv], duration_micros=comp_us)
            last = b.send((r + 1) % n, src=(Buffer.INPUT, 0), size=msg, deps=[c])
        for _ in range(n - 2):  # all-gather: r then s
            rv = b.recv((r - 1) % n, dst=(Buffer.INPUT, 0), size=msg, deps=[last])
            last = b.send((r + 1) % n, src=(Buffer.INPUT, 0), size=msg, deps=[rv])
        b.recv((r - 1) % n, dst=(Buffer.INPUT, 0), size=msg, deps=[last])
        builders.append(b)
    return build_algorithm(AlgorithmMeta(Collective.ALLREDUCE, n, n, n, size=n * msg, name="msccl-chain"), builders)


def direct_alltoall(n: int, msg: int) -> Algorithm:
    """Every rank sends ``msg`` bytes to r+1, r+2, ..., r+n-1 at t = 0 (no dependencies) and
    posts the matching receives."""
    builders = []
    for r in range(n):
        b = RankGraphBuilder(r)
        for k in range(1, n):
            b.send((r + k) % n, src=(Buffer.INPUT, k), size=msg)
        for k in range(1, n):
            b.recv((r - k) % n, dst=(Buffer.OUTPUT, k), size=msg)
        builders.append(b)
    return build_algorithm(AlgorithmMeta(Collective.ALLTOALL, n, n, n, size=n * msg, name="direct"), builders)


def one_message(npus: int, src: int, dst: int, msg: int) -> Algorithm:
    """A single SEND src -> dst on an ``npus``-rank algorithm (all other ranks empty)."""
    builders = [RankGraphBuilder(r) for r in range(npus)]
    builders[src].send(dst, src=(Buffer.INPUT, 0), size=msg)
    builders[dst].recv(src, dst=(Buffer.OUTPUT, 0), size=msg)
    return build_algorithm(AlgorithmMeta(Collective.CUSTOM, npus, 1, 1), builders)


def comp_batch_case(size: int = 100_000) -> Algorithm:
    """Rule 7 (docs/simulator.md): NPU 0's COMPs X (0..2 us) and Y (1..2 us) end together, so Y
    completes in X's event, before NPU 1's COMP Z (registered at t = 0, after X). Y's and Z's
    sends then meet at the switch's link to NPU 2 in that order; NPU 2 computes 7 us after Z's
    data. Real ASTRA-sim (aware, switch:4): 15586 ns; without the batch rule it would be 13724."""
    b = [RankGraphBuilder(r) for r in range(4)]
    b[0].comp(duration_micros=2)
    w = b[0].comp(duration_micros=1)
    y = b[0].comp(duration_micros=1, deps=[w])
    b[0].send(2, src=(Buffer.INPUT, 0), size=size, tag=2, deps=[y])
    z = b[1].comp(duration_micros=2)
    b[1].send(2, src=(Buffer.INPUT, 0), size=size, tag=3, deps=[z])
    b[3].comp(duration_micros=1)
    b[2].recv(0, dst=(Buffer.OUTPUT, 0), size=size, tag=2)
    rc = b[2].recv(1, dst=(Buffer.OUTPUT, 0), size=size, tag=3)
    b[2].comp(duration_micros=7, deps=[rc])
    return build_algorithm(AlgorithmMeta(Collective.ALLREDUCE, 4, 1, 1), b)


def late_recv_case(size: int = 100_000) -> Algorithm:
    """Rule 5: NPU 2's RECV is issued (at 5 us) after its data arrived, so it completes by an event
    after NPU 3's COMP event of the same time; NPU 3's send therefore wins the switch's link to
    NPU 0, whose 7-us COMP waits for it. Real ASTRA-sim (aware, switch:4): 16724 ns; completing
    the RECV inline would give 18586."""
    b = [RankGraphBuilder(r) for r in range(4)]
    b[1].send(2, src=(Buffer.INPUT, 0), size=size, tag=9)
    c2 = b[2].comp(duration_micros=5)
    r = b[2].recv(1, dst=(Buffer.OUTPUT, 0), size=size, tag=9, deps=[c2])
    b[2].send(0, src=(Buffer.INPUT, 0), size=size, tag=2, deps=[r])
    c3 = b[3].comp(duration_micros=5)
    b[3].send(0, src=(Buffer.INPUT, 0), size=size, tag=3, deps=[c3])
    b[0].recv(2, dst=(Buffer.OUTPUT, 0), size=size, tag=2)
    r3 = b[0].recv(3, dst=(Buffer.OUTPUT, 0), size=size, tag=3)
    b[0].comp(duration_micros=7, deps=[r3])
    return build_algorithm(AlgorithmMeta(Collective.ALLREDUCE, 4, 1, 1), b)
