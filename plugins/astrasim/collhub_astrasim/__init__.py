"""collhub-astrasim: ASTRA-sim as a consumer (bundle, run) and a producer (custom ET import).

Components (qualified ids): ``astrasim.bundle``, ``astrasim.run``, ``astrasim.custom``.
Names resolve lazily (PEP 562): loading the plugin's registration module imports none of this.
"""

from __future__ import annotations

from hub.plugins import lazy_namespace as _lazy_namespace

_LAZY = {
    "Bundle": "._bundle",
    "BundleParams": "._bundle",
    "build_bundle": "._bundle",
    "consume_bundle": "._bundle",
    "parse_size": "._bundle",
    "Dim": "._config",
    "custom_key": "._config",
    "network_yml": "._config",
    "CustomParams": "._custom",
    "produce_custom": "._custom",
    "RunReport": "._parse",
    "parse_output": "._parse",
    "ENV_BINARY": "._run",
    "RunParams": "._run",
    "consume_run": "._run",
    "resolve_binary": "._run",
    "run_binary": "._run",
}
__all__, __getattr__, __dir__ = _lazy_namespace(__name__, _LAZY, globals())
