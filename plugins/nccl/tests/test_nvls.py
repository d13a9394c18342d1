"""NVLS (one node) and NVLSTree (several nodes) all-reduce: verified with semantics, simulated,
with NCCL's heads, trees and chunks; refused where NCCL would not run them; exported where the
target can say it (the split itself is compared with NCCL's records in test_split.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from collhub_nccl._schedule import plan, schedule
from collhub_nccl._system import network_of, parse_system
from collhub_nccl._trees import dtree
from hub.chakra import ONESIDED as OS, NodeType, Op
from hub.errors import AlgorithmError, ExportError
from hub.sim import simulate
from hub.topology import load_topology
from hub.verify import verify

CASES = [
    # (algorithm, system, size): 16 KiB multiples keep the chunk unit coarse (the verifier's cost);
    # the sizes still leave a short last loop on every channel
    ("NVLS", "dgx-h100", 3 << 20),
    ("NVLS", "hopper:8x1@nic=400G", (5 << 20) + 3 * 16384),
    ("NVLS", "hopper:4x1@nic=400G", 1 << 20),
    ("NVLSTree", "hopper:8x2@nic=400G", (2 << 20) + 16384),
    ("NVLSTree", "hopper:4x3@nic=400G", 3 << 20),  # odd node count: tree 1 is tree 0 shifted
    ("NVLSTree", "hopper:2x5@nic=200G", 1 << 20),
]


def _plan(algo: str, system: str, size: int, **kw: object):  # type: ignore[no-untyped-def]
    s = parse_system(system)
    return plan("allreduce", s.ranks, size, gpus_per_node=s.gpus_per_node, algorithm=algo, system=s, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(("algo", "system", "size"), CASES)
def test_nvls_verifies_and_simulates(algo: str, system: str, size: int) -> None:
    p = _plan(algo, system, size)
    alg = schedule(p)
    rep = verify(alg)
    assert rep.ok and rep.complete, rep.summary()
    meta = dict(alg.meta.extra)
    assert (meta["nccl_algorithm"], meta["nccl_protocol"], alg.meta.producer) == (
        algo,
        "Simple",
        f"nccl.{algo.lower()}",
    )
    assert meta["nccl_nvls_heads"] == p.system.nvls_heads
    assert alg.meta.size == size
    res = simulate(alg, load_topology(network_of(p.system)).to_link_graph(), mode="aware")
    assert res.bound_ns is not None and res.time_ns >= res.bound_ns * 0.999


def test_nvls_moves_each_chunk_through_its_head() -> None:
    """One node, 8 heads: per channel and loop, head h load-reduces chunk h from the 7 others and
    multicasts it back, so every rank sends 2 x 7/8 of its channel's bytes; the switch nodes carry
    the profile's attributes."""
    p = _plan("NVLS", "dgx-h100", 4 << 20)
    alg = schedule(p)
    for r, g in enumerate(alg.graphs):
        sends = g.kind == int(NodeType.SEND)
        for part in p.split.parts:
            on = sends & (g.chan == part.channel)
            assert int(g.size[on].sum()) == 2 * 7 * part.count * 4 // 8, (r, part.channel)
        recv = (g.kind == int(NodeType.RECV)) & (g.op == int(Op.REDUCE))
        maps = {dict(g.extra[int(i)])[OS.MAPPING] for i in np.flatnonzero(recv)}
        assert maps == {OS.SWITCH_REDUCE}
        assert all(dict(a)[OS.GROUP] == tuple(range(8)) and dict(a)[OS.CHANNEL] == "switch" for a in g.extra.values())
    # channel 0's first loop: chunk h is reduced on rank h (its 7 RECV REDUCEs come from the others)
    part = p.split.parts[0]
    chunk_units = part.chunk_bytes // 4
    g3 = alg.graphs[3]
    first = np.flatnonzero((g3.kind == int(NodeType.RECV)) & (g3.op == int(Op.REDUCE)) & (g3.chan == 0))[:7]
    assert sorted(int(x) for x in g3.peer[first]) == [0, 1, 2, 4, 5, 6, 7]
    assert len({int(x) for x in g3.dst_off[first]}) == 1 and int(g3.size[first[0]]) == chunk_units * 4


