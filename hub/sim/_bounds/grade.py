"""How close a produced algorithm comes to the certified lower bound of the network it was made for.

Rules (``collhub produce`` grades every algorithm whose producer was told a network; the
synthesizers need no code of their own for it):

* **Network:** the producer's ``network`` parameter; else its ``topology`` when that is a collhub
  network (forest's alias; TACCL's ``topology`` is a TACCL profile, which does not load, so an
  algorithm made from one is not graded). Neither: no grade.
* **Size:** the algorithm's own (bound) size, else the producer's ``size``. Neither: no grade.
* **Bound:** the certificate of :mod:`hub.sim._bounds.certificate` (cut bound and latency term, for all-gather,
  reduce-scatter and all-reduce), else the ingress bound of :func:`~hub.sim.lower_bound_ns`, exactly
  as ``hub.simulate`` reports it. A collective or rank set with neither: no grade.
* **Time:** ``hub.simulate`` in its consumer's default mode (``auto``: congestion-aware wherever
  it applies), so ``% of bound`` here equals what ``collhub consume hub.simulate`` prints. An
  algorithm of more than :data:`GRADE_MESSAGES` messages is not simulated (bounded time): the
  bound alone is recorded and the reason is given.
* **Metadata** (GlobalMetadata attributes, shown by ``collhub trace show``): :data:`BOUND_KEYS`;
  a grade replaces earlier values of the same keys (a producer's own ``bound_ns``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...chakra import Algorithm, NodeType
from ...errors import HubError

__all__ = ["BOUND_KEYS", "GRADE_MESSAGES", "Grade", "grade", "with_grade"]

#: the most messages an algorithm may have to be simulated while it is produced
GRADE_MESSAGES = 1_000_000
#: the metadata keys a grade writes
BOUND_KEYS = (
    "bound_ns",
    "bound_term",
    "bound_network",
    "bound_size",
    "bound_formula",
    "simulated_ns",
    "simulated_mode",
    "time_over_bound",
)


@dataclass(frozen=True)
class Grade:
    """An algorithm's lower bound on one network at one size, and its simulated time if known."""

    network: str
    size: int
    bound_ns: float
    term: str
    formula: str
    time_ns: int | None  # None: not simulated (see ``skipped``)
    mode: str | None
    skipped: str | None = None  # why the algorithm was not simulated

    @property
    def time_over_bound(self) -> float | None:
        return None if self.time_ns is None or not self.bound_ns else self.time_ns / self.bound_ns

    def metadata(self) -> tuple[tuple[str, str | int | float | bool], ...]:
        """The :data:`BOUND_KEYS` this grade has, as AlgorithmMeta.extra pairs."""
        pairs: list[tuple[str, str | int | float | bool]] = [
            ("bound_ns", round(self.bound_ns, 3)),
            ("bound_term", self.term),
            ("bound_network", self.network),
            ("bound_size", self.size),
            ("bound_formula", self.formula),
        ]
        ratio = self.time_over_bound
        if self.time_ns is not None and self.mode is not None and ratio is not None:
            pairs += [("simulated_ns", self.time_ns), ("simulated_mode", self.mode)]
            pairs.append(("time_over_bound", round(ratio, 6)))
        return tuple(pairs)

    def as_dict(self) -> dict[str, Any]:
        return {
            "network": self.network,
            "size_bytes": self.size,
            "bound_ns": self.bound_ns,
            "bound_term": self.term,
            "bound_formula": self.formula,
            "time_ns": self.time_ns,
            "mode": self.mode,
            "time_over_bound": self.time_over_bound,
            "not_simulated": self.skipped,
        }


def _network_of(params: Mapping[str, Any]) -> Any:
    """The collhub topology the producer was told (see the module docstring), else None."""
    from ...topology import load_topology

    for key in ("network", "topology"):
        spec = params.get(key)
        if not isinstance(spec, str) or not spec.strip():
            continue
        try:
            return load_topology(spec)
        except HubError:  # not a collhub network (a TACCL profile): no grade, never an error
            continue
    return None


def _size_of(alg: Algorithm, params: Mapping[str, Any]) -> int | None:
    if alg.meta.size is not None:
        return int(alg.meta.size)
    raw = params.get("size")
    if raw is None or isinstance(raw, bool):
        return None
    from .._simulate import parse_size

    try:
        size = parse_size(raw)
    except HubError:
        return None
    return size if size > 0 else None


def grade(alg: Algorithm, params: Mapping[str, Any]) -> Grade | None:
    """The grade of ``alg``, produced with ``params``; None where the module docstring says so."""
    topo = _network_of(params)
    size = _size_of(alg, params)
    if topo is None or size is None or alg.ranks != topo.npus:
        return None
    from .._simulate import simulate
    from .._views.result import lower_bound_ns
    from .certificate import certify

    net = topo.to_string()
    messages = sum(int((g.kind == NodeType.SEND).sum()) for g in alg.graphs)
    if messages > GRADE_MESSAGES:
        cert = certify(topo, alg.collective, size)
        if cert is not None:
            bound, term, formula = cert.bound_ns, cert.term, cert.formula
        else:
            lb, lb_formula = lower_bound_ns(topo, alg.collective, size, alg.ranks, alg.meta.root)
            if lb is None:
                return None
            bound, term, formula = lb, "bandwidth", lb_formula or ""
        why = f"{messages:,} messages (more than {GRADE_MESSAGES:,}): run collhub consume hub.simulate"
        return Grade(net, size, bound, term, formula, None, None, why)
    res = simulate(alg, topo, size=None if alg.is_bound else size, mode="auto")
    if res.bound_ns is None or res.bound_term is None:
        return None
    return Grade(net, size, res.bound_ns, res.bound_term, res.bound_formula or "", res.time_ns, res.mode)


def with_grade(alg: Algorithm, g: Grade) -> Algorithm:
    """``alg`` with the grade in its metadata (earlier values of :data:`BOUND_KEYS` replaced)."""
    from dataclasses import replace

    kept = tuple((k, v) for k, v in alg.meta.extra if k not in BOUND_KEYS)
    return Algorithm(replace(alg.meta, extra=kept + g.metadata()), alg.graphs)
