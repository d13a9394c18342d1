"""Hand-made algorithms for the verifier and transform tests (built node by node)."""

from __future__ import annotations

from hub.chakra import Algorithm, AlgorithmMeta, Buffer, Collective, Op, RankGraphBuilder

IN, OUT, SCR = Buffer.INPUT, Buffer.OUTPUT, Buffer.SCRATCH


def _alg(coll: Collective, builders: list[RankGraphBuilder], **meta: object) -> Algorithm:
    m = AlgorithmMeta(collective=coll, ranks=len(builders), **meta)  # type: ignore[arg-type]
    return Algorithm(m, tuple(b.build() for b in builders))


def ring_allreduce(n: int, *, inplace: bool = False, wrong_send_offset: tuple[int, int] | None = None) -> Algorithm:
    """Ring all-reduce of n chunks: n-1 reduce-scatter steps, then n-1 all-gather steps.

    Out-of-place copies the input to the output first (one COMP COPY of n chunks).
    ``wrong_send_offset=(rank, step)`` makes that rank send the wrong chunk at that RS step.
    """
    bs = []
    buf = IN if inplace else OUT
    for r in range(n):
        b = RankGraphBuilder(r)
        prev = None if inplace else b.comp(Op.COPY, src=(IN, 0), dst=(OUT, 0), count=n)
        nxt, prv = (r + 1) % n, (r - 1) % n
        for s in range(n - 1):  # reduce-scatter
            off = (r - s) % n
            if wrong_send_offset == (r, s):
                off = (off + 1) % n
            b.send(nxt, src=(buf, off), deps=[prev] if prev is not None else [])
            prev = b.recv(prv, dst=(buf, (r - s - 1) % n), op=Op.REDUCE, deps=[prev] if prev is not None else [])
        for s in range(n - 1):  # all-gather
            b.send(nxt, src=(buf, (r + 1 - s) % n), deps=[prev])
            prev = b.recv(prv, dst=(buf, (r - s) % n), op=Op.COPY, deps=[prev])
        bs.append(b)
    return _alg(Collective.ALLREDUCE, bs, in_chunks=n, out_chunks=n, inplace=inplace, name=f"ring{n}")


def direct_allgather(n: int, *, inplace: bool = False) -> Algorithm:
    """Every rank sends its one input chunk to every other rank."""
    bs = []
    for r in range(n):
        b = RankGraphBuilder(r)
        if not inplace:
            b.comp(Op.COPY, src=(IN, 0), dst=(OUT, r), count=1)
        for q in range(n):
            if q != r:
                b.send(q, src=(IN, 0))
                b.recv(q, dst=(OUT, q))
        bs.append(b)
    return _alg(Collective.ALLGATHER, bs, in_chunks=1, out_chunks=n, inplace=inplace, name=f"ag{n}")


def direct_alltoall(n: int, c: int = 1) -> Algorithm:
    """Rank r sends input block q (c chunks) to rank q, which stores it as output block r."""
    bs = []
    for r in range(n):
        b = RankGraphBuilder(r)
        b.comp(Op.COPY, src=(IN, r * c), dst=(OUT, r * c), count=c)
        for q in range(n):
            if q != r:
                b.send(q, src=(IN, q * c), count=c, tag=1)
                b.recv(q, dst=(OUT, q * c), count=c, tag=1)
        bs.append(b)
    return _alg(Collective.ALLTOALL, bs, in_chunks=n * c, out_chunks=n * c, name=f"a2a{n}")


def chain_broadcast(n: int, chunks: int = 2, *, inplace: bool = False) -> Algorithm:
    """Root 0 forwards its buffer along 0 -> 1 -> ... -> n-1."""
    bs = []
    buf = IN if inplace else OUT
    for r in range(n):
        b = RankGraphBuilder(r)
        if r == 0:
            prev = None if inplace else b.comp(Op.COPY, src=(IN, 0), dst=(OUT, 0), count=chunks)
        else:
            prev = b.recv(r - 1, dst=(buf, 0), count=chunks)
        if r < n - 1:
            b.send(r + 1, src=(buf, 0), count=chunks, deps=[prev] if prev is not None else [])
        bs.append(b)
    return _alg(Collective.BROADCAST, bs, in_chunks=chunks, out_chunks=chunks, inplace=inplace, name="bcast")


