"""collhub-replay: run collhub algorithms on real communication libraries (NCCL, gloo).

Consumer ``replay.run``. Library use: :func:`replay` replays several algorithms in one set of
rank processes. Names resolve lazily (PEP 562): nothing here imports torch until a replay runs.
"""

from __future__ import annotations

from hub.plugins import lazy_namespace as _lazy_namespace

_LAZY = {
    "ReplayParams": "._params",
    "ReplayReport": "._consumer",
    "consume_run": "._consumer",
    "replay": "._consumer",
    "preflight": "._preflight",
    "Plan": "._plan",
    "build_plan": "._plan",
    "format_table": "._table",
}
__all__, __getattr__, __dir__ = _lazy_namespace(__name__, _LAZY, globals())
