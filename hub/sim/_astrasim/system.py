"""Which algorithm serves each collective, read from an ASTRA-sim ``system.json``.

ASTRA-sim picks, per workload COMM_COLL node: the ``per-node-custom-implementation`` entry, else
the collective's ``*-implementation-custom`` key (one ET prefix), else the native per-dimension
list (``*-implementation``: ``ring``, ``direct``, ``halvingDoubling``, ...). hub.simulate
reproduces the custom path exactly, and of the native implementations those ``hub.sim._astrasim.collectives``
lists (ring for every collective, direct, halvingDoubling, doubleBinaryTree; on 1-D and
multi-dimensional networks, ``hub.sim._astrasim.streams``: chunks, phases, per-dimension queues,
``endpoint-delay`` and ``local-mem-bw`` costs); a system.json that would run any other native
implementation is refused, naming the key.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...chakra import Collective, NodeType, Workload
from ...errors import FormatError, SimulationError

__all__ = ["algorithms_from_system", "has_custom", "load_system", "serve_from_system"]

_KEYS = {
    Collective.ALLREDUCE: "all-reduce",
    Collective.ALLGATHER: "all-gather",
    Collective.REDUCESCATTER: "reduce-scatter",
    Collective.ALLTOALL: "all-to-all",
}
_SUFFIXES = ("-implementation-custom", "-implementation-chakra", "-implementation-chakra-experimental")


def load_system(system: str | Path | Mapping[str, Any]) -> tuple[dict[str, Any], Path]:
    """``(settings, directory the ET prefixes are relative to)``."""
    if isinstance(system, Mapping):
        return dict(system), Path.cwd()
    from ...inputs import read_input

    path = Path(system)
    try:  # a fifo or a silent pipe cannot block (hub.inputs); a system.json is a few hundred bytes
        data = json.loads(read_input(path, 16 << 20))
    except UnicodeDecodeError as exc:
        raise FormatError(f"{path}: cannot read: not UTF-8 ({exc.reason})") from None
    except json.JSONDecodeError as exc:
        raise FormatError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
    if not isinstance(data, dict):
        raise FormatError(f"{path}: a system.json holds one JSON object")
    return data, path.parent


def has_custom(cfg: Mapping[str, Any], stem: str) -> bool:
    """Whether ``cfg`` names a custom implementation for the collective ``stem`` (``all-reduce``...)."""
    return any(stem + s in cfg for s in _SUFFIXES)


def serve_from_system(
    system: str | Path | Mapping[str, Any],
    wl: Workload,
    dims: int | None,
    explicit: frozenset[Collective] = frozenset(),
    *,
    dim_sizes: tuple[int, ...] | None = None,
) -> tuple[dict[Collective, str], dict[Collective, Any]]:
    """``(custom, native)``: collective -> ET prefix of its custom implementation, and collective
    -> the native implementation hub.simulate reproduces (``hub.sim._astrasim.collectives``); any other native
    implementation the workload would use is refused. Collectives in ``explicit`` are served by
    the caller's ``algorithm_for``; ``dim_sizes``: the network's NPUs per dimension."""
    from .collectives import native_collectives

    cfg, _base = load_system(system)
    native = native_collectives(cfg, wl, dims, explicit, dim_sizes=dim_sizes)
    return algorithms_from_system(system, wl, native=set(native) | set(explicit)), dict(native)


def algorithms_from_system(
    system: str | Path | Mapping[str, Any], wl: Workload | None, native: set[Collective] | None = None
) -> dict[Collective, str]:
    """``algorithm_for`` from a system.json: collective -> ET prefix of its custom implementation.

    Raises :class:`SimulationError` for a collective the workload uses that the system.json
    serves natively (except those in ``native``), and for ``per-node-custom-implementation``.
    """
    cfg, base = load_system(system)
    if cfg.get("per-node-custom-implementation"):
        raise SimulationError(
            "system.json key per-node-custom-implementation is not supported by hub.simulate",
            hint="use one *-implementation-custom key per collective",
        )
    used = {n.collective for nodes in (wl.ranks if wl else []) for n in nodes if n.type == NodeType.COLL}
    chosen: dict[Collective, str] = {}
    for coll, stem in _KEYS.items():
        custom = next((cfg[stem + s] for s in _SUFFIXES if stem + s in cfg), None)
        if custom is not None:
            if not isinstance(custom, list) or len(custom) != 1 or not isinstance(custom[0], str):
                raise SimulationError(
                    f"system.json key {stem}-implementation-custom must be a list of one ET prefix, got {custom!r}"
                )
            prefix = Path(custom[0])
            chosen[coll] = str(prefix if prefix.is_absolute() else base / prefix)
        elif coll in used and cfg.get(f"{stem}-implementation") and coll not in (native or set()):
            raise SimulationError(
                f"system.json key {stem}-implementation asks for ASTRA-sim's native "
                f"{cfg[f'{stem}-implementation']!r}, which hub.simulate does not reproduce yet",
                hint=f'use the custom path: "{stem}-implementation-custom": ["<ET prefix>"] (e.g. written by '
                f"collhub produce hub.ring), or algorithm_for={{'{coll.value}': 'ring'}}",
            )
    return chosen
