"""Lower bounds on the makespan under the synthesizer's own cost model (``conventions.md`` §3).

All-gather: every NPU must *receive* the ``C - k`` chunks it does not own over its in-links,
and a link delivers its m-th chunk no earlier than ``m * busy + (delay - busy)``. The bound is
the largest, over NPUs, of the time by which the in-links can have delivered that many chunks
(exact in chunk units; TACOS's "ideal" time). Reduce-scatter: the same on the reversed network
(every NPU must *send* its foreign partial sums). All-reduce: every NPU must receive ``2(C-k)``
chunk-volumes in total (Patarasuk & Yuan), bounded the same way.
"""

from __future__ import annotations

import numpy as np

from ._network import Network

__all__ = ["ingress_bound"]


def ingress_bound(net: Network, need: int, busy: np.ndarray, delay: np.ndarray) -> float:
    """Smallest T such that every NPU's in-links can deliver ``need`` chunks by T (µs)."""
    if need <= 0:
        return 0.0
    n = net.npus
    # links into the same NPU with the same timing deliver alike: one weighted class each
    order = np.lexsort((delay, busy, net.dst))
    d, b, y = net.dst[order], busy[order], delay[order]
    first = np.flatnonzero(np.r_[True, (d[1:] != d[:-1]) | (b[1:] != b[:-1]) | (y[1:] != y[:-1])])
    cnt = np.diff(np.r_[first, d.size])
    dst, busy, delay = d[first].astype(np.int64), b[first], y[first]
    lag = delay - busy  # the first chunk lands at busy + lag

    def delivered(t: np.ndarray) -> np.ndarray:  # per NPU, with its own candidate time t[v]
        tv = t[dst]
        m = np.floor((tv - lag) / busy + 1e-9)
        m = np.maximum(m, 0.0) * cnt
        return np.bincount(dst, weights=m, minlength=n)

    lo = np.zeros(n)
    # an upper end: the slowest in-link alone
    hi = np.zeros(n)
    np.maximum.at(hi, dst, need * busy + lag)
    hi = np.maximum(hi, lo + 1e-9)
    for _ in range(80):
        mid = (lo + hi) / 2
        ok = delivered(mid) >= need
        hi = np.where(ok, mid, hi)
        lo = np.where(ok, lo, mid)
    # snap to the exact landing time: the largest landing time <= hi among in-links
    tv = hi[dst]
    m = np.maximum(np.floor((tv - lag) / busy + 1e-9), 0.0)
    land = np.where(m > 0, (m - 1) * busy + busy + lag, 0.0)
    best = np.zeros(n)
    np.maximum.at(best, dst, land)
    return float(best.max())
