"""``collhub nccl compare``: custom algorithms beside NCCL's own choice, size by size.

For each size (nccl-tests' meaning) the row holds NCCL's pick and its model time (``explain``),
the simulated time of that pick as a schedule (``nccl.auto``; NVLS / NVLSTree all-reduce with the
switch stand-ins of the one-sided profile; where NCCL picks NVLS for all-gather / reduce-scatter,
which has no schedule here, the best modelled algorithm), and the simulated time of every other
producer, built once and bound to each size. The simulation is ``hub.simulate``'s congestion-
aware model on the system's link graph (``network_of``: an NVLink switch per node and a NIC
switch across nodes), because NCCL's channels share links: the congestion-unaware model would
let 16 channels run at 16 times a link's bandwidth. A time below the lower bound is flagged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hub.errors import UsageError

from ._explain import nccl_bytes
from ._schedule import plan, schedule
from ._system import System, network_of

__all__ = ["compare"]


def compare(
    s: System,
    collective: str,
    sizes: Sequence[int],
    others: Sequence[tuple[str, dict[str, Any]]],
    progress: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """One record per size: NCCL's pick, model and simulated time, and each other producer's."""
    from hub.plugins import get_manager
    from hub.sim import simulate
    from hub.topology import load_topology

    from ._tuning import choose

    graph = load_topology(network_of(s)).to_link_graph()
    mgr = get_manager()
    built = []
    for name, params in others:
        alg = mgr.run_producer(name, {"collective": collective, **params})
        if alg.ranks != s.ranks:
            raise UsageError(f"{name} made {alg.ranks} ranks, the system has {s.ranks}", hint="check its params")
        built.append((name, alg))
    rows: list[dict[str, Any]] = []
    for size in sizes:
        p = plan(collective, s.ranks, size, gpus_per_node=s.gpus_per_node, system=s)
        _, nbytes = nccl_bytes(p.collective, size, s.ranks)
        pick = choose(s, p.collective, nbytes)
        if progress:
            progress(f"{size} B: {pick.algorithm}/{pick.protocol}")
        res = simulate(schedule(p), graph, mode="aware")
        bound = res.bound_ns if res.bound_ns is not None else 0.0
        row: dict[str, Any] = {
            "size": nbytes,
            "nccl_pick": f"{pick.algorithm}/{pick.protocol}",
            "nccl_channels": pick.channels,
            "nccl_model_us": round(pick.time_us, 3),
            "nccl_schedule": f"{p.algorithm}/{p.protocol}",
            "nccl_sim_us": res.time_ns / 1000,
            "bound_us": round(bound / 1000, 3),
        }
        flags = []
        if res.time_ns < bound * 0.999:
            flags.append("nccl.auto")
        for name, alg in built:
            r = simulate(alg, graph, size=nbytes, mode="aware")
            row[f"{name}_us"] = r.time_ns / 1000
            if r.bound_ns is not None and r.time_ns < r.bound_ns * 0.999:
                flags.append(name)
        row["below_bound"] = flags
        times = {"nccl.auto": row["nccl_sim_us"], **{n: row[f"{n}_us"] for n, _ in built}}
        row["best"] = min(times, key=lambda k: times[k])
        rows.append(row)
    return rows
