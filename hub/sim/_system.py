"""Which algorithm serves each collective, read from an ASTRA-sim ``system.json``.

ASTRA-sim picks, per workload COMM_COLL node: the ``per-node-custom-implementation`` entry, else
the collective's ``*-implementation-custom`` key (one ET prefix), else the native per-dimension
list (``*-implementation``: ``ring``, ``direct``, ``halvingDoubling``, ...). hub.simulate
reproduces the custom path exactly; ASTRA-sim's native implementations (with their chunking by
``preferred-dataset-splits``, ``endpoint-delay`` and ``local-mem-bw`` costs) are not reproduced
yet, so a system.json that would run one is refused, naming the key.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..chakra import Collective, NodeType, Workload
from ..errors import FormatError, SimulationError

__all__ = ["algorithms_from_system", "load_system"]

_KEYS = {Collective.ALLREDUCE: "all-reduce", Collective.ALLGATHER: "all-gather",
         Collective.REDUCESCATTER: "reduce-scatter", Collective.ALLTOALL: "all-to-all"}
_SUFFIXES = ("-implementation-custom", "-implementation-chakra", "-implementation-chakra-experimental")


def load_system(system: str | Path | Mapping[str, Any]) -> tuple[dict[str, Any], Path]:
    """``(settings, directory the ET prefixes are relative to)``."""
    if isinstance(system, Mapping):
        return dict(system), Path.cwd()
    path = Path(system)
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise FormatError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise FormatError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
    if not isinstance(data, dict):
        raise FormatError(f"{path}: a system.json holds one JSON object")
    return data, path.parent


def algorithms_from_system(system: str | Path | Mapping[str, Any], wl: Workload | None) -> dict[Collective, str]:
    """``algorithm_for`` from a system.json: collective -> ET prefix of its custom implementation.

    Raises :class:`SimulationError` for a collective the workload uses that the system.json
    serves natively, and for ``per-node-custom-implementation``.
    """
    cfg, base = load_system(system)
    if cfg.get("per-node-custom-implementation"):
        raise SimulationError("system.json key per-node-custom-implementation is not supported by hub.simulate",
                              hint="use one *-implementation-custom key per collective")
    used = {n.collective for nodes in (wl.ranks if wl else []) for n in nodes if n.type == NodeType.COLL}
    chosen: dict[Collective, str] = {}
    for coll, stem in _KEYS.items():
        custom = next((cfg[stem + s] for s in _SUFFIXES if stem + s in cfg), None)
        if custom is not None:
            if not isinstance(custom, list) or len(custom) != 1 or not isinstance(custom[0], str):
                raise SimulationError(f"system.json key {stem}-implementation-custom must be a list of one ET prefix, "
                                      f"got {custom!r}")
            prefix = Path(custom[0])
            chosen[coll] = str(prefix if prefix.is_absolute() else base / prefix)
        elif coll in used and cfg.get(f"{stem}-implementation"):
            raise SimulationError(
                f"system.json key {stem}-implementation asks for ASTRA-sim's native "
                f"{cfg[f'{stem}-implementation']!r}, which hub.simulate does not reproduce yet",
                hint=f'use the custom path: "{stem}-implementation-custom": ["<ET prefix>"] (e.g. written by '
                     f"collhub produce hub.ring), or algorithm_for={{'{coll.value}': 'ring'}}")
    return chosen
