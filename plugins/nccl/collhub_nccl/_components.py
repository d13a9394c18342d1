"""Factories of the ``nccl.*`` producers: params -> :func:`plan` -> :func:`schedule`."""

from __future__ import annotations

from typing import Any

from hub import parse_size
from hub.chakra import Algorithm

from ._params import NcclParams
from ._schedule import plan, schedule

__all__ = ["produce", "produce_auto", "produce_nvls", "produce_nvlstree", "produce_pat", "produce_ring", "produce_tree"]


def produce(params: NcclParams, algorithm: str | None) -> Algorithm:
    p = plan(
        params.collective,
        params.ranks,
        parse_size(params.size),
        gpus_per_node=params.gpus_per_node,
        algorithm=algorithm,
        protocol=None if params.protocol == "auto" else params.protocol,
        channels=params.channels,
        system=params.system,
        root=params.root,
    )
    return schedule(p, params.name)


def produce_ring(params: NcclParams, ctx: Any = None) -> Algorithm:
    return produce(params, "Ring")


def produce_tree(params: NcclParams, ctx: Any = None) -> Algorithm:
    return produce(params, "Tree")


def produce_pat(params: NcclParams, ctx: Any = None) -> Algorithm:
    return produce(params, "PAT")


def produce_nvls(params: NcclParams, ctx: Any = None) -> Algorithm:
    return produce(params, "NVLS")


def produce_nvlstree(params: NcclParams, ctx: Any = None) -> Algorithm:
    return produce(params, "NVLSTree")


_NAMES = {"ring": "Ring", "tree": "Tree", "pat": "PAT", "nvls": "NVLS", "nvlstree": "NVLSTree"}


def produce_auto(params: NcclParams, ctx: Any = None) -> Algorithm:
    algo = None if params.algorithm == "auto" else _NAMES[params.algorithm.lower()]
    return produce(params, algo)
