"""Replace each node of a rank graph by several pieces, keeping the dependency meaning.

Every piece of a node depends on every piece of each of the node's dependencies, so a
successor of a split node waits for all its pieces, and the pieces of one node are concurrent.
"""

from __future__ import annotations

import numpy as np

from ..chakra import RankGraph
from ..chakra._model import COLUMN_NAMES
from ..errors import UsageError
from ..verify._flat import ragged_arange

__all__ = ["check_tag_range", "expand_graph"]

_TAG_MAX = 2**31 - 1  # comm_tag is an int32 in the profile


def expand_graph(g: RankGraph, rep: np.ndarray) -> tuple[RankGraph, np.ndarray, np.ndarray]:
    """Return (new graph, original position of each new node, piece number of each new node).

    Node ``i`` becomes ``rep[i] >= 1`` consecutive nodes; columns are copied from the original,
    ids become the new positions, and names get a ``/piece`` suffix for split nodes.
    """
    n = len(g)
    rep = np.asarray(rep, dtype=np.int64)
    start = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(rep, out=start[1:])
    total = int(start[-1])
    src = np.repeat(np.arange(n, dtype=np.int64), rep)
    piece = np.arange(total, dtype=np.int64) - start[src]
    ptr = g.dep_ptr.astype(np.int64)
    deps = g.dep_pos[: ptr[-1]].astype(np.int64)
    # every dependency edge expands to all pieces of its target
    expanded = ragged_arange(start[deps], rep[deps])
    cum = np.zeros(deps.shape[0] + 1, dtype=np.int64)
    np.cumsum(rep[deps], out=cum[1:])
    e_ptr = cum[ptr]  # node i's expanded deps: expanded[e_ptr[i]:e_ptr[i+1]]
    lens = (e_ptr[1:] - e_ptr[:-1])[src]
    new_ptr = np.zeros(total + 1, dtype=np.int64)
    np.cumsum(lens, out=new_ptr[1:])
    new_pos = expanded[ragged_arange(e_ptr[src], lens)]
    cols = {c: getattr(g, c)[src] for c in COLUMN_NAMES if c != "ids"}
    names = None
    if g.names is not None:
        split = rep[src] > 1
        names = [
            f"{g.names[s]}/{p}" if sp else g.names[s]
            for s, p, sp in zip(src.tolist(), piece.tolist(), split.tolist(), strict=False)
        ]
    out = RankGraph.from_columns(total, dep_ptr=new_ptr, dep_pos=new_pos.astype(np.int32), names=names, **cols)
    return out, src, piece


def check_tag_range(largest: int, transform: str) -> None:
    """Refuse a rewrite whose new tags would not fit the int32 ``comm_tag``."""
    if largest > _TAG_MAX:
        raise UsageError(
            f"{transform}: new message tags would reach {largest}, beyond the int32 tag range",
            hint="use fewer pieces/instances, or renumber the input's tags densely first",
        )
