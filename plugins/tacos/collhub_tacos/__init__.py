"""collhub-tacos: TACOS-style greedy collective synthesis for collhub.

Component (entry point ``tacos``): producer ``tacos.synthesize``. The names below are the same
code for direct use; they resolve lazily (PEP 562), so loading the plugin's registration module
imports none of this.
"""

from __future__ import annotations

from hub.plugins import lazy_namespace as _lazy_namespace

_LAZY = {
    "Network": "._network",
    "Schedule": "._greedy",
    "Synthesis": "._synth",
    "SynthesizeParams": "._params",
    "greedy_allgather": "._greedy",
    "ingress_bound": "._bounds",
    "network_of": "._network",
    "synthesize": "._synth",
    "synthesize_schedule": "._synth",
}
__all__, __getattr__, __dir__ = _lazy_namespace(__name__, _LAZY, globals())
