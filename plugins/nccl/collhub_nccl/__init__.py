"""collhub-nccl: NCCL 2.30.7's own algorithms as Chakra ET, and what NCCL would pick.

Components (entry point ``nccl``): producers ``nccl.ring``, ``nccl.tree``, ``nccl.pat``,
``nccl.auto``; command ``collhub nccl explain``. Names resolve lazily (PEP 562).
"""

from __future__ import annotations

from hub.plugins import lazy_namespace as _lazy_namespace

_LAZY = {
    "NCCL_VERSION": "._constants",
    "Choice": "._tuning",
    "Model": "._tuning",
    "NcclParams": "._params",
    "Split": "._split",
    "System": "._system",
    "choose": "._tuning",
    "dtree": "._trees",
    "explain": "._explain",
    "model": "._tuning",
    "network_of": "._system",
    "parse_system": "._system",
    "plan": "._schedule",
    "pat_ops": "._pat",
    "schedule": "._schedule",
    "split": "._split",
    "times": "._tuning",
}
__all__, __getattr__, __dir__ = _lazy_namespace(__name__, _LAZY, globals())
