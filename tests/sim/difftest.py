"""Differential testing of ``hub.simulate`` against the real ASTRA-sim binaries (the oracle).

One generator of random valid algorithms (:func:`random_algorithm`), the built-in and corpus
algorithms (:func:`corpus_cases`), node-order shuffling (:func:`shuffle`), and one oracle run
(:func:`oracle_time`) through the astrasim plugin's bundle writer. Used by
``tests/sim/test_oracle.py`` (a bounded slice) and ``benchmarks/bench_fidelity.py`` (thousands).
(A uniquely named module, not conftest.py: several conftest modules share one name in a run.)
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from hub.chakra import (
    Algorithm,
    AlgorithmMeta,
    Buffer,
    Collective,
    NodeType,
    RankGraph,
    RankGraphBuilder,
    Workload,
    build_algorithm,
)

REPO = Path(__file__).resolve().parents[2]
MSCCL_IR = REPO.parent / "shared" / "data" / "msccl-ir"
BINARIES = {"aware": "AstraSim_Analytical_Congestion_Aware", "unaware": "AstraSim_Analytical_Congestion_Unaware"}
#: Where the real binaries are: only ever from the environment (never a path of this machine).
#: ``COLLHUB_ASTRASIM_DIR`` names the folder holding both; otherwise the folder of
#: ``COLLHUB_ASTRASIM_BIN`` (the astrasim plugin's variable), which then must hold both.
ENV_DIR, ENV_BIN = "COLLHUB_ASTRASIM_DIR", "COLLHUB_ASTRASIM_BIN"


def _bin_dir() -> Path | None:
    if os.environ.get(ENV_DIR):
        return Path(os.environ[ENV_DIR])
    if os.environ.get(ENV_BIN):
        return Path(os.environ[ENV_BIN]).parent
    return None


#: The folder of the real binaries (None: not configured; the tests that need them skip).
BIN = _bin_dir() or Path("/nonexistent-astra-sim-bin")
EXAMPLE = REPO.parent / "shared" / "data" / "astra-sim" / "custom-ring-allreduce-8npus-1MB"


@cache
def oracle_unavailable() -> str | None:
    """Why the real binaries cannot run here (None when they can): runs ASTRA-sim's own example."""
    import importlib.util

    for plugin in ("collhub_astrasim", "collhub_mscclang"):  # bundle writer, MSCCL-IR import
        if importlib.util.find_spec(plugin) is None:
            return f"plugin {plugin} not installed (make install-dev installs the first-party plugins)"
    if _bin_dir() is None:
        return (
            f"no real ASTRA-sim binaries: set {ENV_DIR} to the folder holding "
            f"{' and '.join(BINARIES.values())} (or {ENV_BIN} to one of them)"
        )
    for name in BINARIES.values():
        exe = BIN / name
        if not exe.is_file():
            return f"ASTRA-sim binary {exe} not found"
        with tempfile.TemporaryDirectory() as tmp:
            try:
                proc = subprocess.run(
                    [
                        str(exe),
                        "--workload-configuration=workload/all_reduce",
                        "--system-configuration=system.json",
                        "--network-configuration=network.yml",
                        "--remote-memory-configuration=memory.json",
                        f"--logging-folder={tmp}",
                    ],
                    cwd=EXAMPLE,
                    capture_output=True,
                    text=True,
                    timeout=60,
                )
            except (OSError, subprocess.TimeoutExpired) as exc:
                return f"ASTRA-sim binary {exe.name} cannot run: {exc}"
            if proc.returncode != 0 or "finished, 90174 cycles" not in proc.stdout:
                err = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
                return f"ASTRA-sim binary {exe.name} cannot run ({err[0]}); on Debian: apt-get install libprotobuf32"
    return None


