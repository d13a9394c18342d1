"""Per-topology fallback of ``tacos.synthesize``: ``hub.direct`` where it beats the greedy.

Why: on switched fabrics the greedy matches chunks on *unwound* virtual links, each an even
share of its NPU's ports (see ``_network``). That model has no shared uplinks, so a schedule it
finds optimal can queue on a leaf's uplinks in the congestion-aware simulator, while
``hub.direct``'s staggered all-pairs exchange spreads every rank's traffic over all peers at
once (a 1,024-rank fat tree, all-gather: 21,213 µs greedy vs 20,041 µs direct).

Rules:

* only networks with switches (at least one unwound link) and ``fallback="direct"``;
* both algorithms are simulated with ``hub.simulate`` (aware) at the synthesis size (a
  multi-dimensional network as its link graph, the only form the aware model takes);
* the direct algorithm is returned only when strictly faster; ties keep the greedy's;
* what was returned, and both simulated times, are in metadata (``tacos.fallback``,
  ``tacos.greedy_aware_ns``, ``tacos.direct_aware_ns``) and a fallback is also a warning, which
  ``collhub produce`` prints as one ``warning:`` line.
"""

from __future__ import annotations

import warnings
from dataclasses import replace

from hub.chakra import Algorithm
from hub.errors import ProducerNote
from hub.topology import DimensionalTopology, Topology

__all__ = ["FALLBACK_KEYS", "with_fallback"]

FALLBACK_KEYS = ("tacos.fallback", "tacos.greedy_aware_ns", "tacos.direct_aware_ns")


def with_fallback(greedy: Algorithm, topo: Topology, label: str, size: int, reduction_comp: bool) -> Algorithm:
    """``greedy``, or ``hub.direct``'s algorithm in its place when that simulates faster; either
    way with the comparison in metadata. ``greedy`` carries the synthesis metadata."""
    from hub.algorithms import direct
    from hub.sim import simulate

    m = greedy.meta
    if isinstance(topo, DimensionalTopology) and len(topo.dims) > 1:
        topo = topo.to_link_graph()  # the aware model routes multi-dimensional networks as link graphs
    greedy_ns = simulate(greedy, topo, size=size, mode="aware").time_ns
    alt = direct(m.collective, m.ranks, reduction_comp=reduction_comp, inplace=m.inplace)
    direct_ns = simulate(alt, topo, size=size, mode="aware").time_ns
    use_direct = direct_ns < greedy_ns
    facts: tuple[tuple[str, str | int | float | bool], ...] = (
        ("tacos.fallback", "hub.direct" if use_direct else "none"),
        ("tacos.greedy_aware_ns", int(greedy_ns)),
        ("tacos.direct_aware_ns", int(direct_ns)),
    )
    if not use_direct:
        return Algorithm(replace(m, extra=m.extra + facts), greedy.graphs)
    warnings.warn(
        f"tacos.synthesize: on {label} hub.direct "
        f"simulates faster ({direct_ns} ns aware) than the greedy's schedule ({greedy_ns} ns): returning "
        "hub.direct's algorithm (metadata tacos.fallback; fallback=none keeps the greedy's)",
        ProducerNote,
        stacklevel=2,
    )
    meta = replace(alt.meta, name=m.name, producer=m.producer, extra=m.extra + facts)
    out = Algorithm(meta, alt.graphs)
    return out.bind(size) if m.size is not None else out