def chain_reduce(n: int) -> Algorithm:
    """Partial sums flow n-1 -> ... -> 0 through scratch; root 0 ends with the sum in output."""
    bs = []
    for r in range(n):
        b = RankGraphBuilder(r)
        if r == n - 1:
            b.send(r - 1, src=(IN, 0))
        elif r == 0:
            c = b.comp(Op.COPY, src=(IN, 0), dst=(OUT, 0), count=1)
            b.recv(1, dst=(OUT, 0), op=Op.REDUCE, deps=[c])
        else:
            c = b.comp(Op.COPY, src=(IN, 0), dst=(SCR, 0), count=1)
            x = b.recv(r + 1, dst=(SCR, 0), op=Op.REDUCE, deps=[c])
            b.send(r - 1, src=(SCR, 0), deps=[x])
        bs.append(b)
    return _alg(Collective.REDUCE, bs, in_chunks=1, out_chunks=1, scratch_chunks=1, root=0, name="reduce")


def direct_reducescatter(n: int, *, inplace: bool = False) -> Algorithm:
    """Rank r sends input block q to q; each rank reduces what it receives into its output."""
    bs = []
    for r in range(n):
        b = RankGraphBuilder(r)
        prev = None if inplace else b.comp(Op.COPY, src=(IN, r), dst=(OUT, 0), count=1)
        for q in range(n):
            if q != r:
                b.send(q, src=(IN, q))
        for q in range(n):
            if q != r:
                prev = b.recv(q, dst=(OUT, 0), op=Op.REDUCE, deps=[prev] if prev is not None else [])
        bs.append(b)
    return _alg(Collective.REDUCESCATTER, bs, in_chunks=n, out_chunks=1, inplace=inplace, name="rs")


def direct_gather(n: int, root: int = 0) -> Algorithm:
    bs = []
    for r in range(n):
        b = RankGraphBuilder(r)
        if r == root:
            b.comp(Op.COPY, src=(IN, 0), dst=(OUT, r), count=1)
            for q in range(n):
                if q != r:
                    b.recv(q, dst=(OUT, q))
        else:
            b.send(root, src=(IN, 0))
        bs.append(b)
    return _alg(Collective.GATHER, bs, in_chunks=1, out_chunks=n, root=root, name="gather")


def direct_scatter(n: int, root: int = 0) -> Algorithm:
    bs = []
    for r in range(n):
        b = RankGraphBuilder(r)
        if r == root:
            b.comp(Op.COPY, src=(IN, r), dst=(OUT, 0), count=1)
            for q in range(n):
                if q != r:
                    b.send(q, src=(IN, q))
        else:
            b.recv(root, dst=(OUT, 0))
        bs.append(b)
    return _alg(Collective.SCATTER, bs, in_chunks=n, out_chunks=1, root=root, name="scatter")


def recursive_doubling_allgather(n: int) -> Algorithm:
    """In-place all-gather for n = 2^k: at step s rank r swaps its 2^s gathered blocks with
    rank r ^ 2^s in ONE message of 2^s chunks (messages span several rank blocks)."""
    bs = []
    for r in range(n):
        b = RankGraphBuilder(r)
        prev = None
        s = 1
        while s < n:
            q = r ^ s
            mine, theirs = (r // s) * s, (q // s) * s
            deps = [prev] if prev is not None else []
            b.send(q, src=(OUT, mine), count=s, deps=deps)
            prev = b.recv(q, dst=(OUT, theirs), count=s, deps=deps)
            s *= 2
        bs.append(b)
    return _alg(Collective.ALLGATHER, bs, in_chunks=1, out_chunks=n, inplace=True, name="rd-ag")
