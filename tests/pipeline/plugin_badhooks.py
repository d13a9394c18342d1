"""A third-party observer plugin whose hooks raise (plugin name ``bad``), for the isolation tests."""

from __future__ import annotations

from typing import Any

from hub.plugins import hookimpl

COLLHUB_PLUGIN_API = "1.0"


@hookimpl
def collhub_before_pipeline_run(pipeline: Any, run_dir: Any) -> None:
    raise RuntimeError("before-run boom")


@hookimpl
def collhub_after_step(step: Any, output: Any) -> None:
    raise ValueError("after-step boom")


@hookimpl
def collhub_after_pipeline_run(pipeline: Any, run_dir: Any, results: Any) -> None:
    raise RuntimeError("after-run boom")
