"""Hook specifications of the ``collhub`` pluggy project (entry-point group ``collhub``).

Hooks are always *called* with keyword arguments and are additive: arguments may be added in
later minor API versions, never removed, and an implementation may accept any subset of a spec's
arguments. (The specs are written without a bare ``*``: pluggy reads a spec's argument names from
its positional parameters, so keyword-only specs would reject every implementation.)
Registration hooks take no arguments and return an iterable of frozen descriptors from
:mod:`hub.plugins` (``ProducerSpec``, ``TransformSpec``, ``ConsumerSpec``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from ._spec import ConsumerSpec, ProducerSpec, TransformSpec

PROJECT = "collhub"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def collhub_producers() -> Iterable[ProducerSpec]:
    """Return the producers this plugin provides.

    Example::

        @hookimpl
        def collhub_producers():
            return [ProducerSpec(name="ir", summary="Import MSCCL-IR XML",
                                 factory="collhub_mscclang._ir:produce",
                                 params="collhub_mscclang._ir:IRParams")]
    """


@hookspec
def collhub_transforms() -> Iterable[TransformSpec]:
    """Return the transforms (Algorithm -> Algorithm) this plugin provides.

    Example::

        @hookimpl
        def collhub_transforms():
            return [TransformSpec(name="chunk", summary="Split messages",
                                  factory="mypkg:chunk", params="mypkg:ChunkParams")]
    """


@hookspec
def collhub_consumers() -> Iterable[ConsumerSpec]:
    """Return the consumers (Algorithm/Workload -> Result) this plugin provides.

    Example::

        @hookimpl
        def collhub_consumers():
            return [ConsumerSpec(name="run", summary="Run on ASTRA-sim",
                                 factory="collhub_astrasim._run:consume",
                                 params="collhub_astrasim._run:RunParams")]
    """


@hookspec
def collhub_commands() -> Iterable[tuple[str, Any]]:
    """Return ``(name, typer.Typer)`` pairs mounted as ``collhub <name> ...``.

    Example::

        @hookimpl
        def collhub_commands():
            app = typer.Typer(help="My tools")
            return [("mytool", app)]
    """


@hookspec
def collhub_before_pipeline_run(pipeline: Any, run_dir: Any) -> None:
    """Called before a pipeline run starts. Example: start a timer or a tracker."""


@hookspec
def collhub_after_pipeline_run(pipeline: Any, run_dir: Any, results: Any) -> None:
    """Called after a pipeline run finished successfully with its result rows."""


@hookspec
def collhub_on_pipeline_error(pipeline: Any, run_dir: Any, error: BaseException) -> None:
    """Called when a pipeline run fails."""


@hookspec
def collhub_before_step(step: Any) -> None:
    """Called before a step (produce / transform / consume of one sweep point) runs."""


@hookspec
def collhub_after_step(step: Any, output: Any) -> None:
    """Called after a step finished, with its output."""


@hookspec
def collhub_on_step_error(step: Any, error: BaseException) -> None:
    """Called when a step fails."""
