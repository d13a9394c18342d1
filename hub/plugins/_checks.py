"""What the manager checks around a component call: capabilities before, the output after.

A producer's algorithm must be what was asked: its rank count equal to ``params.ranks`` and its
collective equal to ``params.collective`` when the params have them. Anything else is a bug of
the plugin, reported as a :class:`~hub.errors.PluginError` naming it (exit 4), never exit 0.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import PluginError, UsageError

if TYPE_CHECKING:  # annotations only
    from pydantic import BaseModel

    from ._spec import ComponentSpec

__all__: list[str] = []  # private helpers of hub.plugins._manager


def _check_capabilities(spec: ComponentSpec, id: str, model: BaseModel) -> None:  # noqa: A002
    collective = getattr(model, "collective", None)
    if collective is not None and spec.collectives:
        name = str(getattr(collective, "value", collective))
        if name not in spec.collectives:
            raise UsageError(
                f"{id} does not implement {name}",
                hint=f"{id} supports: {', '.join(sorted(spec.collectives))}",
            )
    ranks = getattr(model, "ranks", None)
    if isinstance(ranks, int) and not isinstance(ranks, bool):
        if ranks < spec.min_ranks or (spec.max_ranks is not None and ranks > spec.max_ranks):
            upper = "" if spec.max_ranks is None else f" and at most {spec.max_ranks}"
            raise UsageError(f"{id} needs at least {spec.min_ranks}{upper} ranks, got {ranks}")


def _check_output(id: str, out: Any, expected: str, who: str | None = None) -> Any:  # noqa: A002
    from ..chakra import Algorithm, Workload

    ok: tuple[type, ...]
    if expected == "result":
        from .._result import Result

        ok = (Result,)
    elif expected == "workload":
        ok = (Workload,)
    else:
        ok = (Algorithm,)
    if not isinstance(out, ok):
        raise PluginError(
            f"{who or f'component {id!r}'} returned {type(out).__name__}, expected {ok[0].__name__}",
            hint="this is a bug in the plugin providing the component",
        )
    return out


def _check_asked(id: str, out: Any, model: Any, who: str) -> None:  # noqa: A002
    """A producer's algorithm must have the rank count and collective its params asked for."""
    from ..chakra import Algorithm, Collective

    if not isinstance(out, Algorithm):
        return
    ranks = getattr(model, "ranks", None)
    if isinstance(ranks, int) and not isinstance(ranks, bool) and out.ranks != ranks:
        raise PluginError(
            f"{who} returned an algorithm of {out.ranks} ranks, but ranks={ranks} was asked",
            hint="this is a bug in the plugin providing the component",
        )
    asked = getattr(model, "collective", None)
    if asked is None:
        return
    try:
        want = Collective.parse(str(getattr(asked, "value", asked)))
    except Exception:  # noqa: BLE001 - a plugin-specific collective name: nothing to compare
        return
    if out.collective != want:
        raise PluginError(
            f"{who} returned a {out.collective.value} algorithm, but collective={want.value} was asked",
            hint="this is a bug in the plugin providing the component",
        )
