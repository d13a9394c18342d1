"""Per-rank results of a simulated workload, defined as ASTRA-sim's workload layer defines them.

ASTRA-sim (``Workload::report``, ``Statistics::post_processing``) prints per rank:

* ``finished, T cycles``: the time the rank's last workload node completed (``finish_ns``);
* ``exposed communication E cycles``: ``E = T - Σ GPU COMP durations`` (``tics_gpu_ops``: the
  replayed duration of every GPU COMP node, 1 ns for 0), so idle time and CPU time count as
  exposed communication (``exposed_comm_ns``);
* ``GPU time`` / ``CPU time`` / ``Comm time``: the length of the union of the [issue, completion]
  intervals of the rank's workload-level GPU COMP, CPU, and communication nodes (SEND, RECV and
  COMM_COLL, the latter from its start to its end on that rank) (``gpu_time_ns``, ``cpu_time_ns``,
  ``comm_time_ns``).

Also given: ``gpu_compute_ns`` / ``cpu_compute_ns``, the plain sums of COMP durations.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._engine.program import K_COMP, K_END, K_RECV, K_SEND, K_START

__all__ = ["rank_breakdown", "workload_finish"]

_RES_COMP, _RES_COMM, _RES_CPU = 1, 2, 3  # as hub.sim._astrasim.workload


def _union(starts: np.ndarray, ends: np.ndarray) -> int:
    """Total length of the union of intervals (ASTRA-sim's _calculateTotalRuntimeFromIntervals)."""
    if starts.size == 0:
        return 0
    order = np.lexsort((ends, starts))
    s, e = starts[order], ends[order]
    reach = np.maximum.accumulate(e)
    # a new merged interval begins where a start lies beyond everything before it
    new = np.ones(s.size, dtype=bool)
    new[1:] = s[1:] > reach[:-1]
    idx = np.flatnonzero(new)
    seg_end = np.append(reach[idx[1:] - 1], reach[-1])
    return int((seg_end - s[idx]).sum())


def workload_finish(prog: Any, st: Any) -> list[int]:
    """Per rank, when its last workload node completed (ASTRA-sim's ``sys[i] finished``): a
    collective counts until its END, so a native collective's last send still in flight (its
    stream has ended, ``hub.sim._astrasim.collectives``) does not; for custom and inlined collectives END
    already waits for every node, so this is the completion of the rank's last node."""
    kind = prog.kind_array()
    rank = np.frombuffer(prog.rank, dtype=np.int32)
    inst = np.frombuffer(prog.inst, dtype=np.int32)
    fin = np.asarray(st.fin, dtype=np.int64)
    sel = (inst == 0) | (kind == K_END)
    out = np.zeros(prog.ranks, dtype=np.int64)
    if sel.any():
        np.maximum.at(out, rank[sel], fin[sel])
    return [int(x) for x in out]


def rank_breakdown(res: Any) -> list[dict[str, int]]:
    """Per rank: finish, compute and communication times of a workload simulation (see module doc)."""
    prog, st = res._program, res._engine
    if prog is None or st is None or prog.acq is None:
        return []
    kind = prog.kind_array()
    rank = np.frombuffer(prog.rank, dtype=np.int32)
    inst = np.frombuffer(prog.inst, dtype=np.int32)
    acq = np.asarray(prog.acq, dtype=np.int64)
    dur = np.frombuffer(prog.dur, dtype=np.int64)
    start = np.asarray(st.start, dtype=np.int64)
    fin = np.asarray(st.fin, dtype=np.int64)
    top = inst == 0
    comp = top & (kind == K_COMP)
    gpu = comp & (acq == _RES_COMP)
    cpu = comp & (acq == _RES_CPU)
    replay = comp & (acq == _RES_COMM)  # a BROADCAST replayed as its duration: a COMM node on the GPU
    p2p = top & ((kind == K_SEND) | (kind == K_RECV))
    s_pos = np.flatnonzero(kind == K_START)
    e_pos = np.flatnonzero(kind == K_END)
    # START and END of one collective on one rank share (rank, instance)
    e_of = {(int(rank[g]), int(inst[g])): g for g in e_pos.tolist()}
    out = []
    for r in range(prog.ranks):
        mine = rank == r
        cs = [start[p2p & mine], start[replay & mine]]
        ce = [fin[p2p & mine], fin[replay & mine]]
        pairs = [(g, e_of[(r, int(inst[g]))]) for g in s_pos[rank[s_pos] == r].tolist()]
        if pairs:
            cs.append(start[[a for a, _ in pairs]])
            ce.append(fin[[b for _, b in pairs]])
        finish = int(res.rank_finish_ns[r])
        gpu_sum = int(dur[gpu & mine].sum() + dur[replay & mine].sum())
        out.append(
            {
                "rank": r,
                "finish_ns": finish,
                "gpu_compute_ns": gpu_sum,
                "cpu_compute_ns": int(dur[cpu & mine].sum()),
                "gpu_time_ns": _union(start[gpu & mine], fin[gpu & mine]),
                "cpu_time_ns": _union(start[cpu & mine], fin[cpu & mine]),
                "comm_time_ns": _union(np.concatenate(cs), np.concatenate(ce)),
                "exposed_comm_ns": finish - gpu_sum,
            }
        )
    return out
