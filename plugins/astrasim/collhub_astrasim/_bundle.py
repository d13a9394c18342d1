"""``astrasim.bundle``: a self-contained ASTRA-sim input set for an algorithm or a workload.

Layout (all paths inside relative to the bundle, which ``run.sh`` makes the working directory)::

    <out>/README.md  run.sh  system.json  network.yml  memory.json  collhub-bundle.json
    <out>/algorithm/custom_<coll>.<rank>.et     per-rank algorithm ETs (one set per collective)
    <out>/workload/<astra coll>.<rank>.et       per-rank workload ETs
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field

from hub import parse_size as _core_parse_size
from hub.atomic import commit_dir, temp_dir
from hub.chakra import (
    COMM_TYPE_OF,
    Algorithm,
    Collective,
    NodeType,
    Workload,
    check_algorithm,
    write_algorithm,
    write_workload,
)
from hub.errors import HubError, UsageError

from ._config import (
    ASTRA_COLL_NAME,
    Dim,
    command_args,
    custom_key,
    dumps_json,
    memory_json,
    native_key,
    network_yml,
    system_json,
)
from ._readme import bundle_readme, run_sh

__all__ = ["Bundle", "BundleOptions", "BundleParams", "build_bundle", "consume_bundle", "parse_size", "workload_name"]


def workload_name(astra_coll: str, ranks: int, size: int) -> str:
    """The node name ASTRA-sim's microbenchmarks use, e.g. ``all_reduce_8npus_1MB`` for 1 MiB."""
    for unit, shift in (("GB", 30), ("MB", 20), ("KB", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{astra_coll}_{ranks}npus_{size >> shift}{unit}"
    return f"{astra_coll}_{ranks}npus_{size}B"


def parse_size(value: int | str) -> int:
    """Bytes, read with the core's one size grammar (``hub.parse_size``); at least 1 byte here."""
    size = _core_parse_size(value)
    if size < 1:
        raise UsageError(f"size must be at least 1 byte, got {value!r}")
    return size


class BundleOptions(BaseModel):
    """Parameters shared by ``astrasim.bundle`` and ``astrasim.run``."""

    model_config = ConfigDict(extra="forbid")

    network: str = Field(description="topology string (e.g. ring:8) or path of an ASTRA-sim network.yml")
    size: int | str | None = Field(
        default=None,
        description='collective size in bytes (nccl-tests definition) or "1MiB"; binds the algorithm; '
        "may be omitted for an algorithm that is already bound",
    )
    algorithm_for: dict[str, str] = Field(
        default_factory=dict,
        description="workload input only: collective -> algorithm, as an ET prefix of an existing custom ET "
        "set, a producer id (hub.ring) or built-in name (ring), or native:<impl> (native:ring); "
        "default ring, as hub.simulate",
    )
    target: Literal["master", "2024-09", "2024-04"] = Field(
        default="master",
        description="ASTRA-sim version: master (*-implementation-custom), 2024-09 (*-implementation-chakra), "
        "2024-04 (*-implementation-chakra-experimental)",
    )
    backend: Literal["aware", "unaware", "any"] = Field(
        default="any", description="network backend the bundle is for; aware refuses multi-dimensional networks"
    )
    system: dict[str, Any] = Field(default_factory=dict, description="extra or overriding system.json settings")


class BundleParams(BundleOptions):
    """Parameters of ``astrasim.bundle``."""

    out: str = Field(description="directory to create (relative paths: relative to the run directory)")
    overwrite: bool = Field(default=False, description="replace an existing, non-empty out directory")


@dataclass(frozen=True)
class Bundle:
    """What :func:`build_bundle` wrote."""

    path: Path
    workload_prefix: str
    ranks: int
    dims: tuple[Dim, ...]
    target: str
    backend: str
    #: collective -> "custom:<prefix>" | "native:<impl>" | "replay"
    implementations: dict[str, str]
    size: int | None
    collective: Collective | None
    algorithm: Algorithm | None = None
    files: list[str] = field(default_factory=list)
    #: hub.simulate's prediction per backend (ns), or the reason there is none
    predicted_ns: dict[str, int | str] = field(default_factory=dict)
    #: workload input: what was changed to make it runnable (repair -> count)
    repairs: dict[str, int] = field(default_factory=dict)
    #: the process groups its collectives use (``pg_name`` -> NPUs), written to comm_group.json
    comm_groups: dict[str, list[int]] = field(default_factory=dict)

    def args(self) -> list[str]:
        return command_args(self.workload_prefix, comm_groups=COMM_GROUPS if self.comm_groups else None)


def _check_backend(dims: Sequence[Dim], backend: str) -> None:
    if backend == "aware" and len(dims) > 1:
        raise UsageError(
            f"the congestion-aware backend accepts only 1-D networks; this one has {len(dims)} dimensions",
            hint="use backend=unaware with AstraSim_Analytical_Congestion_Unaware, or a 1-D topology",
        )


def _bind(alg: Algorithm, size: int | None) -> Algorithm:
    if size is None:
        if not alg.is_bound:
            raise UsageError(
                f"algorithm {alg.name or alg.collective.value!r} has no message sizes",
                hint="set size (e.g. --set size=1MiB); ASTRA-sim needs comm_size on every SEND/RECV",
            )
        return alg
    # Without a chunk model (no buffer sizes, e.g. imported ETs) bind() would give every message
    # the whole collective size; such an algorithm keeps the sizes it was written with.
    fixed = (alg.meta.in_chunks <= 0 and alg.meta.out_chunks <= 0) or any(
        bool((((g.kind == NodeType.SEND) | (g.kind == NodeType.RECV)) & (g.count <= 0)).any()) for g in alg.graphs
    )
    if fixed:
        if alg.meta.size != size or not alg.is_bound:
            raise UsageError(
                f"algorithm {alg.name or alg.collective.value!r} has fixed message sizes (no chunk counts) "
                f"and cannot be bound to {size} bytes",
                hint="omit size to keep the sizes it was made with",
            )
        return alg
    return alg.bind(size)


def _native_impls(value: str, ndims: int) -> list[str]:
    impl = value.split(":", 1)[1].strip()
    if not re.fullmatch(
        r"ring|oneRing|direct\d*|oneDirect\d*|doubleBinaryTree|halvingDoubling|oneHalvingDoubling", impl
    ):
        raise UsageError(
            f"unknown native ASTRA-sim implementation {impl!r}",
            hint="ring, oneRing, direct, directN, oneDirect, doubleBinaryTree, halvingDoubling, oneHalvingDoubling",
        )
    return [impl] * ndims  # one entry per network dimension, or ASTRA-sim's numbers are meaningless


def _produce(producer: str, coll: Collective, ranks: int, ctx: Any) -> Algorithm:
    """A producer id (``hub.ring``, ``mscclang.program`` ...) or a built-in name (``ring``)."""
    from hub.plugins import get_manager

    if "." not in producer:
        producer = f"hub.{producer.replace('-', '_')}"
    return get_manager().run_producer(producer, {"collective": coll.value, "ranks": ranks}, ctx)


def _new_dir(out: Path, overwrite: bool) -> Path:
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out} exists and is not a directory")
    if out.is_dir() and any(out.iterdir()) and not overwrite:
        raise UsageError(f"{out} exists and is not empty", hint="choose another out directory or set overwrite=true")
    return temp_dir(out)  # 0777 minus the umask, like mkdir (mkdtemp's 0700 would stick)


def _publish(tmp: Path, out: Path) -> None:
    """Move the finished bundle into place; a reader never sees a half-written bundle."""
    commit_dir(tmp, out, replace=True)


def build_bundle(
    obj: Algorithm | Workload,
    *,
    out: Path,
    dims: Sequence[Dim],
    size: int | None = None,
    algorithm_for: dict[str, str] | None = None,
    target: str = "master",
    backend: str = "any",
    system: dict[str, Any] | None = None,
    overwrite: bool = False,
    ctx: Any = None,
    network_label: str = "",
    predict: bool = True,
    check: bool = True,
) -> Bundle:
    """Write the bundle for ``obj`` into ``out`` (atomically) and describe it; ``check``: refuse a
    bundle the real binaries would abort on (``_check``)."""
    dims = tuple(dims)
    yml = network_yml(dims)
    _check_backend(dims, backend)
    npus = 1
    for d in dims:
        npus *= d.npus
    tmp = _new_dir(out, overwrite)
    try:
        (tmp / "algorithm").mkdir()
        (tmp / "workload").mkdir()
        if isinstance(obj, Algorithm):
            c = _algorithm_contents(obj, tmp, npus, size, algorithm_for, target, network_label)
        else:
            c = _workload_contents(obj, tmp, npus, size, algorithm_for or {}, target, len(dims), ctx)
        write_workload(c.wl, tmp / c.workload_prefix, attributes="astrasim")
        sys_cfg = system_json(c.custom, c.native, system or {})
        (tmp / "system.json").write_text(dumps_json(sys_cfg))
        (tmp / "network.yml").write_text(yml)
        (tmp / "memory.json").write_text(dumps_json(memory_json()))
        bound = c.bound
        bundle = Bundle(
            path=out,
            workload_prefix=c.workload_prefix,
            ranks=npus,
            dims=dims,
            target=target,
            backend=backend,
            implementations=c.impls,
            size=bound.meta.size if bound is not None else size,
            collective=c.coll,
            algorithm=bound,
            predicted_ns=_predict(bound, dims, backend) if bound is not None and predict else {},
            repairs=c.repairs,
            comm_groups=c.groups,
        )
        (tmp / "run.sh").write_text(run_sh(bundle.args()))
        (tmp / "run.sh").chmod(0o755)
        (tmp / "README.md").write_text(bundle_readme(bundle, sys_cfg))
        (tmp / "collhub-bundle.json").write_text(dumps_json(_manifest(bundle, network_label)))
        if check:
            from ._check import check_runs

            check_runs(tmp, bundle.args(), backend, len(dims))
            shutil.rmtree(tmp / "log", ignore_errors=True)
        files = sorted(str(p.relative_to(tmp)) for p in tmp.rglob("*") if p.is_file())
        _publish(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return Bundle(**{**bundle.__dict__, "files": files})


@dataclass
class _Contents:
    """What a bundle runs, as written into its directory: the workload and the implementation of
    each of its collectives (custom ET sets, native algorithms, replay)."""

    wl: Workload
    workload_prefix: str
    custom: dict[str, str] = field(default_factory=dict)  # system.json's custom key -> ET set prefix
    native: dict[str, list[str]] = field(default_factory=dict)  # system.json's native key -> per-dim algorithms
    impls: dict[str, str] = field(default_factory=dict)  # collective -> how it runs
    bound: Algorithm | None = None  # an algorithm input, bound to its size
    coll: Collective | None = None
    repairs: dict[str, int] = field(default_factory=dict)
    groups: dict[str, list[int]] = field(default_factory=dict)


def _algorithm_contents(
    obj: Algorithm,
    tmp: Path,
    npus: int,
    size: int | None,
    algorithm_for: dict[str, str] | None,
    target: str,
    network_label: str,
) -> _Contents:
    """An algorithm input: its custom ET set, and a one-collective workload that runs it."""
    if algorithm_for:
        raise UsageError("algorithm_for is only for workload input", hint="an algorithm names its own collective")
    check_algorithm(obj, what=f"algorithm {obj.name or obj.collective.value!r}")
    coll = obj.collective
    key = custom_key(coll, target)  # refuses collectives ASTRA-sim cannot run
    if obj.ranks != npus:
        raise UsageError(
            f"algorithm {obj.name or coll.value!r} has {obj.ranks} ranks but the network"
            f"{' ' + network_label if network_label else ''} has {npus} NPUs",
            hint="choose a network with as many NPUs as the algorithm has ranks",
        )
    bound = _bind(obj, size)
    prefix = f"algorithm/custom_{coll.value}"
    write_algorithm(bound, tmp / prefix, attributes="astrasim")
    wl_size = bound.meta.size if bound.meta.size is not None else _sent_bytes(bound)
    astra = ASTRA_COLL_NAME[coll]
    if coll is Collective.ALLGATHER:
        # ASTRA-sim's native all-gather reads comm_size as the per-rank contribution; the
        # custom path ignores the workload size altogether.
        wl_size = -(-wl_size // npus)
    wl = Workload.single_collective(
        coll, npus, wl_size, name=workload_name(astra, npus, int(bound.meta.size or wl_size))
    )
    for rank, nodes in enumerate(wl.ranks):
        nodes[0].id = rank  # as ASTRA-sim's microbenchmark generator numbers them (ids are per file)
    return _Contents(
        wl, f"workload/{astra}", custom={key: prefix}, impls={coll.value: f"custom:{prefix}"}, bound=bound, coll=coll
    )


def _workload_contents(
    obj: Workload,
    tmp: Path,
    npus: int,
    size: int | None,
    algorithm_for: dict[str, str],
    target: str,
    ndims: int,
    ctx: Any,
) -> _Contents:
    """A workload input: its runnable copy, and per collective a custom ET set (produced or
    copied), a native algorithm or replay, as ``algorithm_for`` says."""
    from ._repair import runnable_copy

    wl, repairs = runnable_copy(obj)
    if wl.rank_count != npus:
        raise UsageError(f"workload has {wl.rank_count} ranks but the network has {npus} NPUs")
    c = _Contents(wl, "workload/workload", repairs=repairs)
    c.groups = _comm_groups(obj)  # (from the METADATA node, which the runnable copy leaves out)
    if c.groups:
        (tmp / COMM_GROUPS).write_text(dumps_json(c.groups))
    for coll_i, value in _workload_collectives(wl, algorithm_for).items():
        if value == "replay":
            c.impls[coll_i.value] = "replay"
            continue
        if value.startswith("native:"):
            c.native[native_key(coll_i)] = _native_impls(value, ndims)
            c.impls[coll_i.value] = value
            continue
        key = custom_key(coll_i, target)
        prefix = f"algorithm/custom_{coll_i.value}"
        if Path(f"{value}.0.et").is_file():
            _copy_et_set(Path(value), npus, tmp / prefix)
        else:
            alg = _produce(value, coll_i, npus, ctx)
            alg_size = size if size is not None else _workload_size(wl, coll_i, npus)
            write_algorithm(_bind(alg, alg_size), tmp / prefix, attributes="astrasim")
        c.custom[key] = prefix
        c.impls[coll_i.value] = f"custom:{prefix}"
    return c


def _manifest(bundle: Bundle, network_label: str) -> dict[str, Any]:
    """collhub-bundle.json: what was bundled, how to run it, what collhub predicts."""
    bound = bundle.algorithm
    return {
        "writer": "collhub-astrasim",
        "target": bundle.target,
        "backend": bundle.backend,
        "ranks": bundle.ranks,
        "size": bundle.size,
        "collective": bundle.collective.value if bundle.collective else None,
        "algorithm": bound.name if bound is not None else None,
        "implementations": bundle.implementations,
        "network": network_label,
        "command": ["<astra-sim binary>", *bundle.args()],
        "predicted_ns": bundle.predicted_ns,
        "repairs": bundle.repairs,
    }


def _predict(alg: Algorithm, dims: Sequence[Dim], backend: str) -> dict[str, int | str]:
    """What ASTRA-sim should print, from collhub's own exact model of its analytical backends.

    On the custom-collective path ASTRA-sim charges only network time and COMP durations, which
    ``hub.simulate`` reproduces to the ns; the bundle's README states the number.
    """
    try:
        from hub.sim import simulate
        from hub.topology import Dimension, DimensionalTopology

        topo = DimensionalTopology([Dimension(d.kind, d.npus, d.bandwidth, d.latency) for d in dims])
    except ImportError as exc:  # an older collhub without the simulator
        return {"none": f"hub.simulate unavailable: {exc}"}
    modes = ["unaware", "aware"] if backend == "any" else [backend]
    out: dict[str, int | str] = {}
    for mode in modes:
        if mode == "aware" and len(dims) > 1:
            continue
        try:
            out[mode] = int(simulate(alg, topo, mode=cast(Literal["unaware", "aware"], mode)).time_ns)
        except HubError as exc:  # the prediction is informative only; the bundle stays valid
            out[mode] = f"no prediction: {exc.message}"
    return out


def _sent_bytes(alg: Algorithm) -> int:
    g = alg.graphs[0]
    return int(g.size[g.kind == NodeType.SEND].sum())


COMM_GROUPS = "comm_group.json"


def _comm_groups(wl: Workload) -> dict[str, list[int]]:
    """The groups ``wl``'s collectives use, for ASTRA-sim's ``--comm-group-configuration``
    (``{"<pg_name>": [NPU, ...]}``; it parses each name as a positive integer; "" and "0" are every
    NPU and need no entry). Refuses a group that is not declared or not a positive integer."""
    from hub.workload import declared_groups, means_everyone

    declared = declared_groups(wl)
    out: dict[str, list[int]] = {}
    for rank, nodes in enumerate(wl.ranks):
        for node in nodes:
            name = node.pg_name
            if node.type != NodeType.COLL or means_everyone(name) or name in out:
                continue
            if not (name.isdigit() and int(name) > 0 and str(int(name)) == name):
                raise UsageError(
                    f"workload rank {rank}, node {node.id}: process group {name!r} is not a positive integer, "
                    "which ASTRA-sim's comm-group file needs",
                    hint="name process groups 1, 2, ... (pg_name), as PyTorch's converter does",
                )
            if name not in declared:
                raise UsageError(
                    f"workload rank {rank}, node {node.id}: process group {name!r} is not declared",
                    hint="declare it in the ## process_group:init ## METADATA node",
                )
            out[name] = list(declared[name])
    return out


def _workload_collectives(wl: Workload, mapping: dict[str, str]) -> dict[Collective, str]:
    """Each collective in the workload with how it is implemented; refuse what ASTRA-sim cannot run."""
    wanted = {Collective.parse(k): v for k, v in mapping.items()}
    found: dict[Collective, tuple[int, int]] = {}
    for rank, nodes in enumerate(wl.ranks):
        for node in nodes:
            if node.type != NodeType.COLL:
                continue
            coll = node.collective
            if coll is None or coll not in COMM_TYPE_OF:
                raise UsageError(f"workload rank {rank}, node {node.id}: unknown comm_type {node.comm_type}")
            found.setdefault(coll, (rank, node.id))
    result: dict[Collective, str] = {}
    for coll, (rank, node_id) in found.items():
        if coll is Collective.BROADCAST and coll not in wanted:
            result[coll] = "replay"  # ASTRA-sim replays BROADCAST nodes as their duration_micros
            continue
        if coll not in ASTRA_COLL_NAME:
            raise UsageError(
                f"workload rank {rank}, node {node_id}: ASTRA-sim cannot run a {coll.value} collective",
                hint="its system layer supports all-reduce, all-gather, reduce-scatter and all-to-all only",
            )
        # like hub.simulate: a collective without a choice runs the built-in ring
        result[coll] = wanted.get(coll, "hub.ring")
    for coll in wanted:
        if coll not in found:
            raise UsageError(f"algorithm_for names {coll.value}, but the workload has no {coll.value} node")
    return result


def _workload_size(wl: Workload, coll: Collective, npus: int) -> int:
    sizes = {
        int(n.comm_size or 0) for nodes in wl.ranks for n in nodes if n.type == NodeType.COLL and n.collective is coll
    }
    if len(sizes) != 1:
        raise UsageError(
            f"workload {coll.value} nodes have {len(sizes)} different sizes {sorted(sizes)}; ASTRA-sim takes one "
            "custom ET set per collective with its sizes frozen in",
            hint="set size= to choose the one the algorithm is bound to",
        )
    size = sizes.pop()
    # ASTRA-sim reads an all-gather's comm_size as the per-rank part; the hub sizes by the output.
    return size * npus if coll is Collective.ALLGATHER else size


def _copy_et_set(src_prefix: Path, ranks: int, dst_prefix: Path) -> None:
    for rank in range(ranks):
        src = src_prefix.with_name(f"{src_prefix.name}.{rank}.et")
        if not src.is_file():
            raise UsageError(
                f"custom ET set {src_prefix} has no file for rank {rank} ({src})", hint=f"it needs {ranks} files"
            )
        shutil.copyfile(src, dst_prefix.with_name(f"{dst_prefix.name}.{rank}.et"))


def _out_path(out: str, ctx: Any) -> Path:
    p = Path(out).expanduser()
    if not p.is_absolute() and ctx is not None:
        p = Path(ctx.workdir) / p
    return p


def _dims_for(network: str) -> list[Dim]:
    from ._topology import load_dims

    return load_dims(network)


def consume_bundle(obj: Algorithm | Workload, params: BundleParams, ctx: Any) -> Any:
    """Consumer ``astrasim.bundle``: write the bundle and report where it is."""
    from hub import Result

    out = _out_path(params.out, ctx)
    bundle = build_bundle(
        obj,
        out=out,
        dims=_dims_for(params.network),
        size=parse_size(params.size) if params.size is not None else None,
        algorithm_for=params.algorithm_for,
        target=params.target,
        backend=params.backend,
        system=params.system,
        overwrite=params.overwrite,
        ctx=ctx,
        network_label=params.network,
    )
    return Result(
        component="astrasim.bundle",
        metrics={
            "ranks": bundle.ranks,
            "size": bundle.size,
            "files": len(bundle.files),
            "target": params.target,
            **{f"predicted_ns_{k}": v for k, v in bundle.predicted_ns.items() if isinstance(v, int)},
        },
        artifacts={"bundle": _rel(out, ctx), "run_sh": _rel(out / "run.sh", ctx)},
        details={
            "implementations": bundle.implementations,
            "command": ["<binary>", *bundle.args()],
            "files": bundle.files,
        },
    )


def _rel(path: Path, ctx: Any) -> str:
    if ctx is not None:
        try:
            return str(path.resolve().relative_to(Path(ctx.workdir).resolve()))
        except ValueError:
            pass
    return str(path)
