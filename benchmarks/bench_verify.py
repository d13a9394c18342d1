"""Benchmark of hub.verify: time each verification level on large ring all-reduces.

Run alone: ``python benchmarks/bench_verify.py [ranks ...]`` (default 64 128 256). The ring is
built vectorized with ``RankGraph.from_columns`` (in place, 2(n-1) steps of SEND + RECV per rank,
about n * 4(n-1) nodes). Target: semantics of 256 ranks (~260k nodes) in <= 2 s. Times are the best of 3 runs (wall);
``sem. cpu`` is the CPU time of the semantics level and ``races cpu`` the part of it spent in the
happens-before race analysis, which is what to compare when other processes share the machine.
The last table times ``collhub trace verify`` as a whole process on ET files written to disk.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import numpy as np

from hub.chakra import Algorithm, AlgorithmMeta, Buffer, Collective, NodeType, Op, RankGraph, write_algorithm
from hub.transforms import algorithm_stats, chunk_algorithm, instances_algorithm, remap_algorithm, resolve_mapping
from hub.verify import LEVELS, _races, verify


def ring_allreduce(n: int) -> Algorithm:
    steps = 2 * (n - 1)
    s = np.arange(steps)
    graphs = []
    for r in range(n):
        rs = s < n - 1
        ag = s - (n - 1)
        send_off = np.where(rs, (r - s) % n, (r + 1 - ag) % n)
        recv_off = np.where(rs, (r - s - 1) % n, (r - ag) % n)
        m = 2 * steps  # node 2s = SEND of step s, node 2s+1 = RECV of step s
        kind = np.empty(m, dtype=np.int8)
        kind[0::2], kind[1::2] = NodeType.SEND, NodeType.RECV
        peer = np.empty(m, dtype=np.int32)
        peer[0::2], peer[1::2] = (r + 1) % n, (r - 1) % n
        src_off = np.full(m, -1, dtype=np.int32)
        dst_off = np.full(m, -1, dtype=np.int32)
        src_off[0::2], dst_off[1::2] = send_off, recv_off
        src_buf = np.where(kind == NodeType.SEND, int(Buffer.INPUT), -1)
        dst_buf = np.where(kind == NodeType.RECV, int(Buffer.INPUT), -1)
        op = np.zeros(m, dtype=np.int8)
        op[1::2] = np.where(rs, int(Op.REDUCE), int(Op.COPY))
        # step s > 0: SEND and RECV both depend on the RECV of step s-1 (position 2s-1)
        ndeps = np.ones(m, dtype=np.int64)
        ndeps[:2] = 0
        dep_ptr = np.concatenate([[0], np.cumsum(ndeps)])
        dep_pos = np.repeat(np.arange(1, m - 2, 2), 2)
        graphs.append(
            RankGraph.from_columns(
                m,
                kind=kind,
                peer=peer,
                count=1,
                src_buf=src_buf,
                src_off=src_off,
                dst_buf=dst_buf,
                dst_off=dst_off,
                op=op,
                dep_ptr=dep_ptr,
                dep_pos=dep_pos,
            )
        )
    meta = AlgorithmMeta(Collective.ALLREDUCE, n, n, n, inplace=True, name=f"ring{n}")
    return Algorithm(meta, tuple(graphs))


def _time(fn, repeat: int = 3) -> float:
    """Best wall time of ``repeat`` runs."""
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def _cpu(fn, repeat: int = 3) -> float:
    """Best CPU time of ``repeat`` runs (robust when other processes share the cores)."""
    best = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    return best


def _races_cpu(alg: Algorithm) -> float:
    """CPU seconds spent in the race analysis during one verify (wrapping the function)."""
    spent = [0.0]
    inner = _races.check_races

    def timed(*a, **k):  # type: ignore[no-untyped-def]
        t = time.process_time()
        try:
            return inner(*a, **k)
        finally:
            spent[0] += time.process_time() - t

    import hub.verify._api as api

    api.check_races = timed  # type: ignore[assignment]
    try:
        verify(alg)
    finally:
        api.check_races = inner  # type: ignore[assignment]
    return spent[0]


def _whole_process(n: int, repeat: int = 3) -> float:
    """Best wall time of ``collhub trace verify`` on the n-rank ring written to disk."""
    with tempfile.TemporaryDirectory() as d:
        prefix = Path(d) / "ring"
        write_algorithm(ring_allreduce(n), prefix)
        best = float("inf")
        for _ in range(repeat):
            t = time.perf_counter()
            proc = subprocess.run(
                [sys.executable, "-m", "hub.cli", "trace", "verify", str(prefix)], capture_output=True, text=True
            )
            best = min(best, time.perf_counter() - t)
            assert proc.returncode == 0, proc.stdout + proc.stderr
    return best


def main(argv: list[str]) -> int:
    sizes = [int(a) for a in argv] or [64, 128, 256]
    print(
        f"{'case':<22}{'nodes':>10}"
        + "".join(f"{lvl:>12}" for lvl in LEVELS)
        + f"{'sem. cpu':>10}{'races cpu':>11}{'stats':>10}"
    )
    for n in sizes:
        for label, alg in ((f"ring allreduce n={n}", ring_allreduce(n)),):
            assert verify(alg).ok, verify(alg).summary()
            times = [_time(partial(verify, alg, level=lvl)) for lvl in LEVELS]
            cpu = _cpu(partial(verify, alg))
            rcpu = min(_races_cpu(alg) for _ in range(3))
            st = _time(partial(algorithm_stats, alg), repeat=1)
            print(
                f"{label:<22}{alg.node_count():>10}"
                + "".join(f"{t:>11.3f}s" for t in times)
                + f"{cpu:>9.3f}s{rcpu:>10.3f}s{st:>9.3f}s"
            )
    n = sizes[-1] // 2
    alg = chunk_algorithm(ring_allreduce(n), 4)
    times = [_time(lambda lvl=lvl: verify(alg, level=lvl), repeat=1) for lvl in LEVELS]
    label = f"ring n={n} chunk x4"
    print(f"{label:<22}{alg.node_count():>10}" + "".join(f"{t:>11.3f}s" for t in times))

    n = sizes[-1]
    base = ring_allreduce(n)
    print()
    print(f"{'transform (ring n=' + str(n) + ')':<32}{'nodes out':>12}{'time':>10}")
    for label, fn in (
        ("chunk pieces=2", lambda: chunk_algorithm(base, 2)),
        ("instances count=2", lambda: instances_algorithm(base, 2)),
        ("remap random", lambda: remap_algorithm(base, resolve_mapping(n, None, "random", 1))),
    ):
        out = fn()
        t = _time(fn, repeat=1)
        print(f"{label:<32}{out.node_count():>12}{t:>9.3f}s")

    print()
    print(f"{'collhub trace verify (whole process, from disk)':<50}{'wall':>10}")
    for n in sizes:
        print(f"{'ring allreduce n=' + str(n):<50}{_whole_process(n):>9.3f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
