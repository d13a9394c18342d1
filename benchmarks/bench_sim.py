"""Benchmark of hub.simulate: large pipelined ring all-reduces (prints a table).

Run: python benchmarks/bench_sim.py  (targets: 256 ranks <= 1 s unaware, <= 3 s aware; 1024 ranks
unaware <= 10 s). The ring is built vectorized with RankGraph.from_columns.
"""

from __future__ import annotations

import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hub.chakra import Algorithm, AlgorithmMeta, Collective, NodeType, RankGraph  # noqa: E402
from hub.sim import simulate  # noqa: E402


def ring_allreduce(n: int, size: int) -> Algorithm:
    """Pipelined ring all-reduce: per step k SEND(k) -> r+1 (deps RECV(k-1)), RECV(k) <- r-1 (deps RECV(k-1))."""
    steps = 2 * (n - 1)
    m = size // n
    kind = np.empty(2 * steps, dtype=np.int8)
    kind[0::2] = NodeType.SEND
    kind[1::2] = NodeType.RECV
    # node 2k = SEND(k), 2k+1 = RECV(k); both depend on RECV(k-1) = 2k-1 (k >= 1)
    cnt = np.ones(2 * steps, dtype=np.int64)
    cnt[:2] = 0
    dep_ptr = np.concatenate([[0], np.cumsum(cnt)])
    dep_pos = np.repeat(np.arange(1, 2 * steps - 2, 2), 2).astype(np.int32)
    graphs = []
    for r in range(n):
        peer = np.empty(2 * steps, dtype=np.int32)
        peer[0::2] = (r + 1) % n
        peer[1::2] = (r - 1) % n
        graphs.append(RankGraph.from_columns(2 * steps, kind=kind, peer=peer, count=1, size=m,
                                             dep_ptr=dep_ptr, dep_pos=dep_pos))
    return Algorithm(AlgorithmMeta(Collective.ALLREDUCE, n, n, n, size=size), tuple(graphs))


def main() -> None:
    rows = []
    cases = [(256, "unaware", 1.0), (256, "aware", 3.0), (1024, "unaware", 10.0)]
    if "--quick" in sys.argv:
        cases = cases[:2]
    for n, mode, target in cases:
        alg = ring_allreduce(n, 64 << 20)
        t0 = time.perf_counter()
        res = simulate(alg, f"ring:{n}", mode=mode)
        dt = time.perf_counter() - t0
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        rows.append((n, mode, res.messages, res.time_ns, dt, target, peak / 2**20))
    print(f"{'ranks':>6} {'mode':>8} {'messages':>9} {'sim time (ns)':>14} {'wall (s)':>9} {'target':>7} {'maxRSS MiB':>9}")
    for n, mode, msgs, t, dt, target, peak in rows:
        print(f"{n:>6} {mode:>8} {msgs:>9} {t:>14} {dt:>9.2f} {target:>7.1f} {peak:>9.1f}")
    print(f"max RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
