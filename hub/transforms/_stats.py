"""``hub.stats``: message, byte, load and critical-path figures of an algorithm."""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from .._result import Result
from ..chakra import Algorithm, NodeType
from ..verify import check
from ..verify._flat import flatten
from ..verify._walk import walk

__all__ = ["StatsParams", "algorithm_stats", "stats_consumer"]


class StatsParams(BaseModel):
    """Parameters of ``hub.stats`` (none)."""

    model_config = ConfigDict(extra="forbid")


def algorithm_stats(alg: Algorithm) -> Result:
    """Count what ``alg`` sends and measure its longest causal chains.

    ``steps`` is the largest number of messages on one causal chain (dependencies plus
    SEND -> matching RECV edges), e.g. 2(n-1) for a ring all-reduce; ``critical_path_nodes`` the
    largest number of nodes on one, and ``critical_path_hops`` the messages on that longest
    chain. All three are None when the algorithm deadlocks. ``bytes`` is
    None unless every message is bound to a size.
    """
    check(alg, level="structure")
    f = flatten(alg)
    R = alg.ranks
    send = f.kind == NodeType.SEND
    recv = f.kind == NodeType.RECV
    comp = f.kind == NodeType.COMP
    bound = bool(np.all(f.size[send | recv] >= 0))
    s_rank, s_peer = f.rank[send], f.peer[send].astype(np.int64)
    s_cnt = f.count[send].astype(np.int64)
    s_size = np.maximum(f.size[send], 0)
    msgs_per_rank = np.bincount(s_rank, minlength=R)
    chunks_per_rank = np.bincount(s_rank, weights=s_cnt, minlength=R).astype(np.int64)
    bytes_per_rank = np.bincount(s_rank, weights=s_size, minlength=R).astype(np.int64)
    recv_per_rank = np.bincount(f.rank[recv], minlength=R)
    comp_per_rank = np.bincount(f.rank[comp], minlength=R)

    link = s_rank * R + s_peer
    lk, inv = np.unique(link, return_inverse=True)
    l_msgs = np.bincount(inv, minlength=lk.shape[0])
    l_bytes = np.bincount(inv, weights=s_size, minlength=lk.shape[0]).astype(np.int64)
    l_chunks = np.bincount(inv, weights=s_cnt, minlength=lk.shape[0]).astype(np.int64)
    per_link = {
        f"{a // R}->{a % R}": {"messages": int(m), "chunks": int(c), "bytes": int(b) if bound else None}
        for a, m, c, b in zip(lk.tolist(), l_msgs.tolist(), l_chunks.tolist(), l_bytes.tolist(), strict=False)
    }
    per_rank = {
        str(r): {
            "sends": int(msgs_per_rank[r]),
            "recvs": int(recv_per_rank[r]),
            "comps": int(comp_per_rank[r]),
            "chunks_sent": int(chunks_per_rank[r]),
            "bytes_sent": int(bytes_per_rank[r]) if bound else None,
        }
        for r in range(R)
    }

    res = walk(f, record=True)
    steps = path = path_hops = None
    if res.completed == f.n:
        hops = [0] * f.n  # most messages on any chain ending at v
        length = [0] * f.n  # most nodes on any chain ending at v
        lhops = [0] * f.n  # messages on the chain that realises length[v]
        ptr, dep = f.dep_ptr.tolist(), f.dep_pos.tolist()
        matched = res.matched
        for v in res.order:  # completion order is a topological order of deps + message edges
            h = ln = lh = 0
            for d in dep[ptr[v] : ptr[v + 1]]:
                if hops[d] > h:
                    h = hops[d]
                if length[d] > ln:
                    ln, lh = length[d], lhops[d]
            s = matched.get(v)
            if s is not None:
                if hops[s] + 1 > h:
                    h = hops[s] + 1
                if length[s] >= ln:
                    ln, lh = length[s], lhops[s] + 1
            hops[v] = h
            length[v] = ln + 1
            lhops[v] = lh
        steps = max(hops, default=0)
        path = max(length, default=0)
        path_hops = lhops[length.index(path)] if f.n else 0
    metrics: dict[str, Any] = {
        "ranks": R,
        "nodes": f.n,
        "messages": int(send.sum()),
        "chunks": int(s_cnt.sum()),
        "bytes": int(s_size.sum()) if bound else None,
        "max_messages_per_rank_sent": int(msgs_per_rank.max(initial=0)),
        "max_chunks_per_rank_sent": int(chunks_per_rank.max(initial=0)),
        "max_bytes_per_rank_sent": int(bytes_per_rank.max(initial=0)) if bound else None,
        "links": len(per_link),
        "steps": steps,
        "critical_path_nodes": path,
        "critical_path_hops": path_hops,
    }
    return Result(component="hub.stats", metrics=metrics, details={"per_rank": per_rank, "per_link": per_link})


def stats_consumer(obj: Any, params: StatsParams, ctx: Any = None) -> Result:
    """Consumer factory of ``hub.stats`` (see :func:`algorithm_stats`)."""
    if not isinstance(obj, Algorithm):
        from ..errors import UsageError

        raise UsageError(
            f"hub.stats needs an algorithm, got {type(obj).__name__}",
            hint="connect hub.stats to an algorithm source, not a workload",
        )
    return algorithm_stats(obj)
