"""Which algorithm serves each collective of a workload (``algorithm_for``), bound to its size.

A choice names an algorithm in exactly one of three documented forms:

* an ET prefix on disk (a path with a separator, or ``<name>.0.et`` exists): read as is;
* a built-in name of :data:`hub.algorithms.CATALOG` (``ring``, ``halving-doubling``, ...);
* a registered producer id (``hub.ring``, ``<plugin>.<component>``), run through ``produce``:
  the plugin manager's :meth:`~hub.plugins.PluginManager.produce_algorithm`, passed in by whoever
  holds it (the manager fills :attr:`hub.plugins.RunContext.produce_algorithm`), so nothing in
  this layer imports ``hub.plugins``.

Anything else is refused: the name is never looked up as an attribute of a module, so a
workload's choice cannot reach a function the hub does not register as an algorithm. The default
is ``ring``; a BROADCAST without a choice is left to its recorded duration (ASTRA-sim replays it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..chakra import Algorithm, Collective, check_algorithm
from ..errors import HubError, SimulationError, UsageError

__all__ = ["Pick", "Produce", "algorithm_chooser"]

#: (collective, comm_size in bytes, group size) -> the bound algorithm, or None (replayed as its duration)
Pick = Callable[[Collective, int, int], Algorithm | None]
#: (producer id, collective, ranks) -> the producer's algorithm (the plugin manager's lookup)
Produce = Callable[[str, Collective, int], Algorithm]


def _make_algorithm(name: str, coll: Collective, ranks: int, produce: Produce | None) -> Algorithm:
    """The algorithm ``name`` names for ``coll`` on ``ranks`` ranks (one of the three forms)."""
    if "/" in name or "\\" in name or Path(f"{name}.0.et").is_file():
        from ..chakra import read_algorithm

        return read_algorithm(name)
    try:
        if "." not in name:
            from ..algorithms import make

            return make(name, collective=coll, ranks=ranks)  # AlgorithmError (did you mean) if not built in
        if produce is None:
            raise UsageError(
                f"algorithm_for: {name!r} is a producer id, and no plugin manager was given to run it",
                hint="pass produce_algorithm=hub.plugins.get_manager().produce_algorithm, "
                "or name a built-in (ring, direct, ...) or an ET prefix",
            )
        return produce(name, coll, ranks)
    except HubError:
        raise
    except Exception as exc:
        raise SimulationError(f"algorithm {name!r} for {coll.value} on {ranks} ranks failed: {exc}") from None


def algorithm_chooser(
    algorithm_for: Mapping[Any, Any] | None,
    *,
    produce: Produce | None = None,
    check: Callable[[Algorithm], object] | None = None,
) -> Pick:
    """A :data:`Pick` for ``algorithm_for`` (collective -> name or :class:`~hub.chakra.Algorithm`),
    each choice made once per (collective, size, group size). An unbound algorithm is bound to the
    collective's size in nccl-tests' sense (ASTRA-sim's all-gather ``comm_size`` is the per-rank
    part, nccl-tests' S the output). ``check``: a further test of each chosen algorithm (the
    simulator passes its program builder, which refuses what its engine cannot run)."""
    chosen: dict[Collective, Any] = {}
    for k, v in (algorithm_for or {}).items():
        chosen[Collective.parse(k)] = v
    cache: dict[tuple[Collective, int, int], Algorithm | None] = {}

    def pick(coll: Collective, comm_size: int, ranks: int) -> Algorithm | None:
        key = (coll, comm_size, ranks)
        if key in cache:
            return cache[key]
        spec = chosen.get(coll)
        if spec is None and coll == Collective.BROADCAST:
            cache[key] = None  # ASTRA-sim replays BROADCAST as its duration_micros
            return None
        alg = spec if isinstance(spec, Algorithm) else _make_algorithm(spec or "ring", coll, ranks, produce)
        if not alg.is_bound:
            total = comm_size * ranks if coll in (Collective.ALLGATHER, Collective.GATHER) else comm_size
            alg = alg.bind(total)
        # the workload's comm_size is a claim too: byte counts that overflow int64 are refused
        check_algorithm(alg, what=f"{coll.value} of {comm_size} bytes ({alg.name or 'algorithm'})")
        if check is not None:
            check(alg)
        cache[key] = alg
        return alg

    return pick
