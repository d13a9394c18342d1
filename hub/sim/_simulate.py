"""``simulate()`` (library) and the ``hub.simulate`` consumer."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from .._units import parse_size
from ..chakra import Algorithm, Collective, NodeType, Workload, check_algorithm, chunk_bytes
from ..errors import HubError, SimulationError, UsageError
from ..topology import DimensionalTopology, Topology, load_topology
from ..workload import Produce, algorithm_chooser
from ._bounds.linkload import link_load_bound_ns
from ._engine.layout import DelayFn
from ._engine.loop import EngineState, run_engine
from ._engine.network import AwareNetwork, network_model
from ._engine.program import BLOCK, K_RECV, K_SEND, Program, program_from_algorithm
from ._views.result import SimulationResult, lower_bound_ns

__all__ = ["SimulateParams", "parse_size", "simulate", "simulate_consumer"]

Mode = Literal["unaware", "aware", "auto"]
_CRIT_LIMIT = 10_000


class SimulateParams(BaseModel):
    """Parameters of the built-in simulator (``hub.simulate``)."""

    model_config = ConfigDict(extra="forbid")

    network: str = Field(
        description="topology string (e.g. 'ring:8', 'ring:4,switch:8', 'torus:4x4') "
        "or a path to an ASTRA-sim network.yml"
    )
    size: int | str | None = Field(
        default=None,
        description="collective size in bytes (nccl-tests' S); "
        "int or '1MiB'/'1M' (binary) / '2.2MB' (decimal), docs/pipeline.md#sizes. "
        "Binds unbound algorithms; optional when messages already carry sizes",
    )
    mode: Mode = Field(
        default="auto",
        description="'auto' (default: 'aware' wherever it applies, i.e. every network but a "
        "multi-dimensional one, so times account for link contention; 'unaware' there), "
        "'aware' (ASTRA-sim congestion-aware: store-and-forward FIFO links) or 'unaware' "
        "(ASTRA-sim congestion-unaware: closed form per message, no contention). The "
        "result's metric 'mode' says which model ran",
    )
    reduction_GBps: float | None = Field(
        default=None,
        gt=0,
        description="cost of COMP nodes without a duration: "
        "None = 1 ns (ASTRA-sim); else bytes / reduction_GBps ns (decimal GB/s)",
    )
    trace: bool = Field(default=False, description="write a Chrome/Perfetto trace JSON artifact")
    plot: bool = Field(default=False, description="write a PNG timeline and link-utilization plot (matplotlib)")
    algorithm_for: dict[str, str] = Field(
        default_factory=dict,
        description="workloads: collective -> a built-in "
        "algorithm name ('ring', 'direct', ...), a registered producer id "
        "('hub.ring', '<plugin>.<name>') or an ET prefix; default ring",
    )
    system: str | None = Field(
        default=None,
        description="workloads: an ASTRA-sim system.json whose "
        "*-implementation-custom keys choose the algorithms "
        "(native ones as docs/simulator.md lists; others are refused)",
    )

    @field_validator("size")
    @classmethod
    def _size(cls, v: int | str | None) -> int | str | None:
        if v is not None:
            parse_size(v)
        return v


# -- the library entry point --------------------------------------------------------------------
def _infer_size(alg: Algorithm) -> int | None:
    if alg.meta.size is not None:
        return int(alg.meta.size)
    if alg.meta.in_chunks <= 0 and alg.meta.out_chunks <= 0:
        return None  # a foreign algorithm without chunk counts: S is unknown
    for g in alg.graphs:
        sel = (g.kind == NodeType.SEND) & (g.count > 0) & (g.size >= 0)
        if sel.any():
            i = int(np.argmax(sel))
            return int(g.size[i] // g.count[i]) * alg.meta.reference_chunks
    return None


def _model(prog: Program, topo: Topology, mode: str) -> tuple[DelayFn | None, AwareNetwork | None]:
    return network_model(topo, mode)


def _critical_path(prog: Program, st: EngineState) -> list[dict[str, Any]]:
    names = {4: "COMP", 5: "SEND", 6: "RECV", 20: "COLL_START", 21: "COLL_END"}
    chain = st.chain(_CRIT_LIMIT)[::-1]
    at = np.asarray([g for g, _, _ in chain], dtype=np.int64)  # the columns read once for the whole path
    ranks = np.frombuffer(prog.rank, dtype=np.int32)[at].tolist()
    ids = np.frombuffer(prog.local_id, dtype=np.int64)[at].tolist()
    kinds = prog.kind_array()[at].tolist()
    insts = np.frombuffer(prog.inst, dtype=np.int32)[at].tolist()
    path = []
    for (_, start, end), rank, node, kind, inst in zip(chain, ranks, ids, kinds, insts, strict=True):
        entry: dict[str, Any] = {
            "rank": rank,
            "node": node,
            "kind": names.get(kind, "NOP"),
            "start_ns": start,
            "end_ns": end,
        }
        if inst:
            entry["collective"] = prog.labels.get(inst, str(inst))
        path.append(entry)
    return path


def _workload_program(
    wl: Workload,
    topo: Topology,
    reduction_GBps: float | None,
    algorithm_for: Mapping[Any, Algorithm | str] | None,
    system: str | Path | Mapping[str, Any] | None,
    produce_algorithm: Produce | None,
) -> tuple[Program, dict[Collective, Any]]:
    """A workload's program, and the collectives ASTRA-sim's own implementations serve."""
    if wl.rank_count == 0:
        raise SimulationError("the workload has no ranks")
    # the workload layer (ASTRA-sim's native collectives, six modules) only for workloads
    from ._astrasim.workload import program_from_workload

    native: dict[Collective, Any] = {}
    if system is not None:
        from ._astrasim.system import serve_from_system

        dims = len(topo.dims) if isinstance(topo, DimensionalTopology) else None
        explicit = {Collective.parse(k): v for k, v in (algorithm_for or {}).items()}
        sizes = tuple(d.npus for d in topo.dims) if isinstance(topo, DimensionalTopology) else None
        # algorithm_for wins
        custom, native = serve_from_system(system, wl, dims, frozenset(explicit), dim_sizes=sizes)
        algorithm_for = {**custom, **explicit}
    pick = algorithm_chooser(algorithm_for, produce=produce_algorithm, check=program_from_algorithm)
    prog = program_from_workload(wl, pick, topo.npus, reduction_GBps, native=native)
    return prog, native


def _algorithm_program(
    obj: Algorithm, topo: Topology, nbytes: int | None, reduction_GBps: float | None
) -> tuple[Program, int | None]:
    """An algorithm's program (bound to ``nbytes`` if unbound), and nccl-tests' size S."""
    # never trust an unverified input's numbers: the same checks the reader runs (exit 3)
    check_algorithm(obj, what=f"algorithm {obj.name or obj.collective.value!r}")
    if obj.ranks > topo.npus:
        raise SimulationError(
            f"algorithm {obj.name or obj.collective.value!r} has {obj.ranks} ranks but topology "
            f"{topo.to_string()!r} has {topo.npus} NPUs",
            hint="choose a topology with at least as many NPUs",
        )
    alg = obj
    per_chunk = None
    if not alg.is_bound:
        if nbytes is None:
            raise SimulationError(
                f"algorithm {alg.name or alg.collective.value!r} has no message sizes",
                hint="give size=..., e.g. size='1MiB'",
            )
        # bound while flattening (Algorithm.bind's sizes, without a copy of every rank graph)
        per_chunk = chunk_bytes(nbytes, alg.meta.reference_chunks)
        alg = alg.with_meta(size=nbytes)
    elif nbytes is not None and alg.meta.size is not None and alg.meta.size != nbytes:
        raise UsageError(
            f"the algorithm is already bound to {alg.meta.size} B, not {nbytes} B",
            hint="drop size, or pass the unbound algorithm",
        )
    prog = program_from_algorithm(alg, reduction_GBps, per_chunk=per_chunk)
    return prog, _infer_size(alg) if alg.meta.size is not None or nbytes is None else nbytes


def simulate(
    obj: Algorithm | Workload,
    topology: Topology | str | Path,
    *,
    size: int | str | None = None,
    mode: Mode = "unaware",
    reduction_GBps: float | None = None,
    algorithm_for: Mapping[Any, Algorithm | str] | None = None,
    system: str | Path | Mapping[str, Any] | None = None,
    produce_algorithm: Produce | None = None,
) -> SimulationResult:
    """Simulate an algorithm (or a workload) on ``topology`` under ASTRA-sim's analytical model.

    ``mode``: ``'unaware'`` (default here, ASTRA-sim's congestion-unaware model), ``'aware'``
    or ``'auto'`` (the ``hub.simulate`` consumer's default, :func:`resolve_mode`).
    ``size``: nccl-tests' collective size; binds an unbound algorithm (``alg.bind(size)``); for a
    bound or foreign algorithm it is only used for the bandwidth figures when the algorithm does
    not state its own size. ``system``: an ASTRA-sim system.json (path or dict) whose custom
    implementation keys serve a workload's collectives (``algorithm_for`` entries win).
    ``produce_algorithm``: runs the producer ids ``algorithm_for`` names (``hub.ring``,
    ``<plugin>.<component>``; :meth:`hub.plugins.PluginManager.produce_algorithm`, which the
    ``hub.simulate`` consumer receives through its run context); without it only built-in names,
    ET prefixes and algorithms are accepted (:func:`hub.workload.algorithm_chooser`).
    """
    if mode not in ("unaware", "aware", "auto"):
        raise UsageError(f"unknown mode {mode!r}", hint="'unaware', 'aware' or 'auto'")
    topo = load_topology(topology)
    if mode == "auto":
        mode = resolve_mode(topo)
    nbytes = parse_size(size) if size is not None else None
    native: dict[Collective, Any] = {}
    if isinstance(obj, Workload):
        prog, native = _workload_program(obj, topo, reduction_GBps, algorithm_for, system, produce_algorithm)
        collective, ranks, S, name = None, obj.rank_count, None, obj.name
    elif isinstance(obj, Algorithm):
        prog, S = _algorithm_program(obj, topo, nbytes, reduction_GBps)
        coll = obj.collective
        collective = None if coll == Collective.CUSTOM else coll.value
        ranks, name = obj.ranks, obj.name
    else:
        raise UsageError(f"cannot simulate a {type(obj).__name__}", hint="give an Algorithm or a Workload")
    delay, net = _model(prog, topo, mode)
    try:
        st = run_engine(prog, delay=delay, net=net)
    except SimulationError as exc:
        if isinstance(obj, Workload) and any(f" in {c.value}#" in exc.message for c in native):
            from ._astrasim.collectives import stuck_native  # (the stuck node is inside a native collective)

            raise stuck_native(exc) from None
        raise
    from ._astrasim.refusals import zero_time_events  # (ASTRA-sim's aborts: the drop-in's rule set)

    # Where ASTRA-sim aborts, the drop-in (``collhub astra-sim``) and ``astrasim.bundle`` refuse; here
    # the model's time is still well defined (tiny messages on fast links), so it is given with the
    # reason as a warning: there is no ASTRA-sim run for it to equal.
    astrasim_aborts = zero_time_events(st.t0_events)
    links: list[dict[str, Any]] = []
    if net is not None:
        for li, (b, busy) in enumerate(zip(st.link_bytes, st.link_busy, strict=True)):
            if b:
                links.append(
                    {
                        "link": net.link_label(li),
                        "bytes": b,
                        "busy_ns": busy,
                        "utilization": busy / st.time_ns if st.time_ns else 0.0,
                    }
                )
    root = obj.meta.root if isinstance(obj, Algorithm) else 0
    bound, formula = lower_bound_ns(topo, collective, S, ranks, root)
    term = "bandwidth" if bound is not None else None
    if collective is not None and S and topo.npus == ranks:
        from ._bounds.certificate import certify  # the cut bound with its latency term (cached per network)

        cert = certify(topo, collective, S, ranks)
        if cert is not None:
            bound, formula, term = cert.bound_ns, cert.formula, cert.term
    # the aware model queues each link's messages, so only the unaware one can beat this bound
    skip = isinstance(obj, Workload) or mode != "unaware"
    link_bound, busiest = (None, None) if skip else link_load_bound_ns(prog, topo)
    finish = list(st.rank_finish)
    if isinstance(obj, Workload):
        from ._views.breakdown import workload_finish

        finish = workload_finish(prog, st)
    res = SimulationResult(
        time_ns=max(finish, default=int(st.time_ns)) if isinstance(obj, Workload) else int(st.time_ns),
        mode=mode,
        topology=topo.to_string() if _has_string(topo) else topo.describe(),
        ranks=ranks,
        collective=collective,
        size=S,
        messages=prog.messages,
        bytes=prog.bytes,
        rank_finish_ns=finish,
        critical_path=_critical_path(prog, st),
        links=links,
        bound_ns=bound,
        bound_formula=formula,
        bound_term=term,
        bound_slack_ns=_truncation_slack(prog),
        link_bound_ns=link_bound,
        link_bound_link=busiest,
        astrasim_aborts=astrasim_aborts,
        name=name,
        _engine=st,
        _program=prog,
        _net=net,
    )
    if isinstance(obj, Workload):
        from ._views.breakdown import rank_breakdown

        res.per_rank = rank_breakdown(res)
    return res


def _has_string(topo: Topology) -> bool:
    try:
        topo.to_string()
    except HubError:
        return False
    return True


def resolve_mode(topo: Topology) -> Literal["unaware", "aware"]:
    """``mode='auto'``: the congestion-aware model wherever it applies (every network but a
    multi-dimensional one, which ASTRA-sim's aware backend refuses too), so that messages sharing
    a link queue and a time can be reached; the congestion-unaware model on the others, where a
    result below a bound carries its warning."""
    if isinstance(topo, DimensionalTopology) and len(topo.dims) > 1:
        return "unaware"
    return "aware"


def _fresh(path: Path) -> Path:
    """``path``, or ``<stem>-2<suffix>``, ``-3``, ... when it exists: a second run in the same
    directory never overwrites the first one's picture without a word (the result names it)."""
    if not path.exists():
        return path
    name, dot, ext = path.name.partition(".")
    k = 2
    while (cand := path.with_name(f"{name}-{k}{dot}{ext}")).exists():
        k += 1
    return cand


# -- the consumer -------------------------------------------------------------------------------
def simulate_consumer(obj: Algorithm | Workload, params: SimulateParams, ctx: Any) -> Any:
    """``hub.simulate``: simulate ``obj`` and return a :class:`hub.Result` (artifacts in ctx.workdir)."""
    from .._result import Result

    res = simulate(
        obj,
        params.network,
        size=params.size,
        mode=params.mode,
        reduction_GBps=params.reduction_GBps,
        algorithm_for=params.algorithm_for or None,
        system=params.system,
        produce_algorithm=getattr(ctx, "produce_algorithm", None),
    )
    artifacts: dict[str, str] = {}
    workdir = Path(getattr(ctx, "workdir", Path.cwd()))
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", res.name or res.collective or "simulation") or "simulation"
    # the writers (and their track layout) only when asked: a plain run imports neither
    if params.trace:
        from ._views.trace import write_trace

        artifacts["trace"] = str(write_trace(res, _fresh(workdir / f"{stem}.{res.mode}.trace.json")))
    if params.plot:
        from ._views.trace import write_plot

        artifacts["plot"] = str(write_plot(res, _fresh(workdir / f"{stem}.{res.mode}.png")))
    return Result(
        component="hub.simulate",
        metrics=res.metrics(),
        artifacts=artifacts,
        details=res.details(),
        warnings=res.warnings,
    )


def _truncation_slack(prog: Program) -> int:
    """Messages of the busiest GPU, sent or received: what whole-ns truncation can gain on a bound
    computed in real numbers (``SimulationResult.bound_slack_ns``)."""
    if not prog.n:
        return 0
    kind, rank = prog.kind_array(), np.asarray(prog.rank)
    nr = max(prog.ranks, int(rank.max()) + 1)
    sends = np.zeros(nr, dtype=np.int64)
    recvs = np.zeros(nr, dtype=np.int64)
    for lo in range(0, prog.n, BLOCK):  # blocked: no whole-column mask or gathered ranks
        k, r = kind[lo : lo + BLOCK], rank[lo : lo + BLOCK]
        sends += np.bincount(r[k == K_SEND], minlength=nr)
        recvs += np.bincount(r[k == K_RECV], minlength=nr)
    return int(max(sends.max(initial=0), recvs.max(initial=0)))
