"""Parse ASTRA-sim's per-rank report lines (``astra-sim.md`` §8) and derive nccl-tests metrics."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["RankReport", "RunReport", "parse_output"]

_FINISHED = re.compile(r"sys\[(\d+)\] finished, (\d+) cycles, exposed communication (\d+) cycles")
# "sys[3], Wall time: 90174" / "sys[3], Comm time: 90174" / "sys[3], GPU time: ..."
_STAT = re.compile(r"sys\[(\d+)\],\s*([A-Za-z][A-Za-z ]*?) time:\s*(-?\d+(?:\.\d+)?)")


@dataclass
class RankReport:
    """What one rank reported; times in ns (one ASTRA-sim cycle is 1 ns)."""

    finish_ns: int
    exposed_comm_ns: int
    stats: dict[str, float] = field(default_factory=dict)


@dataclass
class RunReport:
    """All ranks' reports, keyed by system id."""

    ranks: dict[int, RankReport]

    @property
    def time_ns(self) -> int:
        return max(r.finish_ns for r in self.ranks.values())

    @property
    def exposed_comm_ns(self) -> int:
        return max(r.exposed_comm_ns for r in self.ranks.values())

    def per_rank(self, key: str = "finish_ns") -> list[int | float | None]:
        n = max(self.ranks) + 1 if self.ranks else 0
        out: list[int | float | None] = []
        for i in range(n):
            r = self.ranks.get(i)
            if r is None:
                out.append(None)
            elif key in ("finish_ns", "exposed_comm_ns"):
                out.append(getattr(r, key))
            else:
                out.append(r.stats.get(key))
        return out


def parse_output(text: str) -> RunReport:
    """Collect every ``finished`` line and every ``<X> time:`` statistic, per rank.

    A rank that reports twice (a workload with several phases does not, but a log that holds the
    stdout twice would) keeps its last report.
    """
    ranks: dict[int, RankReport] = {}
    for m in _FINISHED.finditer(text):
        ranks[int(m.group(1))] = RankReport(finish_ns=int(m.group(2)), exposed_comm_ns=int(m.group(3)))
    for m in _STAT.finditer(text):
        rank = ranks.get(int(m.group(1)))
        if rank is not None:
            key = m.group(2).strip().lower().replace(" ", "_") + "_ns"
            value = float(m.group(3))
            rank.stats[key] = int(value) if value.is_integer() else value
    return RunReport(ranks)
