"""Where a problem came from in the producer's own terms (``gpu 0 tb 0 step 5 (re)``).

Importers name nodes after their source: the MSCCL-IR reader writes ``tb<t>/s<s>/<type>`` with
an optional ``.send`` / ``.recv`` / ``.comp`` role (one MSCCL-IR step may become several Chakra
nodes). A problem located at a rank and Chakra node id is translated back, so an MSCCLang user
reads the threadblock and step of the XML instead of a node number.

Where the importer also kept the node's source line (the foreign attribute :data:`SOURCE_LINE`,
an int), the origin ends with ``line N``: a problem then points at the line to fix.
"""

from __future__ import annotations

import re
from dataclasses import replace

from ..chakra import Algorithm
from ..errors import Problem

__all__ = ["SOURCE_LINE", "origin_of", "with_origins"]

#: Foreign node attribute (int) an importer sets to the line of the node's source element.
SOURCE_LINE = "source.line"

_MSCCL_NAME = re.compile(r"^tb(\d+)/s(\d+)/([a-z]+)(?:\.(send|recv|comp))?$")


def origin_of(name: str | None, rank: int, line: int | None = None) -> str | None:
    """``gpu R tb T step S (type[, role])`` for an MSCCL-IR-style node name, else the name itself;
    ``, line N`` is appended when the source line is known."""
    at = f", line {line}" if line is not None else ""
    if not name:
        return f"line {line}" if line is not None else None
    m = _MSCCL_NAME.match(name)
    if m is None:
        return name + at
    tb, step, kind, role = m.groups()
    return f"gpu {rank} tb {tb} step {step} ({kind}{', ' + role if role else ''}){at}"


def _line_of(attrs: tuple[tuple[str, object], ...] | None) -> int | None:
    for key, value in attrs or ():
        if key != SOURCE_LINE:
            continue
        # as built (an int) or as read back from an .et file (a TypedValue holding one)
        value = getattr(value, "value", value)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def with_origins(alg: Algorithm, problems: list[Problem]) -> list[Problem]:
    """The problems, each with ``origin`` filled in where its node has a name."""
    positions: dict[int, dict[int, int]] = {}
    out = []
    for p in problems:
        if p.rank is None or p.node is None or p.origin or not 0 <= p.rank < len(alg.graphs):
            out.append(p)
            continue
        graph = alg.graphs[p.rank]
        if not graph.names and not graph.extra:
            out.append(p)
            continue
        pos = positions.setdefault(p.rank, graph.position_of()).get(p.node)
        name = graph.names[pos] if graph.names and pos is not None and pos < len(graph.names) else None
        origin = origin_of(name, p.rank, _line_of(graph.extra.get(pos)) if pos is not None else None)
        out.append(replace(p, origin=origin) if origin else p)
    return out
