"""Hand-built algorithms for the fault tests, and a process-tree check (no orphans)."""

from __future__ import annotations

import os
from pathlib import Path

from hub.chakra import Algorithm, AlgorithmMeta, Buffer, Collective, Op, RankGraphBuilder, build_algorithm

REPO = Path(__file__).resolve().parents[3]
MSCCL_IR = REPO.parent / "shared" / "data" / "msccl-ir"


def deadlock_allreduce() -> Algorithm:
    """2 ranks; each receives before it sends, and its send depends on that receive: a cycle
    across ranks that the progress level and the replay's dry run both see."""
    b = [RankGraphBuilder(r) for r in range(2)]
    for r in range(2):
        c = b[r].comp(Op.COPY, src=(Buffer.INPUT, 0), dst=(Buffer.OUTPUT, 0), count=2)
        rv = b[r].recv(1 - r, dst=(Buffer.OUTPUT, 1 - r), op=Op.REDUCE, deps=[c])
        s = b[r].send(1 - r, src=(Buffer.OUTPUT, r), deps=[rv])
        rv2 = b[r].recv(1 - r, dst=(Buffer.OUTPUT, r), op=Op.COPY, tag=1, deps=[s])
        b[r].send(1 - r, src=(Buffer.OUTPUT, 1 - r), tag=1, deps=[rv2])
    meta = AlgorithmMeta(Collective.ALLREDUCE, 2, 2, 2, name="deadlock", producer="test")
    return build_algorithm(meta, b)


def mismatched_allgather() -> Algorithm:
    """2 ranks; rank 0 sends 2 chunks where rank 1 receives 1."""
    b = [RankGraphBuilder(r) for r in range(2)]
    for r in range(2):
        b[r].comp(Op.COPY, src=(Buffer.INPUT, 0), dst=(Buffer.OUTPUT, r), count=1)
    b[0].send(1, src=(Buffer.OUTPUT, 0), count=2)
    b[1].recv(0, dst=(Buffer.OUTPUT, 0), count=1)
    b[1].send(0, src=(Buffer.OUTPUT, 1))
    b[0].recv(1, dst=(Buffer.OUTPUT, 1))
    meta = AlgorithmMeta(Collective.ALLGATHER, 2, 1, 2, name="mismatch", producer="test")
    return build_algorithm(meta, b)


def wrong_ring(alg: Algorithm, rank: int) -> Algorithm:
    """``alg`` with the first reducing RECV of ``rank`` turned into a plain copy: it runs,
    but that rank loses one contribution."""
    g = alg.graphs[rank].copy()
    pos = int((g.op == Op.REDUCE).nonzero()[0][0])
    g.op[pos] = Op.COPY
    graphs = list(alg.graphs)
    graphs[rank] = g
    return Algorithm(alg.meta, tuple(graphs)).with_meta(name="wrong_ring")


def children(pid: int | None = None) -> list[tuple[int, str]]:
    """(pid, state) of every live or zombie child process of ``pid`` (default: this one)."""
    pid = os.getpid() if pid is None else pid
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        try:
            cmd = (entry / "cmdline").read_bytes()
        except OSError:
            cmd = b""
        if b"resource_tracker" in cmd:  # multiprocessing's per-parent helper, not a rank
            continue
        if int(fields[1]) == pid:
            out.append((int(entry.name), fields[0]))
    return out
