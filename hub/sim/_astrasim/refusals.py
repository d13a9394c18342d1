"""What ASTRA-sim's analytical binaries cannot run: one rule set for ``hub.simulate`` and the
drop-in ``collhub astra-sim`` (``hub.sim._astrasim.dropin``).

Each rule names the upstream place that stops the real program (astra-sim ``518bd51``, network
backend ``e8c5119``); a rule returns the one-line reason, or None when the input passes it.

=====================================  ==========================================================
rule                                   upstream
=====================================  ==========================================================
:func:`zero_time_events`: an event     ``EventQueue::proceed`` asserts ``event_time >
at t = 0 after the start (a message    current_time``, and the clock starts at 0 (SIGABRT; the
whose delay truncates to 0 ns, a link  stdout is whatever was flushed)
free again at once)
:func:`workload_node_types`: a node    ``Statistics::get_operator_type`` (``record_start`` of
ASTRA-sim's statistics cannot type     every issued node) logs "Invalid node_type" and asserts
(METADATA, ...)
:func:`aware_network`: a multi-        the congestion-aware ``main`` accepts 1-D topologies
dimensional network, or a 2-NPU Ring   only; ``Device::connect`` asserts on the duplicate link
on the congestion-aware backend        of a 2-NPU ring
:func:`overlap_types`: a rank with     ``Statistics::extract_comp_comm_overlap`` throws; the
operators other than GPU and COMM      event loop drops the callback ("a callable is removed"),
(CPU ops, INVALID nodes)               so the rank prints its finish line but no statistics:
                                       not an abort, a warning
=====================================  ==========================================================
"""

from __future__ import annotations

from collections.abc import Iterable

from ...chakra import NodeType, Workload

__all__ = ["OVERLAP_TYPES", "aware_network", "overlap_types", "workload_node_types", "zero_time_events"]

#: ASTRA-sim's exception text when a rank's operators are not only GPU and COMM
OVERLAP_TYPES = "Only GPU and COMM types are supported for overlap extraction"

# node types ASTRA-sim's Statistics can type (COMP -> CPU/GPU, COMM_* -> COMM, INVALID -> INVALID);
# MEM_LOAD / MEM_STORE (remote memory) are typed too, but not reproduced here
_TYPED = {NodeType.COMP, NodeType.SEND, NodeType.RECV, NodeType.COLL, NodeType.INVALID}


def zero_time_events(count: int) -> str | None:
    """``count``: the events that ran at t = 0 after the start (``EngineState.t0_events``)."""
    if count <= 0:
        return None
    return (
        f"ASTRA-sim aborts: {count} event(s) at t = 0 (EventQueue::proceed asserts "
        "event_time > current_time; a message or link time that truncates to 0 ns at the start)"
    )


def workload_node_types(wl: Workload) -> str | None:
    """The first workload node whose type ASTRA-sim's statistics (or hub.simulate) cannot take."""
    for r, nodes in enumerate(wl.ranks):
        for n in nodes:
            if n.type in _TYPED:
                continue
            if n.type == NodeType.METADATA:
                return (
                    f"ASTRA-sim aborts: rank {r} node {n.id} is a METADATA node "
                    "(Statistics::get_operator_type: Invalid node_type)"
                )
            return f"rank {r} node {n.id}: node type {n.type.name} (remote memory) is not reproduced"
    return None


def aware_network(dims: Iterable[tuple[str, int]]) -> str | None:
    """The congestion-aware backend's network rules (``dims``: (building block, NPUs) per dimension)."""
    ds = list(dims)
    if len(ds) > 1:
        return f"ASTRA-sim aborts: the congestion-aware backend takes 1-D networks only, this one has {len(ds)}"
    if ds and ds[0] == ("Ring", 2):
        return (
            "ASTRA-sim aborts: a 2-NPU Ring on the congestion-aware backend "
            "(Device::connect asserts on the duplicate link)"
        )
    return None


def overlap_types(types: Iterable[str]) -> str | None:
    """``types``: a rank's operator types (``GPU``, ``COMM``, ``CPU``, ``INVALID``)."""
    return OVERLAP_TYPES if any(t not in ("GPU", "COMM") for t in types) else None
