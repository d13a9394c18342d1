"""``collhub astra-sim`` / ``collhub-astra-sim``: a drop-in for ASTRA-sim's analytical binaries
(``AstraSim_Analytical_Congestion_{Aware,Unaware}``), on hub.simulate's engine.

It takes the binaries' flags (cxxopts: ``--name=value`` or ``--name value``; unknown flags are
ignored, as upstream's ``allow_unrecognised_options``) plus ``--backend aware|unaware``, reads the
same files the same way (paths relative to the working directory, also those inside
``system.json``) and prints what the binaries print, in their order (see docs/simulator.md,
"Replacing ASTRA-sim's analytical binaries"):

1. at start-up, for NPU 0, one ``RingTopology`` line per dimension of each native list
   (``Sys::Sys`` builds a ``GeneralComplexTopology`` for AllReduce, ReduceScatter, AllGather,
   AllToAll in this order; ``RingTopology`` logs for node 0 only);
2. in event order (the engine's completion sequence): a ``custom ring`` line the first time an
   NPU runs a collective type in a process group smaller than the network
   (``CommunicatorGroup::get_collective_plan``), and each rank's ``finished`` line with its
   statistics when its last workload node completes (``Workload::call`` → ``report``);
3. for every rank left with operators in flight, in rank order, the ``HardwareResource``
   destructor's lines, then ``Exiting`` (``Sys::~Sys`` of the last system).

Where the binaries abort (``hub.sim._astrasim.refusals``), a non-zero exit and one line with the reason;
the start-up lines they print before aborting are printed too. The module imports neither typer
nor pydantic (its console script starts in a fraction of ``collhub``'s time).
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import ExitCode, FormatError, HubError, UsageError

__all__ = ["FLAGS", "AstraSimOutcome", "Invocation", "Outcome", "main", "parse_args", "run", "run_astra_sim"]

#: the analytical binaries' flags and defaults (``CmdLineParser::define_options``)
FLAGS: dict[str, str | None] = {
    "workload-configuration": None,
    "comm-group-configuration": "empty",
    "system-configuration": None,
    "remote-memory-configuration": None,
    "network-configuration": None,
    "logging-configuration": "empty",
    "logging-folder": "log",
    "num-queues-per-dim": "1",
    "compute-scale": "1",
    "comm-scale": "1",
    "injection-scale": "1",
    "rendezvous-protocol": "false",
}
_REQUIRED = ("workload-configuration", "system-configuration", "network-configuration", "remote-memory-configuration")
_SCALES = ("compute-scale", "comm-scale", "injection-scale")
BACKENDS = ("aware", "unaware")

_COLL_KEYS = (  # Sys::Sys: the logical topologies, in construction order
    ("all-reduce", "AllReduce"),
    ("reduce-scatter", "ReduceScatter"),
    ("all-gather", "AllGather"),
    ("all-to-all", "AllToAll"),
)


@dataclass
class Invocation:
    """One command line: the flags' values (defaults filled in) and the backend."""

    values: dict[str, str]
    backend: str | None = None
    ignored: list[str] = field(default_factory=list)


@dataclass
class Outcome:
    """What the run prints: ``lines`` on stdout (without timestamps), ``error`` (one line, stderr)
    and the exit status."""

    lines: list[str]
    exit_code: int = 0
    error: str | None = None

    @property
    def stdout(self) -> str:
        return "".join(line + "\n" for line in self.lines)


def parse_args(argv: Sequence[str]) -> Invocation:
    """cxxopts' reading of ``argv``: ``--name=value`` or ``--name value``; unknown names ignored."""
    values = {k: v for k, v in FLAGS.items() if v is not None}
    inv = Invocation(values)
    i = 0
    args = list(argv)
    while i < len(args):
        a = args[i]
        i += 1
        if not a.startswith("--"):
            inv.ignored.append(a)
            continue
        name, eq, value = a[2:].partition("=")
        if name not in FLAGS and name != "backend":
            inv.ignored.append(a)
            continue
        if not eq:
            if i >= len(args):
                raise UsageError(f"option --{name} needs a value", hint=f"--{name}=VALUE")
            value = args[i]
            i += 1
        if name == "backend":
            inv.backend = value
        else:
            values[name] = value
    return inv


#: public names (``hub.sim``): the run and its outcome
AstraSimOutcome = Outcome


