"""The built-in simulator (consumer ``hub.simulate``): ASTRA-sim's analytical network models,
congestion-unaware and congestion-aware, reproduced to the nanosecond. See ``docs/simulator.md``."""

from __future__ import annotations

from ._api import SimulateParams, parse_size, simulate, simulate_consumer
from ._network import unaware_delays
from ._program import comp_ns
from ._report import trace_events, write_plot, write_trace
from ._result import SimulationResult, busbw_factor, lower_bound_ns
from ._timeline import node_spans, write_timeline

__all__ = [
    "SimulateParams",
    "SimulationResult",
    "busbw_factor",
    "comp_ns",
    "lower_bound_ns",
    "node_spans",
    "parse_size",
    "simulate",
    "simulate_consumer",
    "trace_events",
    "unaware_delays",
    "write_plot",
    "write_timeline",
    "write_trace",
]
