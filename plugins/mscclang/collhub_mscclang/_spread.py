"""Step spreading for export: deal a long connection's messages over several channels.

An MSCCL threadblock serves one connection (peer, channel, direction) and runs at most the
target's ``max_steps`` steps (64 in the executor and RCCL). A schedule that sends hundreds of
messages over one link (a TACOS greedy's all-reduce on a 256-rank torus: 241 on one link) puts
them all on one threadblock. Here every connection's messages are dealt round robin over
``split`` channels, message ``k`` of connection (src, dst, base channel) going to channel
``base · split + k mod split``:

* both ends agree: the sender's and the receiver's sequences on a connection are the same
  messages in the same order (``channel_map`` checked it), so the k-th SEND meets the k-th RECV
  and each new (src, dst, channel) sees one subsequence of that common order;
* ``split`` = the most messages on one connection over ``per_channel``, at most what the
  target's channel limit leaves per base channel; ``per_channel`` stays well under the step
  limit because a forwarding threadblock holds one receive and one send connection;
* round robin (not blocks) keeps consecutive messages, which the producer pipelines, in
  different threadblocks, so they still overlap.

Nodes other than SEND/RECV keep their base channel (a COMP joins the tb of what it follows).
"""

from __future__ import annotations

import numpy as np

from hub.chakra import Algorithm, NodeType

__all__ = ["spread_channels"]

_SEND, _RECV = int(NodeType.SEND), int(NodeType.RECV)


def _occurrence(keys: np.ndarray) -> np.ndarray:
    """Per entry: how many earlier entries have the same key (entries in program order)."""
    order = np.argsort(keys, kind="stable")
    ks = keys[order]
    first = np.flatnonzero(np.r_[True, ks[1:] != ks[:-1]]) if ks.size else np.zeros(0, dtype=np.int64)
    occ_sorted = np.arange(ks.size) - np.repeat(first, np.diff(np.r_[first, ks.size]))
    occ = np.empty(ks.size, dtype=np.int64)
    occ[order] = occ_sorted
    return occ


def spread_channels(
    alg: Algorithm, chan_of: list[list[int]], per_channel: int, max_channels: int
) -> list[list[int]] | None:
    """Channels with no connection carrying more than ``per_channel`` messages per channel, or
    None when nothing needs spreading or the channel limit leaves no room to spread."""
    n = len(alg.graphs)
    nbase = max((max(row) + 1 for row in chan_of if row), default=1)
    occ_of: list[np.ndarray] = []
    most = 0
    for r, g in enumerate(alg.graphs):
        chan = np.asarray(chan_of[r], dtype=np.int64)
        kind = np.asarray(g.kind)
        peer = np.asarray(g.peer, dtype=np.int64)
        is_send, is_recv = kind == _SEND, kind == _RECV
        # connection key of every message node: (src, dst, base channel), direction included
        src = np.where(is_send, r, peer)
        dst = np.where(is_send, peer, r)
        keys = np.where(is_send | is_recv, (src * n + dst) * nbase + chan, -1)
        occ = np.where(keys >= 0, _occurrence(keys), -1)
        occ_of.append(occ)
        if occ.size:
            most = max(most, int(occ.max()) + 1)
    split = min(-(-most // max(per_channel, 1)), max_channels // nbase)
    if split <= 1:
        return None
    out: list[list[int]] = []
    for r, occ in enumerate(occ_of):
        chan = np.asarray(chan_of[r], dtype=np.int64)
        rest = np.where(chan < 0, chan, chan * split)  # COMP etc. keep their base slot
        out.append(np.where(occ >= 0, chan * split + occ % split, rest).tolist())
    return out