# -- inputs ---------------------------------------------------------------------------------------
def _path(cwd: Path, value: str) -> Path:
    p = Path(value)
    return p if p.is_absolute() else cwd / p


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text())
    except OSError as exc:
        raise FormatError(f"{path}: cannot read the {what}: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise FormatError(f"{path}: the {what} is not valid JSON: {exc}") from None


def _system(cwd: Path, path: Path) -> dict[str, Any]:
    """system.json with its custom ET prefixes made absolute against the working directory
    (ASTRA-sim opens them relative to the cwd, not to the file)."""
    cfg = _read_json(path, "system configuration")
    if not isinstance(cfg, dict):
        raise FormatError(f"{path}: a system configuration is one JSON object")
    for key, value in list(cfg.items()):
        if "-implementation-" in key and isinstance(value, list):
            cfg[key] = [str(_path(cwd, v)) if isinstance(v, str) else v for v in value]
    return cfg


def _groups(path: Path) -> dict[str, list[int]]:
    data = _read_json(path, "communicator group configuration")
    if not isinstance(data, dict) or not all(
        isinstance(v, list) and all(isinstance(x, int) for x in v) for v in data.values()
    ):
        raise FormatError(f"{path}: a communicator group configuration maps group ids to lists of NPU ids")
    return {str(k): list(v) for k, v in data.items()}


def _ring_lines(cfg: dict[str, Any], dims: Sequence[int]) -> list[str]:
    """NPU 0's start-up lines (``GeneralComplexTopology``: ring, direct and halving-doubling
    dimensions get a ``RingTopology``; a ``one*`` implementation one ring over every NPU)."""
    out: list[str] = []
    total = math.prod(dims)
    for stem, _ in _COLL_KEYS:
        impls = cfg.get(f"{stem}-implementation")
        if not isinstance(impls, list):
            continue
        offset = 1
        for d, impl in enumerate(impls[: len(dims)]):
            name = str(impl)
            if name.startswith("one"):
                out.append(_ring(total, 1))
                break
            if name.startswith(("ring", "direct", "halvingDoubling")):
                out.append(_ring(dims[d], offset))
            offset *= dims[d]
    return out


def _ring(n: int, offset: int) -> str:
    return (
        "[system::topology::RingTopology] [info] ring of node 0, id: 0 dimension: local total nodes in ring: "
        f"{n} index in ring: 0 offset: {offset} total nodes in ring: {n}"
    )


# -- the run ----------------------------------------------------------------------------------------
def run(argv: Sequence[str], *, backend: str | None = None, cwd: str | Path | None = None) -> Outcome:
    """Run one command line like the binary would from ``cwd`` (default: the process's); the
    library entry of ``collhub astra-sim``. Bad input raises :class:`hub.errors.HubError`;
    ASTRA-sim's own aborts come back as an :class:`Outcome` with a non-zero exit."""
    inv = parse_args(argv)
    mode = inv.backend or backend
    if mode not in BACKENDS:
        raise UsageError(
            f"--backend must be aware or unaware, not {mode!r}"
            if mode
            else "which ASTRA-sim backend? --backend is missing",
            hint="--backend aware (AstraSim_Analytical_Congestion_Aware) or --backend unaware (..._Unaware)",
        )
    base = Path(cwd) if cwd is not None else Path.cwd()
    v = inv.values
    missing = [k for k in _REQUIRED if k not in v]
    if missing:
        raise UsageError(
            f"missing --{missing[0]}", hint="the analytical binaries need " + ", ".join(f"--{k}" for k in _REQUIRED)
        )
    for k in (*_SCALES, "num-queues-per-dim"):
        try:
            value = float(v[k])
        except ValueError:
            raise UsageError(f"--{k}={v[k]} is not a number") from None
        if value != 1.0:
            raise UsageError(f"--{k}={v[k]} is not reproduced (only 1)", hint=f"drop --{k}")
    if v["rendezvous-protocol"].lower() not in ("false", "0"):
        raise UsageError("--rendezvous-protocol is not reproduced", hint="drop --rendezvous-protocol")

    from ...topology import DimensionalTopology, load_topology

    topo = load_topology(_path(base, v["network-configuration"]))
    if not isinstance(topo, DimensionalTopology):
        raise FormatError(f"{v['network-configuration']}: not an analytical network.yml")
    cfg = _system(base, _path(base, v["system-configuration"]))
    _read_json(_path(base, v["remote-memory-configuration"]), "remote memory configuration")
    groups = None if v["comm-group-configuration"] == "empty" else _groups(_path(base, v["comm-group-configuration"]))
    sizes = tuple(d.npus for d in topo.dims)
    lines = _ring_lines(cfg, sizes)
    _logging_folder(_path(base, v["logging-folder"]))

    from . import refusals as _refusals

    if mode == "aware":
        why = _refusals.aware_network((d.kind, d.npus) for d in topo.dims)
        if why:
            return Outcome([], ExitCode.RUN_FAILED, why)
    wl = _workload(_path(base, v["workload-configuration"]), topo.npus)
    why = _refusals.workload_node_types(wl)
    if why:
        return Outcome(lines, ExitCode.RUN_FAILED, why)

    from .dropin_run import report_lines, run_workload

    sim = run_workload(wl, topo, mode, cfg, groups)
    why = _refusals.zero_time_events(sim.state.t0_events)
    if why:
        return Outcome(lines, ExitCode.RUN_FAILED, why)
    return Outcome(lines + report_lines(wl, sim, groups), 0)


run_astra_sim = run


def _workload(prefix: Path, npus: int) -> Any:
    """The workload's ``<prefix>.<i>.et`` for every NPU (ASTRA-sim opens exactly one per NPU)."""
    import warnings

    from ...chakra import read_workload

    missing = [i for i in range(npus) if not Path(f"{prefix}.{i}.et").is_file()]
    if missing:
        raise FormatError(
            f"{prefix}.{missing[0]}.et: no workload file for NPU {missing[0]}",
            hint=f"the network has {npus} NPUs: one <prefix>.<npu>.et each",
        )
    with warnings.catch_warnings():  # dangling dependencies: treated as satisfied, as the feeder does
        warnings.simplefilter("ignore")
        wl = read_workload(prefix)
    if wl.rank_count != npus:
        wl.ranks = wl.ranks[:npus]
    return wl


def _logging_folder(path: Path) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--logging-folder {path}: cannot create it: {exc.strerror or exc}") from None


# -- the console script -------------------------------------------------------------------------------
def _stamp() -> str:
    t = time.time()
    return time.strftime("[%Y-%m-%d %H:%M:%S", time.localtime(t)) + f".{int(t * 1000) % 1000:03d}] "


def main(argv: Sequence[str] | None = None) -> int:
    """``collhub-astra-sim``: print the run's lines (timestamped like spdlog), write them to
    ``<logging-folder>/log.log``, and exit with the run's status; errors are one line on stderr."""
    args = list(sys.argv[1:] if argv is None else argv)
    if any(a in ("-h", "--help") for a in args):
        sys.stdout.write(_USAGE)
        return 0
    prog = os.path.basename(sys.argv[0]) if sys.argv else ""
    guess = "aware" if "Congestion_Aware" in prog else "unaware" if "Congestion_Unaware" in prog else None
    try:
        out = run(args, backend=guess)
    except HubError as exc:
        hint = f" (hint: {exc.hint})" if exc.hint else ""
        sys.stderr.write(f"error: {exc.message}{hint}\n")
        return int(exc.exit_code)
    except KeyboardInterrupt:
        sys.stderr.write("error: interrupted\n")
        return ExitCode.INTERRUPTED
    stamp = _stamp()
    text = "".join(stamp + line + "\n" for line in out.lines)
    sys.stdout.write(text)
    sys.stdout.flush()
    try:
        log = Path(parse_args(args).values["logging-folder"]) / "log.log"
        log.write_text(text)
    except OSError:
        pass  # (ASTRA-sim's log file is a convenience; stdout is the answer)
    if out.error:
        sys.stderr.write(f"error: {out.error}\n")
    return out.exit_code


_USAGE = """usage: collhub-astra-sim --backend aware|unaware --workload-configuration=PREFIX
       --system-configuration=system.json --network-configuration=network.yml
       --remote-memory-configuration=memory.json [--comm-group-configuration=groups.json]
       [--logging-folder=log]

A drop-in for AstraSim_Analytical_Congestion_{Aware,Unaware}: the same flags and files, the same
lines on stdout (docs/simulator.md, "Replacing ASTRA-sim's analytical binaries"). Unknown flags are
ignored, as the binaries do. Exit 1 with one line where ASTRA-sim aborts; 2 bad usage; 3 bad files.

Example: collhub astra-sim --backend aware --workload-configuration=workload/all_reduce
  --system-configuration=system.json --network-configuration=network.yml
  --remote-memory-configuration=memory.json
"""

if __name__ == "__main__":  # pragma: no cover - python -m hub.sim._astrasim.dropin
    raise SystemExit(main())