def oracle_time(alg: Algorithm, network: str, mode: str, timeout: float = 120.0) -> int:
    """The real ASTRA-sim's time (max over ranks, ns) for ``alg`` on ``network`` in ``mode``,
    from a bundle written by the astrasim plugin (``astrasim.bundle``)."""
    from collhub_astrasim._bundle import _dims_for, build_bundle
    from collhub_astrasim._parse import parse_output
    from collhub_astrasim._run import run_binary

    with tempfile.TemporaryDirectory(prefix="collhub-oracle-") as tmp:
        out = Path(tmp) / "bundle"
        bundle = build_bundle(alg, out=out, dims=_dims_for(network), backend=mode, predict=False, check=False)
        stdout, _, _ = run_binary(BIN / BINARIES[mode], bundle.args(), out, timeout)
        return parse_output(stdout).time_ns


def oracle_rank_finish_ns(
    wl: Workload, network: str, mode: str, system: dict[str, Any], algorithm_for: dict[str, str], timeout: float = 300.0
) -> list[int]:
    """Every rank's finish time (ns) in the real ASTRA-sim for workload ``wl`` on ``network`` with
    this ``system.json``, from a bundle written by the astrasim plugin (``astrasim.bundle``)."""
    from collhub_astrasim._bundle import _dims_for, build_bundle
    from collhub_astrasim._parse import parse_output
    from collhub_astrasim._run import run_binary

    with tempfile.TemporaryDirectory(prefix="collhub-native-") as tmp:
        bundle = build_bundle(
            wl,
            out=Path(tmp) / "b",
            dims=_dims_for(network),
            system=system,
            predict=False,
            algorithm_for=algorithm_for,
            check=False,
        )
        stdout, _, _ = run_binary(BIN / BINARIES[mode], bundle.args(), bundle.path, timeout)
        report = parse_output(stdout)
        return [report.ranks[r].finish_ns for r in range(wl.rank_count)]


# -- node order --------------------------------------------------------------------------------
def shuffle(alg: Algorithm, rng: random.Random, *, ids: str = "random") -> Algorithm:
    """The same algorithm with every rank's nodes in a random file order (dependencies may then
    point forward) and, with ``ids="random"``, random distinct node ids (the feeder's hash keys)."""
    graphs = []
    for g in alg.graphs:
        n = len(g)
        perm = list(range(n))
        rng.shuffle(perm)
        new_of = np.empty(n, dtype=np.int64)
        new_of[perm] = np.arange(n)
        cols = {name: getattr(g, name)[perm] for name in _columns()}
        if ids == "random":
            span = rng.choice([n, 3 * n, 1000, 1 << 20, 1 << 40])
            cols["ids"] = np.asarray(rng.sample(range(max(span, n)), n), dtype=np.int64)
        ptr, pos = [0], []
        for p in perm:
            pos.extend(new_of[g.deps_of(p)].tolist())
            ptr.append(len(pos))
        graphs.append(
            RankGraph.from_columns(n, dep_ptr=np.asarray(ptr), dep_pos=np.asarray(pos, dtype=np.int32), **cols)
        )
    return Algorithm(alg.meta, tuple(graphs))


@lru_cache(maxsize=1)
def _columns() -> tuple[str, ...]:
    from hub.chakra._model import COLUMN_NAMES

    return tuple(COLUMN_NAMES)


