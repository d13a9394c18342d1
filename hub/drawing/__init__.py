"""Pictures of an algorithm's DAG: one rank's, or all ranks with message edges between them.

* ``to_dot``: Graphviz DOT text (render with ``dot -Tsvg``); written by collhub, no dependency.
* ``to_graphml``: GraphML, the format MLCommons' ``chakra_visualizer`` writes (it uses networkx):
  opens in yEd, Gephi, Cytoscape and ``networkx.read_graphml``; written by collhub, no dependency.
* ``to_svg``: an SVG drawn by matplotlib (lazily imported) with a layered layout: dependency
  depth left to right, one band per rank.

See ``docs/cli.md`` (``collhub trace show PREFIX --graph dot|graphml|svg [--rank R]``).
"""

from __future__ import annotations

from ._export import to_dot, to_graphml
from ._model import DagView, dag_view
from ._svg import to_svg

__all__ = ["DagView", "dag_view", "to_dot", "to_graphml", "to_svg"]