def test_nvlstree_heads_follow_nccls_two_trees() -> None:
    """4 nodes x 8: head h of node n is rank 8n + h; even channels use tree 0 (node 0 the root),
    odd channels tree 1 (mirrored: node 3 the root); only heads talk across nodes."""
    p = _plan("NVLSTree", "dgx-h100x4", 16 << 20)
    alg = schedule(p)
    for parity in (0, 1):
        ch = parity  # channel 0 / 1
        for nd in range(4):
            up, d0, d1, _ = dtree(4, nd)[parity]
            for h in range(8):
                g = alg.graphs[8 * nd + h]
                on = g.chan == ch
                remote = {int(x) for x in g.peer[on] if int(x) // 8 != nd}
                want = {8 * k + h for k in (up, d0, d1) if k != -1}
                assert remote == want, (parity, nd, h)
    roots = [nd for nd in range(4) if dtree(4, nd)[1][0] == -1]
    assert roots == [3]


@pytest.mark.parametrize(
    ("algo", "system", "words"),
    [
        ("NVLS", "ampere:8x1@nic=200G", "no NVLink SHARP multicast"),
        ("NVLSTree", "volta:8x2@nic=100G", "no NVLink SHARP multicast"),
        ("NVLSTree", "hopper:1x8@nic=400G", "1 GPU per node"),
        ("NVLSTree", "dgx-h100", "disables NVLSTree on one node"),
        ("NVLS", "dgx-h100x4", "CollNet"),
    ],
)
def test_refused_where_nccl_would_not_run_it(algo: str, system: str, words: str) -> None:
    with pytest.raises(AlgorithmError, match=words):
        _plan(algo, system, 1 << 20)


def test_nvls_allgather_is_refused_and_auto_falls_back() -> None:
    with pytest.raises(AlgorithmError, match="not modelled"):
        plan("allgather", 8, 1 << 20, gpus_per_node=8, algorithm="NVLS", system="dgx-h100")


def test_auto_schedules_nvls_and_nvlstree() -> None:
    one = plan("allreduce", 8, 64 << 20, gpus_per_node=8, system="dgx-h100")
    four = plan("allreduce", 32, 64 << 20, gpus_per_node=8, system="dgx-h100x4")
    assert (one.algorithm, one.nccl_pick) == ("NVLS", "NVLS/Simple")
    assert (four.algorithm, four.nccl_pick) == ("NVLSTree", "NVLSTree/Simple")
    assert schedule(four).meta.producer == "nccl.auto"


def test_exports(tmp_path: Path) -> None:
    """MSCCL-IR has no multicast: refused with the reason; an MSCCL++ plan (point-to-point puts
    for the switch stand-ins) re-imports and verifies."""
    mscclang = pytest.importorskip("collhub_mscclang")
    mscclpp = pytest.importorskip("collhub_mscclpp")

    alg = schedule(_plan("NVLS", "hopper:4x1@nic=400G", 1 << 20))
    with pytest.raises(ExportError, match="no multicast"):
        mscclang.write_msccl_ir(alg, tmp_path / "x.xml")
    assert not (tmp_path / "x.xml").exists()
    doc, _stats = mscclpp.algorithm_to_plan(alg)
    back = mscclpp.plan_to_algorithm(mscclpp.parse_plan(doc))
    assert not back.problems
    rep = verify(back.algorithm)
    assert rep.ok and rep.complete, rep.summary()


def test_astrasim_bundle(tmp_path: Path) -> None:
    """ASTRA-sim runs the lowered files unchanged (the os.* attributes are foreign to it): the
    bundle is written and passes the checks for what the real binaries would abort on."""
    astrasim = pytest.importorskip("collhub_astrasim")
    from collhub_astrasim._topology import load_dims

    p = _plan("NVLSTree", "hopper:4x2@nic=400G", 4 << 20)
    b = astrasim.build_bundle(schedule(p), out=tmp_path / "b", dims=load_dims(network_of(p.system)))
    assert (tmp_path / "b" / "network.yml").is_file() and b.files