# -- the random generator -----------------------------------------------------------------------
def random_algorithm(rng: random.Random, ranks: int, *, messages: int | None = None) -> Algorithm:
    """A random valid algorithm: per-rank DAGs of SENDs, RECVs and COMPs built in one global
    order (every dependency points to an earlier node of the same rank, so it cannot deadlock),
    with random sizes, fan-in/fan-out, hot spots (many concurrent messages on one link), repeated
    (tag, src, dst, size) keys (FIFO matching) and zero-dependency bursts."""
    m = messages if messages is not None else rng.randint(ranks, 6 * ranks)
    builders = [RankGraphBuilder(r) for r in range(ranks)]
    nodes: list[list[int]] = [[] for _ in range(ranks)]
    # (tiny messages are rarer: one whose link time truncates to 0 ns at t = 0 aborts ASTRA-sim)
    sizes = [rng.choice([1000, 4096, 65536, 99_999, 131072, 1 << 20, 3_000_001]) for _ in range(3)]
    hot = (rng.randrange(ranks), rng.randrange(ranks))
    p_dep = rng.choice([0.0, 0.2, 0.5, 0.8])
    used_tags = [0]

    def deps(r: int) -> list[int]:
        have = nodes[r]
        if not have or rng.random() >= p_dep:
            return []
        k = min(len(have), rng.choice([1, 1, 1, 2, 3, 5]))
        out = rng.sample(have, k)
        if rng.random() < 0.05:
            out.append(out[0])  # a parent listed twice (the feeder keeps dependency sets)
        return out

    for _ in range(m):
        if rng.random() < 0.15:  # a COMP somewhere
            r = rng.randrange(ranks)
            nodes[r].append(builders[r].comp(deps=deps(r), duration_micros=rng.choice([0, 0, 1, 2, 7])))
            continue
        if rng.random() < 0.3 and hot[0] != hot[1]:
            src, dst = hot
        else:
            src = rng.randrange(ranks)
            dst = rng.choice([x for x in range(ranks) if x != src])
        tag = rng.choice(used_tags) if rng.random() < 0.3 else rng.randrange(1 << 20)
        used_tags.append(tag)
        u = rng.random()
        size = rng.choice(sizes) if u < 0.8 else rng.choice([1, 7, 100]) if u < 0.83 else rng.randint(1, 1 << 21)
        nodes[src].append(builders[src].send(dst, src=(Buffer.INPUT, 0), tag=tag, size=size, deps=deps(src)))
        nodes[dst].append(builders[dst].recv(src, dst=(Buffer.OUTPUT, 0), tag=tag, size=size, deps=deps(dst)))
    for r in range(ranks):  # every rank needs a node
        if not nodes[r]:
            builders[r].comp(duration_micros=1)
    # (ASTRA-sim runs a custom ET under a collective key; the walker ignores what it computes)
    meta = AlgorithmMeta(Collective.ALLREDUCE, ranks, 1, 1, name="random", producer="difftest", size=None)
    return build_algorithm(meta, builders)


# -- cases -----------------------------------------------------------------------------------------
NETWORKS_1D = ("ring:{n}", "switch:{n}", "fc:{n}")
ND_SHAPES = {
    4: (("ring", 2), ("switch", 2)),
    8: (("ring", 2), ("fc", 4)),
    6: (("switch", 3), ("ring", 2)),
    12: (("ring", 2), ("switch", 3), ("fc", 2)),
    16: (("ring", 4), ("ring", 4)),
}


def network_for(kind: str, ranks: int, rng: random.Random) -> str:
    """A topology string; bandwidth and latency random (latency 0 included)."""
    bw = rng.choice([12.5, 25, 50, 100, 400])
    lat = rng.choice([0, 1, 250, 500, 500, 1999])
    if kind == "nd":  # per-dimension bandwidth and latency
        return ",".join(
            f"{k}:{n}@bw={rng.choice([25, 50, 200])},lat={rng.choice([0, 100, 500])}" for k, n in ND_SHAPES[ranks]
        )
    return kind.format(n=ranks) + f"@bw={bw},lat={lat}"


@dataclass
class Case:
    """One differential case."""

    name: str
    alg: Algorithm
    network: str
    mode: str
    family: str  # ring | switch | fc | nd

    def key(self) -> str:
        return f"{self.name} on {self.network} ({self.mode})"


def _runnable(alg: Algorithm) -> Algorithm:
    """ASTRA-sim runs a custom ET only under all-reduce/all-gather/all-to-all/reduce-scatter keys;
    its walker ignores the collective, so other collectives run under the all-reduce key."""
    from collhub_astrasim._config import custom_key

    try:
        custom_key(alg.collective, "master")
        return alg
    except Exception:  # noqa: BLE001  (the plugin refuses it: run it as an all-reduce ET)
        return alg.with_meta(collective=Collective.ALLREDUCE)


