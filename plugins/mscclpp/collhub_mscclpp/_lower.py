"""Lowering a parsed plan to SEND/RECV/COMP nodes: the rules of the profile's one-sided section
(docs/spec/collective-profile.md §10), applied op by op.

* Block order: an op's nodes depend on the block's last sync node (``nop``, ``barrier``, the
  ends of a ``pipeline``); a sync node depends on every node issued since the previous one.
  Single-thread ops (signal, wait, flush, semaphores) are chained per thread position.
* Data ops become COMP nodes (local), SEND+RECV pairs (put: writer to owner; pull: owner to
  reader) or fan-in/fan-out pairs (switch ops).
* Signals and waits become one message per channel with a per-connection tag; the k-th signal
  and the k-th wait of a connection are consecutive in a chain, so every FIFO matcher (hub's,
  ASTRA-sim's) pairs them as the executor does.
* :mod:`._attach` then places the owner side of each one-sided access and the packet, semaphore
  and barrier edges.

Findings the graph cannot hold (a barrier reached by too few blocks, a semaphore left unbalanced,
a packet read nobody writes, an operand outside its table) are collected as located problems.
"""

from math import lcm

from hub.chakra import ONESIDED as OS

from ._graphs import RankNodes
from ._model import COMP, COPY, SCRATCH, Access, Lowering, PlanProblem
from ._ops import DataOps
from ._plan import Plan

__all__ = ["Access", "Lowering", "PlanProblem", "finish_launches", "lower_plan", "pipeline_iterations", "refinement"]


def pipeline_iterations(plan: Plan, chunk_bytes: int | None) -> dict[int, int]:
    """Iterations of every pipeline at the bound chunk size (§10): ``ceil(C · chunk / U)``;
    1 when the size is not bound."""
    out: dict[int, int] = {}
    for g in plan.gpus:
        for b in g.blocks:
            for o in b.ops:
                if o.name == "pipeline":
                    ctx = o.raw["iter_context"]
                    k = 1 if chunk_bytes is None else -(-int(ctx["num_chunks"]) * chunk_bytes // int(ctx["unit_size"]))
                    out[id(o)] = max(k, 1)
    return out


def refinement(plan: Plan, iterations: dict[int, int]) -> int:
    """``F``: sub-chunks per chunk, so that every thread-block-group slice of every pipeline
    window is a whole number of sub-chunks."""
    f = 1
    for g in plan.gpus:
        for b in g.blocks:
            for o in b.ops:
                k = iterations.get(id(o), 1)
                for op in o.body or [o]:
                    tbg = op.raw.get("tbg_info") or {}
                    f = lcm(f, k * max(int(tbg.get("tbg_size", 1) or 1), 1))
    return f


def lower_plan(plan: Plan, iterations: dict[int, int], refine: int) -> Lowering:
    n = len(plan.gpus)
    scratch_sub = max(g.scratch_chunks for g in plan.gpus) * refine
    low = Lowering(
        plan=plan,
        refine=refine,
        iterations=iterations,
        nodes=[RankNodes(r) for r in range(n)],
        scratch_sub=scratch_sub,
        flags=[0] * n,
        pkt_writers=[[] for _ in range(n)],
    )
    launches = []
    for g in plan.gpus:
        nodes = low.nodes[g.id]
        launch = nodes.add(COMP, "launch", ((OS.OP, "launch"), (OS.MAPPING, OS.EXACT), (OS.SYNC, 1), (OS.SYNTH, 1)), [])
        launches.append(launch)
        for b in g.blocks:
            blk = DataOps(low, g, b)
            blk.st.gate = launch
            blk.run()
    low.launches = launches
    return low


def finish_launches(low: Lowering) -> None:
    """Every node without dependencies waits for its rank's launch (nothing of this launch lands
    before the owner's kernel starts; earlier launches are not modelled), and the launch node
    depends on COMP COPYs that give the rank's flag chunks a defined value (copies of input
    chunks), so that signal messages read initialised memory."""
    ins = max(g.input_chunks for g in low.plan.gpus) * low.refine
    for r, nodes in enumerate(low.nodes):
        launch = low.launches[r]
        for v in range(len(nodes)):
            if v != launch and not nodes.deps[v]:
                nodes.deps[v].append(launch)
        if ins <= 0:
            continue
        done = 0
        while done < low.flags[r]:
            m = min(ins, low.flags[r] - done)
            init = nodes.add(
                COMP,
                "launch/flags",
                ((OS.OP, "launch"), (OS.MAPPING, OS.EXACT), (OS.SYNTH, 1)),
                [],
                count=m,
                src=(0, 0),
                dst=(SCRATCH, low.scratch_sub + done),
                op=COPY,
            )
            nodes.dep(launch, init)
            done += m
