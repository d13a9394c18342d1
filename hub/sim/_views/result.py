"""The simulation result: nccl-tests-style metrics, per-rank and per-link details, lower bound."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..._bandwidth import algbw_GBps, busbw_factor
from ...chakra import Collective
from ...topology import Topology, bytes_per_ns

__all__ = ["SimulationResult", "lower_bound_ns"]


def lower_bound_ns(
    topology: Topology, collective: Collective | str | None, size: int | None, ranks: int, root: int = 0
) -> tuple[float | None, str | None]:
    """Injection-bandwidth lower bound (conventions.md §3.2/§3.3) in ns, and how it was derived.

    B_in(r)/B_out(r) = summed bandwidth of the links into/out of rank r (B/ns, 2^30 convention);
    M = the collective size (nccl-tests' S). The bound is the bandwidth term only (no latency).
    """
    if collective is None or not size or ranks < 2:
        return None, None
    c = Collective.parse(collective)
    g = topology.to_link_graph()
    bin_ = [bytes_per_ns(g.in_bandwidth(r)) for r in range(ranks)]
    bout = [bytes_per_ns(g.out_bandwidth(r)) for r in range(ranks)]
    p, m = ranks, float(size)
    others = [r for r in range(ranks) if r != root]
    if c == Collective.ALLREDUCE:
        return 2 * (p - 1) * m / (p * min(bin_)), "2(p-1)M/(p*B_in)"
    if c == Collective.ALLGATHER:
        return (p - 1) * m / (p * min(bin_)), "(p-1)M/(p*B_in)"
    if c in (Collective.REDUCESCATTER, Collective.ALLTOALL):
        return (p - 1) * m / (p * min(bout)), "(p-1)M/(p*B_out)"
    if c == Collective.BROADCAST:
        return m / min(bin_[r] for r in others), "M/B_in(non-root)"
    if c == Collective.REDUCE:
        return m / min(bout[r] for r in others), "M/B_out(non-root)"
    if c == Collective.GATHER:
        return (p - 1) * m / (p * bin_[root]), "(p-1)M/(p*B_in(root))"
    if c == Collective.SCATTER:
        return (p - 1) * m / (p * bout[root]), "(p-1)M/(p*B_out(root))"
    return None, None


@dataclass
class SimulationResult:
    """One simulated collective or workload. Times in ns; bandwidths in decimal GB/s (= B/ns)."""

    time_ns: int
    mode: str
    topology: str
    ranks: int
    collective: str | None
    size: int | None  # nccl-tests' S in bytes, used for algbw
    messages: int
    bytes: int
    rank_finish_ns: list[int]
    critical_path: list[dict[str, Any]] = field(default_factory=list)
    links: list[dict[str, Any]] = field(default_factory=list)
    bound_ns: float | None = None
    bound_formula: str | None = None
    #: what binds in the bound: bandwidth, latency or both (hub/sim/_bounds/certificate.py)
    bound_term: str | None = None
    #: what whole-ns truncation can gain on ``bound_ns``: the model floors every message's delay to
    #: whole ns, so a schedule may finish up to 1 ns per message of its busiest GPU (sent or
    #: received) before a bound computed in real numbers; only a time below ``bound - slack`` is
    #: impossible in this model (the link-load bound has its truncation inside it)
    bound_slack_ns: int = 0
    #: the algorithm's own link-load bound (hub/sim/_bounds/linkload.py) and its busiest link
    link_bound_ns: float | None = None
    link_bound_link: str | None = None
    #: the reason the real ASTRA-sim aborts on this input (hub/sim/_astrasim/refusals.py), if it does
    astrasim_aborts: str | None = None
    name: str = ""
    #: workloads: per rank finish, GPU/CPU compute, communication and exposed communication
    #: times, as ASTRA-sim defines them (hub/sim/_views/breakdown.py, docs/workloads.md)
    per_rank: list[dict[str, int]] = field(default_factory=list)
    _engine: Any = field(default=None, repr=False)  # EngineState, for trace and plot
    _program: Any = field(default=None, repr=False)
    _net: Any = field(default=None, repr=False)

    @property
    def time_us(self) -> float:
        return self.time_ns / 1000.0

    @property
    def algbw_GBps(self) -> float | None:
        """``S / t`` in decimal GB/s (bytes per ns)."""
        if not self.size or self.time_ns <= 0:
            return None
        return algbw_GBps(self.size, ns=self.time_ns)

    @property
    def busbw_GBps(self) -> float | None:
        f = busbw_factor(self.collective, self.ranks)
        a = self.algbw_GBps
        return None if f is None or a is None else a * f

    @property
    def bound_ratio(self) -> float | None:
        """time / bound (>= 1 for a real schedule; 1 means the bound is attained)."""
        return self.time_ns / self.bound_ns if self.bound_ns else None

    def _below_bound(self) -> bool:
        return self.bound_ns is not None and self.bound_ns > 0 and self.time_ns < self.bound_ns - self.bound_slack_ns

    @property
    def link_bound_ratio(self) -> float | None:
        """time / link-load bound (< 1: the model let messages share a link for free)."""
        return self.time_ns / self.link_bound_ns if self.link_bound_ns else None

    @property
    def warnings(self) -> list[str]:
        """Why the time should not be taken at face value: below the collective's lower bound (no
        schedule on this network can be that fast), else below the algorithm's link-load bound
        (hub/sim/_bounds/linkload.py: its own messages cannot share a link that fast). Either way the
        model left contention out; one warning a row (both ratios are in :meth:`metrics`). And
        where the real ASTRA-sim aborts on the input, that it does."""
        aborts = (
            [] if self.astrasim_aborts is None else [f"{self.astrasim_aborts}; this time has no ASTRA-sim run to equal"]
        )
        ratio = self.bound_ratio
        if ratio is None or not self._below_bound():
            # below its own links' bound only: one warning a row, the stronger claim first
            return self._link_warning() + aborts
        why = (
            "the congestion-unaware model charges no link contention, so messages that share a link "
            "overlap for free; simulate with mode 'aware' for a contention-heavy algorithm"
            if self.mode == "unaware"
            else "no schedule can beat the bound; check the network and the collective size"
        )
        return [
            f"time {self.time_ns} ns is below the {self.collective} lower bound {self.bound_ns:.0f} ns "
            f"({self.bound_formula}) on this network (time_over_bound {ratio:.3g}): {why}"
        ] + aborts

    def _link_warning(self) -> list[str]:
        ratio = self.link_bound_ratio
        if ratio is None or ratio >= 1 or self.link_bound_ns is None:  # (its truncation is inside it)
            return []
        return [
            f"time {self.time_ns} ns is below the link-load lower bound {self.link_bound_ns:.0f} ns of this "
            f"algorithm (link {self.link_bound_link} carries its bytes alone; time_over_link_bound {ratio:.3g}): "
            "its messages share links, which this model does not charge; simulate with mode 'aware'"
        ]

    def metrics(self) -> dict[str, float | int | str | bool | None]:
        """Flat scalar figures (the ``metrics`` of :class:`hub.Result`)."""
        return {
            "time_ns": self.time_ns,
            "time_us": self.time_us,
            "algbw_GBps": self.algbw_GBps,
            "busbw_GBps": self.busbw_GBps,
            "size_bytes": self.size,
            "ranks": self.ranks,
            "collective": self.collective,
            "mode": self.mode,
            "topology": self.topology,
            "messages": self.messages,
            "bytes": self.bytes,
            "bound_ns": self.bound_ns,
            "time_over_bound": self.bound_ratio,
            "bound_term": self.bound_term,
            "bound_slack_ns": self.bound_slack_ns,
            "link_bound_ns": self.link_bound_ns,
            "time_over_link_bound": self.link_bound_ratio,
        }

    def details(self) -> dict[str, Any]:
        """Structured data: per-rank finish times, critical path, per-link stats (aware)."""
        out: dict[str, Any] = {
            "rank_finish_ns": list(self.rank_finish_ns),
            "critical_path": self.critical_path,
            "bound_formula": self.bound_formula,
        }
        if self.links:
            out["links"] = self.links
        if self.per_rank:
            out["per_rank"] = self.per_rank
        return out