def corpus_algorithms(
    size: int = 1 << 20, ranks: tuple[int, ...] = (4, 8), *, max_ir_ranks: int | None = 16
) -> Iterator[tuple[str, Algorithm]]:
    """Every built-in algorithm for every collective it implements (also through
    ``hub.chunk``, ``hub.instances`` and with 2 channels where it has them), and every MSCCL-IR
    file of the shared corpus (up to ``max_ir_ranks`` ranks; None: all), bound to ``size`` bytes."""
    from hub.algorithms import CATALOG, make
    from hub.errors import HubError
    from hub.transforms import chunk_algorithm, instances_algorithm

    for name in sorted(CATALOG):
        for coll in sorted(CATALOG[name]):
            for n in ranks:
                variants: list[tuple[str, dict]] = [("", {})]
                if name == "ring":
                    variants.append((" channels=2", {"channels": 2}))
                for label, opts in variants:
                    try:
                        alg = make(name, coll, n, **opts)
                    except (HubError, ValueError, TypeError):
                        continue
                    base = f"{name}/{coll}/{n}{label}"
                    yield base, _runnable(alg.bind(size))
                    if not opts:
                        yield base + " chunk=2", _runnable(chunk_algorithm(alg, 2).bind(size))
                        yield base + " instances=2", _runnable(instances_algorithm(alg, 2).bind(size))
    if MSCCL_IR.is_dir():
        from collhub_mscclang import read_msccl_ir

        for path in sorted(MSCCL_IR.glob("*.xml")):
            alg = read_msccl_ir(path)
            if max_ir_ranks is not None and alg.ranks > max_ir_ranks:
                continue  # bounded run time (the benchmark runs them all)
            yield f"msccl-ir/{path.stem}", _runnable(alg.bind(size))


def corpus_cases(
    rng: random.Random, *, size: int = 1 << 20, shuffled: bool = False, max_ir_ranks: int | None = 16
) -> Iterator[Case]:
    """Each corpus algorithm on Ring, Switch and FullyConnected in both modes (file order, and
    with ``shuffled`` a shuffled copy too)."""
    for name, alg in corpus_algorithms(size, max_ir_ranks=max_ir_ranks):
        n = alg.ranks
        for kind in NETWORKS_1D:
            net = kind.format(n=n)
            for mode in ("aware", "unaware"):
                yield Case(name, alg, net, mode, kind.split(":")[0])
                if shuffled:
                    yield Case(name + " shuffled", shuffle(alg, rng), net, mode, kind.split(":")[0])
        if n in ND_SHAPES:
            yield Case(name, alg, ",".join(f"{k}:{m}" for k, m in ND_SHAPES[n]), "unaware", "nd")


def random_cases(seed: int, count: int, *, ranks_choices: tuple[int, ...] = (2, 3, 4, 5, 8, 16)) -> Iterator[Case]:
    """``count`` random cases: random algorithms (half of them with shuffled node order and ids)
    on Ring / Switch / FullyConnected in both modes and on multi-dimensional networks unaware."""
    rng = random.Random(seed)
    for i in range(count):
        kind = rng.choice(NETWORKS_1D + ("nd",))
        if kind == "nd":
            ranks = rng.choice(sorted(ND_SHAPES))
            mode = "unaware"
        else:
            ranks = rng.choice(ranks_choices)
            mode = rng.choice(("aware", "unaware"))
            if ranks == 2 and mode == "aware" and kind == "ring:{n}":
                ranks = 3  # ASTRA-sim's aware backend cannot build a 2-NPU ring (Device::connect asserts)
        alg = random_algorithm(rng, ranks, messages=rng.randint(1, 8 * ranks))
        if rng.random() < 0.6:
            alg = shuffle(alg, rng, ids=rng.choice(["random", "positions"]))
        yield Case(f"random#{seed}.{i}", alg, network_for(kind, ranks, rng), mode, kind.split(":")[0])


def run_case(case: Case) -> tuple[int | None, int | str]:
    """(ours, theirs): our time (None when we refuse the case) and ASTRA-sim's (or its error)."""
    from hub.errors import HubError
    from hub.sim import simulate as sim

    try:
        ours: int | None = sim(case.alg, case.network, mode=case.mode).time_ns  # type: ignore[attr-defined]
    except HubError:
        ours = None
    if ours is None:
        return None, "skipped"
    try:
        theirs: int | str = oracle_time(case.alg, case.network, case.mode)
    except HubError as exc:
        theirs = str(exc).splitlines()[0]
    return ours, theirs


