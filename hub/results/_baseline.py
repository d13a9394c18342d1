"""The "vs NCCL" column: NCCL's own choice at each size beside the best other contender.

The hub imports no plugin. The column comes from the rows of a ``nccl.auto`` source in the same
study (same consumer, network, collective and rank count as every contender, so the times are
comparable), read through the provenance ``collhub-nccl`` writes into each algorithm's metadata
(recorded in ``results.json``'s ``algorithms[].summary.metadata``). Rules, in order:

1. **The baseline source** of a study is a source whose algorithms the ``nccl.auto`` producer
   made with NCCL's own pick (``summary.producer == "nccl.auto"``; ``nccl.auto`` restricted to
   one algorithm records ``nccl.ring``/``nccl.tree``/``nccl.pat`` and is a contender like any
   other). With several, the first whose system matches the study's network (rule 3), else
   the first in the pipeline's order. A study without one has no column; where another study
   of the run has one, its summary says so.
2. **At each size**: NCCL's pick as NCCL names it (``nccl_pick``, e.g. ``Tree/LL``), what the
   schedule ran when that differs (NVLS all-gather / reduce-scatter have no schedule:
   ``nccl.auto`` runs the best of Ring/Tree/PAT and says so), the baseline row's time in this
   study, NCCL's own cost-model time of its pick (``nccl_pick_us``), the best *other* contender not set apart, and
   ``ratio`` = NCCL's time / that contender's time (> 1: the contender is faster than NCCL).
3. **The system.** NCCL's pick is for the system the ``nccl.auto`` source names
   (``nccl_system``); ``nccl_network`` is that system as a collhub network (the plugin's
   ``network_of``). The study's network is what the consumer reports it simulated
   (``metrics.topology``). Both are compared in canonical form
   (:meth:`hub.topology.Topology.to_string`): when they differ, NCCL's pick is for another
   machine, so no cell of the study gets a ratio and each says ``other system``; when the
   consumer reports no network the pick is shown and the study's note says it is unchecked.
   Nothing is ever derived from a network alone: a system cannot be inferred from link
   bandwidths without inventing the GPU generation, NICs and NCCL's topology-search result.
4. **Impossible numbers.** A baseline row below a lower bound (rule 2 of
   :mod:`hub.results._answer`) gives no ratio; its cell says why.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["NCCL_AUTO", "NcclBaseline", "NcclCell", "algorithm_metadata", "attach_baselines"]

#: The producer whose rows are NCCL's own choice.
NCCL_AUTO = "nccl.auto"


@dataclass(frozen=True)
class NcclCell:
    """The "vs NCCL" cell of one size (rule 2); ``reason`` says why there is no ratio."""

    size_bytes: int
    pick: str | None = None
    scheduled: str | None = None
    time_us: float | None = None
    model_us: float | None = None
    best: str | None = None
    best_time_us: float | None = None
    reason: str | None = None

    @property
    def ratio(self) -> float | None:
        """NCCL's time / the best other contender's (> 1: that contender beats NCCL)."""
        if self.reason or self.time_us is None or not self.best_time_us:
            return None
        return self.time_us / self.best_time_us

    def text(self) -> str:
        """The cell as the tables print it: ``Tree/LL 45.8 µs; tacos 0.52x``."""
        if self.pick is None:
            return self.reason or "-"
        head = self.pick + (f" (ran {self.scheduled})" if self.scheduled else "")
        if self.reason:
            return f"{head}: {self.reason}"
        ratio = self.ratio
        vs = f"; {self.best} {ratio:.2f}x" if ratio is not None else "; no other contender"
        return f"{head} {_fmt(self.time_us)} µs{vs}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "size_bytes": self.size_bytes,
            "pick": self.pick,
            "scheduled": self.scheduled,
            "time_us": self.time_us,
            "model_us": self.model_us,
            "best_other": self.best,
            "best_other_time_us": self.best_time_us,
            "ratio": self.ratio,
            "reason": self.reason,
        }


@dataclass
class NcclBaseline:
    """A study's NCCL baseline: its source, system, networks and one cell per studied size."""

    source: str
    system: str | None
    network: str | None
    study_network: str | None
    cells: list[NcclCell] = field(default_factory=list)
    note: str | None = None

    @property
    def matches(self) -> bool | None:
        """Whether NCCL's system is the study's network (None: the study's is unknown)."""
        if self.study_network is None or self.network is None:
            return None
        return canonical_network(self.network) == canonical_network(self.study_network)

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "system": self.system,
            "system_network": self.network,
            "study_network": self.study_network,
            "system_matches_network": self.matches,
            "note": self.note,
            "cells": [c.as_dict() for c in self.cells],
        }


