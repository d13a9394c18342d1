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
    "AstraSimOutcome": "._astrasim.dropin",
    "run_astra_sim": "._astrasim.dropin",
    "Certificate": "._bounds.certificate",
    "certify": "._bounds.certificate",
    "network_facts": "._bounds.certificate",
    "CutOptimum": "._bounds.cut",
    "Grade": "._bounds.grade",
    "grade": "._bounds.grade",
    "with_grade": "._bounds.grade",
    "cut_optimum": "._bounds.cut",
    "SimulateParams": "._simulate",
    "parse_size": "._simulate",
    "simulate": "._simulate",
    "simulate_consumer": "._simulate",
    "unaware_delays": "._engine.network",
    "comp_ns": "._engine.program",
    "trace_events": "._views.trace",
    "write_plot": "._views.trace",
    "write_trace": "._views.trace",
    "SimulationResult": "._views.result",
    "algbw_GBps": "hub._bandwidth",
    "busbw_factor": "hub._bandwidth",
    "lower_bound_ns": "._views.result",
    "node_spans": "._views.timeline",
    "write_timeline": "._views.timeline",
}

if _typing.TYPE_CHECKING:  # for type checkers; at run time __getattr__ imports on first use
    from .._bandwidth import algbw_GBps, busbw_factor
    from ._astrasim.dropin import AstraSimOutcome, run_astra_sim
    from ._bounds.certificate import Certificate, certify, network_facts
    from ._bounds.cut import CutOptimum, cut_optimum
    from ._bounds.grade import Grade, grade, with_grade
    from ._engine.network import unaware_delays
    from ._engine.program import comp_ns
    from ._simulate import SimulateParams, parse_size, simulate, simulate_consumer
    from ._views.result import SimulationResult, lower_bound_ns
    from ._views.timeline import node_spans, write_timeline
    from ._views.trace import trace_events, write_plot, write_trace

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
