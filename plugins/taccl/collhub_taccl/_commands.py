"""TACCL's published run list (``commands.sh``) as synthesis requests."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["TacclRun", "read_commands"]

_LINE = re.compile(r"^taccl\s+(solve|combine)\s+(\S+)\s+(\S+)\s+--topology-file\s+(\S+)\s+--sketch-file\s+(\S+)")
_COLL = {"Allgather": "allgather", "Alltoall": "alltoall"}


@dataclass(frozen=True)
class TacclRun:
    """One ``taccl solve|combine`` line: ``combine`` of an all-gather is TACCL's all-reduce."""

    label: str
    kind: str  # TACCL's <topo>: NDv2, DGX2, DGX1, ...
    collective: str
    topology: Path
    sketch: Path


def read_commands(path: str | Path) -> list[TacclRun]:
    """The runs of ``commands.sh``; file names resolve next to it (``topo/``, ``sketch/``)."""
    base = Path(path).parent
    runs: list[TacclRun] = []
    label = ""
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line.startswith("#"):
            label = line.lstrip("# ").split(":")[0].strip("[] ")
            continue
        m = _LINE.match(line)
        if not m:
            continue
        verb, kind, coll, topo, sketch = m.groups()
        collective = "allreduce" if verb == "combine" else _COLL.get(coll, coll.lower())
        runs.append(
            TacclRun(label, kind, collective, base / "topo" / Path(topo).name, base / "sketch" / Path(sketch).name)
        )
    return runs
