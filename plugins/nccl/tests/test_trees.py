"""Trees and rings against NCCL's own output: ``ncclGetDtree`` for 1..256, 512, 1024 nodes, and the
per-rank rings/trees of NCCL's search + Preset/Postset on the shared synthetic clusters."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from collhub_nccl._trees import dtree, gpu_rings, gpu_trees

from .conftest import jsonl, system_of


def test_dtree_equal(dtree_rows: list[dict[str, str]]) -> None:
    assert len(dtree_rows) == 34432
    for row in dtree_rows:
        n, r = int(row["nNodes"]), int(row["node"])
        t0, t1 = dtree(n, r)
        assert t0 == tuple(int(row[f"t0_{k}"]) for k in ("up", "down0", "down1", "childType")), (n, r)
        assert t1 == tuple(int(row[f"t1_{k}"]) for k in ("up", "down0", "down1", "childType")), (n, r)


def test_dtree_unseen_sizes_are_trees() -> None:
    for n in (257, 300, 777, 2048, 3000):
        for which in (0, 1):
            ups = [dtree(n, r)[which][0] for r in range(n)]
            assert ups.count(-1) == 1
            for r in range(n):  # walking up always reaches the root within ceil(log2 n) hops
                hops, x = 0, r
                while ups[x] != -1:
                    x, hops = ups[x], hops + 1
                assert hops <= (n - 1).bit_length()


def test_gpu_rings_and_trees_equal(nccl_data: Path) -> None:
    by_label: dict[str, list[dict[str, Any]]] = {}
    for d in jsonl(nccl_data / "trees" / "gpu_rings_trees.jsonl.gz"):
        by_label.setdefault(d["label"], []).append(d)
    checked = 0
    for label, recs in by_label.items():
        if label.startswith("volta_8gpu"):
            continue  # DGX-1 hybrid cube mesh: its orders come from a search over uneven links (not modelled)
        s = system_of(label)
        assert s.channels == recs[0]["nChannels"]
        same = s.nodes == 1 and s.gpus_per_node > 1
        trees = gpu_trees(s.gpus_per_node, s.nodes, s.tree.channels, s.channels, s.tree.pattern, same=same)
        rings = gpu_rings(s.gpus_per_node, s.nodes, s.ring.channels, s.channels, same=same)
        assert recs[0]["treePattern"] == s.tree.pattern
        for d in recs:
            r = d["rank"]
            for c, ch in enumerate(d["channels"]):
                want = (ch["treeUp"], tuple(x for x in ch["treeDown"] if x != -1))
                assert (trees[c][r].up, trees[c][r].down) == want, (label, r, c)
                order = rings[c]
                i = order.index(r)
                assert (order[i - 1], order[(i + 1) % len(order)]) == (ch["ringPrev"], ch["ringNext"]), (label, r, c)
                checked += 1
            if r == 0:
                assert rings == d["rings"], label
    assert checked > 3000
