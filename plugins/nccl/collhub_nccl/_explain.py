"""``collhub nccl explain``'s library half: NCCL's choice per size and its model table as text.

Sizes have nccl-tests' meaning (AllReduce: the buffer; AllGather: the output; ReduceScatter: the
input), which for these three is NCCL's own size for tuning. Element types are NCCL-tests'
defaults as the reference data uses them: float32, except AllGather, which NCCL re-types to int8.
A size whose per-rank count would be 0 is left out (NCCL would not be called).
"""

from __future__ import annotations

from typing import Any

from ._constants import ALGOS, COLLS, NCCL_COMMIT, NCCL_VERSION, PROTOS
from ._system import System
from ._tuning import choose, model

__all__ = ["EXPLAIN_COLLECTIVES", "crossovers", "elem_size", "explain", "model_table", "nccl_bytes", "system_record"]

EXPLAIN_COLLECTIVES = ("AllReduce", "AllGather", "ReduceScatter")
SIZES = tuple(1 << k for k in range(10, 33))  # 1 KiB .. 4 GiB


def elem_size(coll: str) -> int:
    return 1 if coll in ("AllGather", "Broadcast") else 4


def nccl_bytes(coll: str, size: int, ranks: int) -> tuple[int, int]:
    """(per-call count, NCCL's bytes for tuning) of a collective of ``size`` bytes (nccl-tests)."""
    es = elem_size(coll)
    if coll in ("AllGather", "ReduceScatter"):
        count = size // (ranks * es)
        return count, count * ranks * es
    count = size // es
    return count, count * es


def explain(s: System, collectives: tuple[str, ...] = EXPLAIN_COLLECTIVES) -> list[dict[str, Any]]:
    """One record per (collective, size): NCCL's choice and the model time of every candidate."""
    records: list[dict[str, Any]] = []
    for coll in collectives:
        for size in SIZES:
            count, nbytes = nccl_bytes(coll, size, s.ranks)
            if count == 0:
                continue
            ch = choose(s, coll, nbytes)
            records.append(
                {
                    "collective": coll,
                    "size": nbytes,
                    "algorithm": ch.algorithm,
                    "protocol": ch.protocol,
                    "channels": ch.channels,
                    "time_us": round(ch.time_us, 3),
                    "times": {f"{a}/{p}": round(t, 3) for (a, p), t in ch.times.items()},
                }
            )
    return records


def crossovers(records: list[dict[str, Any]]) -> list[tuple[str, int, str]]:
    """(collective, first size, "Algo/Proto") wherever the choice changes."""
    out: list[tuple[str, int, str]] = []
    prev: dict[str, str] = {}
    for r in records:
        key = f"{r['algorithm']}/{r['protocol']}"
        if prev.get(r["collective"]) != key:
            out.append((r["collective"], r["size"], key))
            prev[r["collective"]] = key
    return out


def model_table(s: System) -> list[str]:
    """NCCL's tuning table as its INFO log prints it (latency us / bandwidth GB/s)."""
    m = model(s)
    lines: list[str] = []
    for block in range(0, len(ALGOS), 3):
        algos = range(block, min(block + 3, len(ALGOS)))
        lines.append("  Algorithm   |" + "".join(f" {'':>14}   {ALGOS[a]:>14}   {'':>14} |" for a in algos))
        lines.append("  Protocol    |" + "".join(f" {p:>14} |" for _ in algos for p in PROTOS))
        lines.append(" Max NThreads |" + "".join(f" {m.max_threads[a][p]:>14d} |" for a in algos for p in range(3)))
        for c, coll in enumerate(COLLS):
            cells = "".join(f"{m.lat[c][a][p]:8.1f}/{m.bw[c][a][p]:6.1f} |" for a in algos for p in range(3))
            lines.append(f"{coll:>13} |{cells}")
    return lines


def system_record(s: System) -> dict[str, Any]:
    g = {
        name: {
            "pattern": gr.pattern,
            "channels": gr.channels,
            "bw_intra": gr.bw_intra,
            "bw_inter": gr.bw_inter,
            "type_intra": gr.type_intra,
            "type_inter": gr.type_inter,
        }
        for name, gr in (("ring", s.ring), ("tree", s.tree), ("nvls", s.nvls))
    }
    from ._system import network_of

    return {
        "system": s.describe(),
        "network": network_of(s),
        "nccl": NCCL_VERSION,
        "nccl_commit": NCCL_COMMIT,
        "gen": s.gen,
        "sm": s.sm,
        "gpus_per_node": s.gpus_per_node,
        "nodes": s.nodes,
        "ranks": s.ranks,
        "nic_gbps": s.nic_gbps,
        "channels": s.channels,
        "nvls_channels": s.nvls_channels,
        "graphs": g,
    }
