"""DOT and GraphML text of a :class:`DagView` (escaped; deterministic order)."""

from __future__ import annotations

from xml.sax.saxutils import escape, quoteattr

from ..chakra import Algorithm
from ._model import DagView, dag_view

__all__ = ["to_dot", "to_graphml"]

_FILL = {"SEND": "#9ecae1", "RECV": "#a1d99b", "COMP": "#fc9272"}


def _dot_str(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(alg: Algorithm | DagView, rank: int | None = None) -> str:
    """Graphviz DOT: a cluster per rank, solid dependency edges, dashed message edges."""
    view = alg if isinstance(alg, DagView) else dag_view(alg, rank)
    lines = [
        f"digraph {_dot_str(view.name or 'algorithm')} {{",
        "  rankdir=LR;",
        '  node [shape=box, style="rounded,filled", fontsize=10];',
    ]
    by_rank: dict[int, list[str]] = {}
    for n in view.nodes:
        fill = _FILL.get(n.kind, "#dddddd")
        by_rank.setdefault(n.rank, []).append(f'    {n.key} [label={_dot_str(n.label)}, fillcolor="{fill}"];')
    for r, body in by_rank.items():
        lines += [f"  subgraph cluster_rank{r} {{", f'    label="rank {r}";', *body, "  }"]
    lines += [f"  {a} -> {b};" for a, b in view.deps]
    lines += [f'  {a} -> {b} [style=dashed, color="#555555", constraint=false];' for a, b in view.messages]
    lines.append("}")
    return "\n".join(lines) + "\n"


_NODE_KEYS = (
    ("rank", "int"),
    ("id", "long"),
    ("type", "string"),
    ("name", "string"),
    ("peer", "int"),
    ("size", "long"),
    ("tag", "int"),
    ("depth", "int"),
)


def to_graphml(alg: Algorithm | DagView, rank: int | None = None) -> str:
    """GraphML with node attributes rank, id, type, name, peer, size, tag, depth and an edge
    attribute ``kind`` (``dep`` or ``message``)."""
    view = alg if isinstance(alg, DagView) else dag_view(alg, rank)
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        '<graphml xmlns="http://graphml.graphdrawing.org/xmlns" '
        'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
        'xsi:schemaLocation="http://graphml.graphdrawing.org/xmlns '
        'http://graphml.graphdrawing.org/xmlns/1.0/graphml.xsd">',
    ]
    out += [f'  <key id="{k}" for="node" attr.name="{k}" attr.type="{t}"/>' for k, t in _NODE_KEYS]
    out.append('  <key id="kind" for="edge" attr.name="kind" attr.type="string"/>')
    out.append(f'  <graph id={quoteattr(view.name or "algorithm")} edgedefault="directed">')
    for n in view.nodes:
        values = {
            "rank": n.rank,
            "id": n.id,
            "type": n.kind,
            "name": n.label.split("\n")[-1] if "\n" in n.label else "",
            "peer": n.peer,
            "size": n.size,
            "tag": n.tag,
            "depth": n.depth,
        }
        data = "".join(f'<data key="{k}">{escape(str(v))}</data>' for k, v in values.items() if v not in (None, ""))
        out.append(f'    <node id="{n.key}">{data}</node>')
    for i, (a, b) in enumerate(view.deps):
        out.append(f'    <edge id="d{i}" source="{a}" target="{b}"><data key="kind">dep</data></edge>')
    for i, (a, b) in enumerate(view.messages):
        out.append(f'    <edge id="m{i}" source="{a}" target="{b}"><data key="kind">message</data></edge>')
    out += ["  </graph>", "</graphml>"]
    return "\n".join(out) + "\n"