def write_reproducer(case: Case, folder: Path) -> Path:
    """Write the case's ETs and a note (network, mode) into ``folder``."""
    from hub.chakra import write_algorithm

    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    write_algorithm(case.alg, folder / "alg")
    from collhub_astrasim._bundle import _dims_for, build_bundle

    build_bundle(
        case.alg, out=folder / "bundle", dims=_dims_for(case.network), backend=case.mode, predict=False, check=False
    )
    (folder / "case.json").write_text(
        json.dumps({"name": case.name, "network": case.network, "mode": case.mode, "ranks": case.alg.ranks}, indent=2)
        + "\n"
    )
    return folder


# -- shrinking a mismatch -------------------------------------------------------------------------
def _drop(alg: Algorithm, drop: dict[int, set[int]]) -> Algorithm:
    """``alg`` without the positions ``drop[rank]`` (dependencies on them are dropped too)."""
    graphs = []
    for r, g in enumerate(alg.graphs):
        gone = drop.get(r)
        if not gone:
            graphs.append(g)
            continue
        keep = [p for p in range(len(g)) if p not in gone]
        if not keep:  # every rank keeps a node: a 1-ns COMP
            graphs.append(RankGraph.from_columns(1, kind=np.array([NodeType.COMP]), duration=np.array([0])))
            continue
        new_of = {p: i for i, p in enumerate(keep)}
        ptr, pos = [0], []
        for p in keep:
            pos.extend(new_of[d] for d in g.deps_of(p).tolist() if d in new_of)
            ptr.append(len(pos))
        cols = {name: getattr(g, name)[keep] for name in _columns()}
        graphs.append(
            RankGraph.from_columns(len(keep), dep_ptr=np.asarray(ptr), dep_pos=np.asarray(pos, dtype=np.int32), **cols)
        )
    return Algorithm(alg.meta, tuple(graphs))


def _removals(alg: Algorithm) -> list[dict[int, set[int]]]:
    """Candidate removals, biggest first: whole messages (the k-th SEND and the k-th RECV of one
    (tag, src, dst, size) key) and single COMP nodes."""
    sends: dict[tuple[int, int, int, int], list[tuple[int, int]]] = {}
    recvs: dict[tuple[int, int, int, int], list[tuple[int, int]]] = {}
    comps: list[dict[int, set[int]]] = []
    for r, g in enumerate(alg.graphs):
        for p in range(len(g)):
            k = int(g.kind[p])
            if k == NodeType.SEND:
                sends.setdefault((int(g.tag[p]), r, int(g.peer[p]), int(g.size[p])), []).append((r, p))
            elif k == NodeType.RECV:
                recvs.setdefault((int(g.tag[p]), int(g.peer[p]), r, int(g.size[p])), []).append((r, p))
            elif k == NodeType.COMP and len(g) > 1:
                comps.append({r: {p}})
    out: list[dict[int, set[int]]] = []
    for key, ss in sends.items():
        for (rs, ps), (rr, pr) in zip(ss, recvs.get(key, []), strict=False):
            out.append({rs: {ps}} if rs == rr else {rs: {ps}, rr: {pr}})
            if rs == rr:
                out[-1][rs].add(pr)
    return out + comps


def shrink(case: Case, *, budget: int = 150) -> Case:
    """A smaller case that still mismatches (greedy removal of messages and COMPs; at most
    ``budget`` oracle runs)."""
    runs = 0
    changed = True
    while changed and runs < budget:
        changed = False
        for cand in _removals(case.alg):
            if runs >= budget:
                break
            trial = Case(case.name + " (shrunk)", _drop(case.alg, cand), case.network, case.mode, case.family)
            runs += 1
            ours, theirs = run_case(trial)
            if ours is not None and isinstance(theirs, int) and ours != theirs:
                case, changed = trial, True
                break
    return case
