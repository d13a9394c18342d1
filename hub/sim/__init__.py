"""The built-in simulator (consumer ``hub.simulate``): ASTRA-sim's analytical network models,
congestion-unaware and congestion-aware, reproduced to the nanosecond. See ``docs/simulator.md``.

Names resolve on first use (PEP 562): ``consume hub.simulate`` on an algorithm imports the engine,
never the workload layer (ASTRA-sim's native collectives), the trace writer or the plots.
"""

from __future__ import annotations

import typing as _typing

from .._lazy import lazy_exports as _lazy_exports

#: public name -> the private module defining it
_LAZY: dict[str, str] = {
    "AstraSimOutcome": "._astrasim",
    "run_astra_sim": "._astrasim",
    "Certificate": "._certificate",
    "certify": "._certificate",
    "network_facts": "._certificate",
    "CutOptimum": "._cut",
    "Grade": "._grade",
    "grade": "._grade",
    "with_grade": "._grade",
    "cut_optimum": "._cut",
    "SimulateParams": "._api",
    "parse_size": "._api",
    "simulate": "._api",
    "simulate_consumer": "._api",
    "unaware_delays": "._network",
    "comp_ns": "._program",
    "trace_events": "._report",
    "write_plot": "._report",
    "write_trace": "._report",
    "SimulationResult": "._result",
    "algbw_GBps": "hub._bandwidth",
    "busbw_factor": "hub._bandwidth",
    "lower_bound_ns": "._result",
    "node_spans": "._timeline",
    "write_timeline": "._timeline",
}

if _typing.TYPE_CHECKING:  # for type checkers; at run time __getattr__ imports on first use
    from .._bandwidth import algbw_GBps, busbw_factor
    from ._api import SimulateParams, parse_size, simulate, simulate_consumer
    from ._astrasim import AstraSimOutcome, run_astra_sim
    from ._certificate import Certificate, certify, network_facts
    from ._cut import CutOptimum, cut_optimum
    from ._grade import Grade, grade, with_grade
    from ._network import unaware_delays
    from ._program import comp_ns
    from ._report import trace_events, write_plot, write_trace
    from ._result import SimulationResult, lower_bound_ns
    from ._timeline import node_spans, write_timeline

__all__ = [
    "AstraSimOutcome",
    "Certificate",
    "CutOptimum",
    "Grade",
    "SimulateParams",
    "SimulationResult",
    "algbw_GBps",
    "busbw_factor",
    "certify",
    "comp_ns",
    "cut_optimum",
    "lower_bound_ns",
    "grade",
    "network_facts",
    "node_spans",
    "parse_size",
    "run_astra_sim",
    "simulate",
    "simulate_consumer",
    "trace_events",
    "unaware_delays",
    "write_plot",
    "write_timeline",
    "with_grade",
    "write_trace",
]


__getattr__, __dir__ = _lazy_exports(__name__, _LAZY, globals())
