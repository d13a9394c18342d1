"""collhub-forest: throughput-optimal collectives by spanning-tree packing (ForestColl's method,
our implementation), chunked and pipelined so that they run at the certified cut bound.

Component (entry point ``forest``): producer ``forest.synthesize``. The names below are the same
code for direct use; they resolve lazily (PEP 562), so loading the plugin's registration module
imports none of this.
"""

from __future__ import annotations

from hub.plugins import lazy_namespace as _lazy_namespace

_LAZY = {
    "Forest": "._packing",
    "LogicalGraph": "._logical",
    "SynthesizeParams": "._params",
    "logical_graph": "._logical",
    "pack_trees": "._packing",
    "synthesize": "._synth",
}
__all__, __getattr__, __dir__ = _lazy_namespace(__name__, _LAZY, globals())
