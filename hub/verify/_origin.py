"""Where a problem came from in the producer's own terms (``gpu 0 tb 0 step 5 (re)``).

Importers name nodes after their source: the MSCCL-IR reader writes ``tb<t>/s<s>/<type>`` with
an optional ``.send`` / ``.recv`` / ``.comp`` role (one MSCCL-IR step may become several Chakra
nodes). A problem located at a rank and Chakra node id is translated back, so an MSCCLang user
reads the threadblock and step of the XML instead of a node number.
"""

from __future__ import annotations

import re
from dataclasses import replace

from ..chakra import Algorithm
from ..errors import Problem

__all__ = ["origin_of", "with_origins"]

_MSCCL_NAME = re.compile(r"^tb(\d+)/s(\d+)/([a-z]+)(?:\.(send|recv|comp))?$")


def origin_of(name: str | None, rank: int) -> str | None:
    """``gpu R tb T step S (type[, role])`` for an MSCCL-IR-style node name, else the name itself."""
    if not name:
        return None
    m = _MSCCL_NAME.match(name)
    if m is None:
        return name
    tb, step, kind, role = m.groups()
    return f"gpu {rank} tb {tb} step {step} ({kind}{', ' + role if role else ''})"


def with_origins(alg: Algorithm, problems: list[Problem]) -> list[Problem]:
    """The problems, each with ``origin`` filled in where its node has a name."""
    positions: dict[int, dict[int, int]] = {}
    out = []
    for p in problems:
        if p.rank is None or p.node is None or p.origin or not 0 <= p.rank < len(alg.graphs):
            out.append(p)
            continue
        graph = alg.graphs[p.rank]
        if not graph.names:
            out.append(p)
            continue
        pos = positions.setdefault(p.rank, graph.position_of()).get(p.node)
        name = graph.names[pos] if pos is not None and pos < len(graph.names) else None
        out.append(replace(p, origin=origin_of(name, p.rank)) if name else p)
    return out