def _fmt(t: float | None) -> str:
    if t is None:
        return "-"
    return f"{t:.3f}" if t < 1000 else f"{t:.1f}"


@functools.lru_cache(maxsize=256)
def canonical_network(network: str) -> str:
    """A network's canonical string (hub.simulate reports this form); the text when unparsable."""
    from ..topology import load_topology

    try:
        topo = load_topology(network)
        return str(topo.to_string()) if hasattr(topo, "to_string") else network
    except Exception:  # noqa: BLE001 - a network hub cannot parse is compared as written
        return network


def algorithm_metadata(document: Mapping[str, Any]) -> dict[str, tuple[str | None, dict[str, Any]]]:
    """algorithm dir -> (producer, provenance metadata), from ``results.json``'s ``algorithms``."""
    out: dict[str, tuple[str | None, dict[str, Any]]] = {}
    for a in document.get("algorithms") or []:
        if not isinstance(a, Mapping) or not isinstance(a.get("dir"), str):
            continue
        summary = a.get("summary") if isinstance(a.get("summary"), Mapping) else {}
        producer = summary.get("producer") if isinstance(summary, Mapping) else None
        meta = summary.get("metadata") if isinstance(summary, Mapping) else None
        out[a["dir"]] = (
            producer if isinstance(producer, str) else None,
            dict(meta) if isinstance(meta, Mapping) else {},
        )
    return out


def attach_baselines(studies: list[Any], algos: Mapping[str, tuple[str | None, dict[str, Any]]]) -> None:
    """Set ``study.nccl`` (an :class:`NcclBaseline` or None) on every study (rules 1-4)."""
    any_baseline = False
    for st in studies:
        st.nccl = _baseline(st, algos)
        any_baseline = any_baseline or st.nccl is not None
    if any_baseline:
        for st in studies:
            if st.nccl is None:
                st.nccl_note = f"vs NCCL: no {NCCL_AUTO} source in this study, so no NCCL baseline here"


def _baseline(st: Any, algos: Mapping[str, tuple[str | None, dict[str, Any]]]) -> NcclBaseline | None:
    cands = []
    for src, pts in st.series.items():
        producers = {algos.get(alg or "", (None, {}))[0] for _t, _bw, alg in pts.values()}
        if producers == {NCCL_AUTO}:
            cands.append(src)
    if not cands:
        return None
    made = [_make(st, src, algos) for src in cands]
    return next((b for b in made if b.matches), made[0])


def _make(st: Any, src: str, algos: Mapping[str, tuple[str | None, dict[str, Any]]]) -> NcclBaseline:
    metas = {size: algos.get(alg or "", (None, {}))[1] for size, (_t, _bw, alg) in st.series[src].items()}
    first = next(iter(metas.values()), {})
    system, network = first.get("nccl_system"), first.get("nccl_network")
    base = NcclBaseline(
        src,
        system if isinstance(system, str) else None,
        network if isinstance(network, str) else None,
        st.networks.get(src),
    )
    if base.matches is False:
        base.note = (
            f"vs NCCL: {src}'s picks are for {base.system} (network {base.network}), not this study's network "
            f"{base.study_network}: no comparison (give {src} the system of this network)"
        )
    elif base.matches is None:
        base.note = (
            f"vs NCCL: {src}'s picks are for {base.system}; the consumer reports no network, so the system "
            "is not checked against this study's"
        )
    for size in st.sizes:
        base.cells.append(_cell(st, src, size, metas.get(size), base.matches))
    return base


def _cell(st: Any, src: str, size: int, meta: Mapping[str, Any] | None, matches: bool | None) -> NcclCell:
    if meta is None:
        return NcclCell(size, reason=f"no {src} row at this size")
    pick = meta.get("nccl_pick") if isinstance(meta.get("nccl_pick"), str) else None
    ran = f"{meta.get('nccl_algorithm')}/{meta.get('nccl_protocol')}"
    scheduled = ran if pick and "nccl_algorithm" in meta and ran != pick else None
    model = meta.get("nccl_pick_us")
    t = st.series[src][size][0]
    others = sorted(
        (pts[size][0], s)
        for s, pts in st.series.items()
        if s != src and size in pts and size not in st.below.get(s, {})
    )
    reason = None
    if matches is False:
        reason = "other system"
    elif size in st.below.get(src, {}):
        reason = st.below[src][size]
    return NcclCell(
        size,
        pick or "?",
        scheduled,
        t,
        float(model) if isinstance(model, (int, float)) and not isinstance(model, bool) else None,
        others[0][1] if others else None,
        others[0][0] if others else None,
        reason,
    )
