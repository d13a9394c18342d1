"""Workloads (issue #15): write, read, inline and simulate a 64-rank step of >= 100k COMP nodes
whose ring all-reduces are inlined. Prints one table: time (wall and CPU) and peak memory per step.

    python benchmarks/bench_workload.py [--ranks 64] [--comp 1600] [--colls 8] [--pieces 4]

Per rank: a chain of layers; every ``comp/colls`` COMP nodes end in a gradient all-reduce
(64 KiB .. 1 MiB) that the next layer does not wait for (overlap), as a DDP step does. Also
timed, outside the target: simulating the COMM_COLL nodes as they are (each served by its ring
algorithm), and ``hub.overlap`` (each all-reduce cut into ``--pieces`` copies, each waiting for
its piece of the gradient COMP) with its simulation.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

from hub.chakra import COMM_TYPE_OF, Collective, NodeType, Workload, WorkloadNode, read_workload, write_workload
from hub.sim import simulate
from hub.workload import inline_workload, overlap_workload


def make(ranks: int, comp: int, colls: int) -> Workload:
    per = comp // colls
    out = []
    for r in range(ranks):
        nodes: list[WorkloadNode] = []
        prev: int | None = None
        nid = 0
        for c in range(colls):
            for _ in range(per):
                nodes.append(
                    WorkloadNode(
                        id=nid,
                        name="gemm",
                        type=NodeType.COMP,
                        duration_micros=5 + (nid + r) % 7,
                        deps=[prev] if prev is not None else [],
                    )
                )
                prev = nid
                nid += 1
            nodes.append(
                WorkloadNode(
                    id=nid,
                    name=f"allreduce{c}",
                    type=NodeType.COLL,
                    deps=[prev],
                    comm_type=COMM_TYPE_OF[Collective.ALLREDUCE],
                    comm_size=(64 << 10) << (c % 5),
                )
            )
            nid += 1
        out.append(nodes)
    return Workload(ranks=out, name="bench-ddp")


def step(label: str, fn, rows: list[tuple[str, float, float, float]]):
    """Time one step; memory = the process's peak RSS after it (monotonic: the peak so far)."""
    w0, c0 = time.perf_counter(), time.process_time()
    result = fn()
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    rows.append((label, wall, cpu, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))
    return result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--comp", type=int, default=1600, help="COMP nodes per rank")
    ap.add_argument("--colls", type=int, default=8, help="all-reduces per rank")
    ap.add_argument("--pieces", type=int, default=4, help="hub.overlap pieces")
    a = ap.parse_args()
    rows: list[tuple[str, float, float, float]] = []
    wl = make(a.ranks, a.comp, a.colls)
    with tempfile.TemporaryDirectory() as tmp:
        prefix = Path(tmp) / "wl"
        step("write", lambda: write_workload(wl, prefix), rows)
        back = step("read", lambda: read_workload(prefix), rows)
    inl = step("inline (ring)", lambda: inline_workload(back, {"allreduce": "ring"}), rows)
    res = step("simulate (unaware)", lambda: simulate(inl, f"ring:{a.ranks}"), rows)
    extra: list[tuple[str, float, float, float]] = []
    coll = step("simulate COMM_COLL as is", lambda: simulate(back, f"ring:{a.ranks}"), extra)
    ov = step(
        f"overlap (ring, {a.pieces} pieces)", lambda: overlap_workload(back, a.pieces, {"allreduce": "ring"}), extra
    )
    res_ov = step("simulate overlapped", lambda: simulate(ov, f"ring:{a.ranks}"), extra)
    comp = sum(1 for r in wl.ranks for n in r if n.type == NodeType.COMP)
    print(
        f"{a.ranks} ranks, {comp} COMP nodes, {a.colls * a.ranks} COMM_COLL nodes -> {inl.node_count()} nodes "
        f"inlined; step time {res.time_ns} ns (COMM_COLL path {coll.time_ns} ns, overlapped {res_ov.time_ns} ns: "
        f"{res_ov.time_ns / res.time_ns:.4f} x inlined)"
    )
    print("| step | wall s | CPU s | peak RSS MiB so far |\n|---|---|---|---|")
    for label, wall, cpu, peak in rows:
        print(f"| {label} | {wall:.2f} | {cpu:.2f} | {peak:.0f} |")
    total_cpu = sum(r[2] for r in rows[1:])
    print(f"| read+inline+simulate | {sum(r[1] for r in rows[1:]):.2f} | {total_cpu:.2f} | - |")
    for label, wall, cpu, peak in extra:
        print(f"| {label} | {wall:.2f} | {cpu:.2f} | {peak:.0f} |")
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"max RSS {peak_mib:.0f} MiB; target: read+inline+simulate <= 10 s")


if __name__ == "__main__":
    main()
