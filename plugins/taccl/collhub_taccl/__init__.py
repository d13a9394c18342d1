"""collhub-taccl: TACCL-style synthesis of collective algorithms on an open solver (HiGHS).

Component: ``taccl.synthesize``. Library: :func:`synthesize` (params -> verified Algorithm),
:func:`load_taccl` (TACCL topology profile + sketch -> a network), :class:`SynthesizeParams`.
Names resolve lazily (PEP 562): the plugin's registration imports none of this.
"""

from __future__ import annotations

from hub.plugins import lazy_namespace as _lazy_namespace

_LAZY = {
    "SynthesizeParams": "._params",
    "COLLECTIVES": "._params",
    "synthesize": "._synth",
    "load_network": "._synth",
    "produce_synthesize": "._synth",
    "Network": "._taccl_files",
    "load_taccl": "._taccl_files",
    "lower_bound": "._bounds",
    "build_problem": "._problem",
}
__all__, __getattr__, __dir__ = _lazy_namespace(__name__, _LAZY, globals())
