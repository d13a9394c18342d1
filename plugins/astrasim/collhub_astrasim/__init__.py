"""collhub-astrasim: ASTRA-sim as a consumer (bundle, run) and a producer (custom ET import).

Components (qualified ids): ``astrasim.bundle``, ``astrasim.run``, ``astrasim.custom``.
"""

from __future__ import annotations

from ._bundle import Bundle, BundleParams, build_bundle, consume_bundle, parse_size
from ._config import Dim, custom_key, network_yml
from ._custom import CustomParams, produce_custom
from ._parse import RunReport, bus_factor, parse_output
from ._run import ENV_BINARY, RunParams, consume_run, resolve_binary, run_binary

__all__ = [
    "ENV_BINARY",
    "Bundle",
    "BundleParams",
    "CustomParams",
    "Dim",
    "RunParams",
    "RunReport",
    "build_bundle",
    "bus_factor",
    "consume_bundle",
    "consume_run",
    "custom_key",
    "network_yml",
    "parse_output",
    "parse_size",
    "produce_custom",
    "resolve_binary",
    "run_binary",
]
