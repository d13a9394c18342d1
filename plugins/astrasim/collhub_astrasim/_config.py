"""ASTRA-sim configuration facts: custom-collective keys per version, system/memory/network files.

Sources: ``astra-sim.md`` §1-§4 and §11 (key names and their history, pitfalls such as
``endpoint-delay: 0`` aborting and a missing ``preferred-dataset-splits`` dividing by zero).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from hub.chakra import Collective
from hub.errors import UsageError

__all__ = [
    "ASTRA_COLL_NAME",
    "DEFAULT_SYSTEM",
    "Dim",
    "TARGETS",
    "Target",
    "command_args",
    "custom_key",
    "memory_json",
    "network_yml",
    "system_json",
]

Target = Literal["master", "2024-09", "2024-04"]

#: Suffix of the custom-collective key per ASTRA-sim version.
TARGETS: dict[str, str] = {
    "master": "-implementation-custom",  # class CustomAlgorithm, Jun 2025 onward
    "2024-09": "-implementation-chakra",
    "2024-04": "-implementation-chakra-experimental",  # class ChakraImpl, PR #198
}

#: The collective's name in ASTRA-sim's system.json keys.
_KEY_STEM: dict[Collective, str] = {
    Collective.ALLREDUCE: "all-reduce",
    Collective.ALLGATHER: "all-gather",
    Collective.ALLTOALL: "all-to-all",
    Collective.REDUCESCATTER: "reduce-scatter",
}

#: ASTRA-sim's spelling in file and node names (its bundled microbenchmarks use these).
ASTRA_COLL_NAME: dict[Collective, str] = {
    Collective.ALLREDUCE: "all_reduce",
    Collective.ALLGATHER: "all_gather",
    Collective.ALLTOALL: "all_to_all",
    Collective.REDUCESCATTER: "reduce_scatter",
}

_UNSUPPORTED_HINT = (
    "ASTRA-sim's system layer runs only all-reduce, all-gather, reduce-scatter and all-to-all "
    "(custom or native); REDUCE/GATHER/SCATTER throw and BROADCAST is only replayed as a fixed "
    "duration_micros"
)


def custom_key(collective: Collective, target: str) -> str:
    """The ``system.json`` key that names a custom ET prefix for ``collective`` on ``target``."""
    if target not in TARGETS:
        raise UsageError(f"unknown ASTRA-sim target {target!r}", hint="one of: " + ", ".join(TARGETS))
    stem = _KEY_STEM.get(collective)
    if stem is None:
        raise UsageError(
            f"ASTRA-sim cannot run a {collective.value} as a custom collective",
            hint=_UNSUPPORTED_HINT,
        )
    if collective is Collective.REDUCESCATTER and target != "master":
        raise UsageError(
            f"reduce-scatter custom collectives need ASTRA-sim master (late 2025); target {target!r} has no such key",
            hint="use target=master, or express the algorithm as an all-reduce/all-gather",
        )
    return stem + TARGETS[target]


def native_key(collective: Collective) -> str:
    """The native per-dimension implementation key, e.g. ``all-reduce-implementation``."""
    stem = _KEY_STEM.get(collective)
    if stem is None:
        raise UsageError(f"ASTRA-sim has no native {collective.value}", hint=_UNSUPPORTED_HINT)
    return stem + "-implementation"


#: Settings every bundle carries. ``preferred-dataset-splits`` must be >= 1 even when only custom
#: collectives run (the code divides by it); ``endpoint-delay`` 0 aborts the event queue.
DEFAULT_SYSTEM: dict[str, Any] = {
    "scheduling-policy": "FIFO",
    "endpoint-delay": 10,
    "active-chunks-per-dimension": 1,
    "preferred-dataset-splits": 1,
    "local-mem-bw": 50,
}


def system_json(custom: dict[str, str], native: dict[str, list[str]], overrides: dict[str, Any]) -> dict[str, Any]:
    """The ``system.json`` content: defaults, then the implementation keys, then ``overrides``."""
    system: dict[str, Any] = dict(DEFAULT_SYSTEM)
    for key, impls in native.items():
        system[key] = list(impls)
    for key, prefix in custom.items():
        system[key] = [prefix]  # exactly one prefix; it covers every network dimension
    for key, value in overrides.items():
        system[key] = value
    splits = system.get("preferred-dataset-splits")
    if not isinstance(splits, int) or isinstance(splits, bool) or splits < 1:
        raise UsageError(
            f"system setting preferred-dataset-splits must be an integer >= 1, got {splits!r}",
            hint="ASTRA-sim divides by it even for custom collectives",
        )
    delay = system.get("endpoint-delay")
    if not isinstance(delay, (int, float)) or isinstance(delay, bool) or delay < 1:
        raise UsageError(
            f"system setting endpoint-delay must be >= 1, got {delay!r}",
            hint="endpoint-delay 0 aborts ASTRA-sim (event_time > current_time assertion)",
        )
    for key, value in system.items():
        if key.endswith(tuple(TARGETS.values())) and (not isinstance(value, list) or len(value) != 1):
            raise UsageError(
                f"system setting {key} must be a list with exactly one ET prefix, got {value!r}",
                hint="one custom ET covers all network dimensions",
            )
    return system


def memory_json() -> dict[str, Any]:
    """Remote memory: none (only MEM_LOAD/MEM_STORE nodes would use it)."""
    return {"memory-type": "NO_MEMORY_EXPANSION"}


def dumps_json(obj: dict[str, Any]) -> str:
    return json.dumps(obj, indent=2) + "\n"


@dataclass(frozen=True)
class Dim:
    """One network dimension as ASTRA-sim's analytical backends take it.

    ``bandwidth`` is in ASTRA-sim's "GB/s", which means GiB/s (2^30 B/s); ``latency`` in ns per hop.
    """

    kind: str  # Ring | FullyConnected | Switch
    npus: int
    bandwidth: float
    latency: float


_KINDS = ("Ring", "FullyConnected", "Switch")


def _num(value: float) -> str:
    text = repr(float(value))
    return text if "e" not in text else f"{value:.17g}"


def network_yml(dims: Sequence[Dim]) -> str:
    """``network.yml`` text: four YAML lists of equal length (a bare scalar fails in ASTRA-sim)."""
    if not dims:
        raise UsageError(
            "the network has no dimension", hint="ASTRA-sim needs at least one Ring/FullyConnected/Switch dim"
        )
    for i, d in enumerate(dims):
        if d.kind not in _KINDS:
            raise UsageError(f"network dimension {i}: {d.kind!r} is not one of {', '.join(_KINDS)}")
        if d.npus < 2:
            raise UsageError(f"network dimension {i}: npus_count must be > 1, got {d.npus}")
        if not d.bandwidth > 0:
            raise UsageError(f"network dimension {i}: bandwidth must be > 0 GB/s, got {d.bandwidth}")
        if d.latency < 0:
            raise UsageError(f"network dimension {i}: latency must be >= 0 ns, got {d.latency}")
    return (
        f"topology: [ {', '.join(d.kind for d in dims)} ]\n"
        f"npus_count: [ {', '.join(str(d.npus) for d in dims)} ]\n"
        f"bandwidth: [ {', '.join(_num(d.bandwidth) for d in dims)} ]  # GB/s (ASTRA-sim: GiB/s, 2^30 B/s)\n"
        f"latency: [ {', '.join(_num(d.latency) for d in dims)} ]  # ns per hop\n"
    )


def command_args(workload_prefix: str, logging_folder: str = "log", comm_groups: str | None = None) -> list[str]:
    """The ASTRA-sim arguments for a bundle, with paths relative to the bundle directory
    (``comm_groups``: the process-group file, if the workload has groups).

    Spelled exactly: ASTRA-sim silently ignores unknown options, so a typo would go unnoticed.
    """
    groups = [f"--comm-group-configuration={comm_groups}"] if comm_groups else []
    return [
        f"--workload-configuration={workload_prefix}",
        "--system-configuration=system.json",
        "--network-configuration=network.yml",
        "--remote-memory-configuration=memory.json",
        *groups,
        f"--logging-folder={logging_folder}",
    ]
