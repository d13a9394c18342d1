"""mscclang.export: target rules, threadblocks, nop chains, round trips."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from collhub_mscclang import read_msccl_ir, write_msccl_ir
from hub.chakra import Algorithm, AlgorithmMeta, Collective, NodeType, RankGraphBuilder
from hub.errors import ExportError

from . import _symbolic

ROUND_TRIP = [
    "mscclang_allreduce_ring_n8_ch2_i4_Simple.xml",
    "mscclang_allreduce_allpairs_n8_i2_LL.xml",
    "mscclang_alltoall_two_step_2x8_Simple.xml",
    "pregen_teccl_amd32_allgather.xml",
    "mscclang_reducescatter_allpairs_n8_LL.xml",
    "mscclang_allgather_ring_outofplace_n4.xml",
]


def _ring(n: int = 4, channels: int = 1) -> Algorithm:
    from hub.algorithms import RingParams, produce_ring

    return produce_ring(RingParams(collective="allreduce", ranks=n, channels=channels))


@pytest.mark.parametrize("name", ROUND_TRIP)
def test_round_trip_same_verification_and_time(msccl_dir: Path, tmp_path: Path, name: str) -> None:
    from hub.sim import simulate
    from hub.verify import verify

    a = read_msccl_ir(msccl_dir / name)
    out = tmp_path / "rt.xml"
    write_msccl_ir(a, out, target="msccl-legacy", enforce_limits=False)
    b = read_msccl_ir(out, inplace=a.meta.inplace)
    assert verify(a).ok and verify(b).ok
    assert [len(g) for g in a.graphs] == [len(g) for g in b.graphs]
    # same nodes per rank (positions may differ where redundant dependencies were dropped)
    key = lambda g: sorted(zip(g.kind.tolist(), g.peer.tolist(), g.op.tolist(), g.count.tolist(), strict=False))  # noqa: E731
    assert all(key(x) == key(y) for x, y in zip(a.graphs, b.graphs, strict=False))
    topo = f"switch:{a.ranks}"
    assert simulate(a, topo, size="1MiB").time_ns == simulate(b, topo, size="1MiB").time_ns
    # and XML -> XML is a fixed point from then on
    out2 = tmp_path / "rt2.xml"
    write_msccl_ir(b, out2, target="msccl-legacy", enforce_limits=False)
    assert out.read_bytes() == out2.read_bytes()


def test_fused_ring_matches_the_source_file_step_by_step(msccl_dir: Path, tmp_path: Path) -> None:
    src = msccl_dir / "mscclang_allreduce_ring_n8_ch1_i1_LL128.xml"
    write_msccl_ir(read_msccl_ir(src), tmp_path / "x.xml")
    steps = lambda p: [(s.get("type"), s.get("srcoff"), s.get("cnt")) for s in ET.parse(p).iter("step")]  # noqa: E731
    assert steps(tmp_path / "x.xml") == steps(src)


def test_tb_rules_on_hub_ring(tmp_path: Path) -> None:
    alg = _ring(4, channels=2)
    for fuse in (True, False):
        out = tmp_path / f"r{fuse}.xml"
        st = write_msccl_ir(alg, out, fuse=fuse)
        root = ET.parse(out).getroot()
        for gpu in root.iter("gpu"):
            conns = set()
            for tb in gpu.iter("tb"):
                types = {s.get("type") for s in tb.iter("step")}
                for attr, kinds in (
                    ("send", {"s", "rcs", "rrs", "rrcs"}),
                    ("recv", {"r", "rcs", "rrc", "rrs", "rrcs"}),
                ):
                    if types & kinds:
                        assert int(tb.get(attr)) >= 0
                        key = (attr, tb.get(attr), tb.get("chan"))
                        assert key not in conns  # one tb per (peer, channel, direction)
                        conns.add(key)
                if not fuse:
                    assert types <= {"s", "r", "rrc", "cpy", "re", "nop"}
        assert root.get("nchannels") == "2"
        assert (st.fused > 0) == fuse
        assert _symbolic.run(read_msccl_ir(out)) == []


def _fan_in() -> Algorithm:
    """Rank 0 receives from ranks 1, 2, 3 and then reduces locally: one step, three deps."""
    n = 4
    bs = [RankGraphBuilder(r) for r in range(n)]
    rec = [bs[0].recv(q, dst=(2, q - 1), count=1, tag=0) for q in (1, 2, 3)]
    last = bs[0].comp(2, src=(2, 0), dst=(0, 0), count=1, deps=rec)
    last = bs[0].comp(2, src=(2, 1), dst=(0, 0), count=1, deps=[last])
    bs[0].comp(2, src=(2, 2), dst=(0, 0), count=1, deps=[last])
    for q in (1, 2, 3):
        bs[q].send(0, src=(0, 0), count=1, tag=0)
    meta = AlgorithmMeta(
        collective=Collective.REDUCE, ranks=n, in_chunks=1, out_chunks=1, scratch_chunks=3, inplace=True, name="fanin"
    )
    return Algorithm(meta, tuple(b.build() for b in bs))


def test_nop_chains_and_hasdep(tmp_path: Path) -> None:
    from hub.verify import check

    alg = _fan_in()
    check(alg)
    out = tmp_path / "f.xml"
    st = write_msccl_ir(alg, out)
    gpu0 = next(g for g in ET.parse(out).getroot().iter("gpu") if g.get("id") == "0")
    tbs = {int(tb.get("id")): tb for tb in gpu0.iter("tb")}
    local = next(tb for tb in tbs.values() if tb.get("send") == "-1" and tb.get("recv") == "-1")
    steps = list(local.iter("step"))
    assert [s.get("type") for s in steps] == ["nop", "nop", "re", "re", "re"]
    assert st.nops == 2
    for s in steps[:3]:  # each nop and the step after it carry exactly one dependency
        dep_tb = tbs[int(s.get("depid"))]
        target = list(dep_tb.iter("step"))[int(s.get("deps"))]
        assert target.get("type") == "r" and target.get("hasdep") == "1"
    assert {s.get("depid") for s in steps[:3]} == {str(t) for t, tb in tbs.items() if tb.get("recv") != "-1"}
    assert all(s.get("depid") == "-1" for s in steps[3:])
    back = read_msccl_ir(out)
    check(back)


@pytest.mark.parametrize(
    "target, coll, oop, minb, maxb",
    [
        ("msccl-executor-nccl", "reducescatter", "0", "0", "0"),
        ("rccl", "reducescatter", "0", "0", "0"),
        ("msccl-legacy", "reduce_scatter", None, "0", str(1 << 62)),
    ],
)
def test_target_spelling_and_size_window(
    msccl_dir: Path, tmp_path: Path, target: str, coll: str, oop: str | None, minb: str, maxb: str
) -> None:
    alg = read_msccl_ir(msccl_dir / "mscclang_reducescatter_allpairs_n8_LL.xml")
    out = tmp_path / "rs.xml"
    write_msccl_ir(alg, out, target=target, enforce_limits=False)
    root = ET.parse(out).getroot()
    assert root.get("coll") == coll
    assert root.get("outofplace") == oop
    assert (root.get("minBytes"), root.get("maxBytes")) == (minb, maxb)


def test_size_window_is_inclusive_everywhere(tmp_path: Path) -> None:
    alg = _ring(4)
    write_msccl_ir(alg, tmp_path / "e.xml", min_bytes=1024, max_bytes=65536)
    write_msccl_ir(alg, tmp_path / "l.xml", target="msccl-legacy", min_bytes=1024, max_bytes=65536)
    assert ET.parse(tmp_path / "e.xml").getroot().get("maxBytes") == "65536"
    assert ET.parse(tmp_path / "l.xml").getroot().get("maxBytes") == "65537"  # old runtime: exclusive


def test_custom_is_refused_by_the_executor(tmp_path: Path) -> None:
    alg = _ring(4).with_meta(collective=Collective.CUSTOM)
    with pytest.raises(ExportError, match="does not load coll='custom'"):
        write_msccl_ir(alg, tmp_path / "c.xml")
    write_msccl_ir(alg, tmp_path / "c.xml", target="msccl-legacy")
    assert ET.parse(tmp_path / "c.xml").getroot().get("coll") == "custom"


def test_step_limit_is_enforced_and_nothing_is_written(msccl_dir: Path, tmp_path: Path) -> None:
    alg = read_msccl_ir(msccl_dir / "mscclang_allreduce_ring_n64_ch1_i1_LL128.xml")
    out = tmp_path / "big.xml"
    # its own threadblocks kept: 127 steps on one tb, which the executor cannot run
    with pytest.raises(ExportError, match="has 127 steps; msccl-executor-nccl allows 64"):
        write_msccl_ir(alg, out, threadblocks="keep")
    assert not out.exists() and list(tmp_path.iterdir()) == []
    write_msccl_ir(alg, out, target="msccl-legacy", threadblocks="keep")  # 127 <= 256
    assert out.exists()


def test_long_connections_are_spread_over_channels(msccl_dir: Path, tmp_path: Path) -> None:
    alg = read_msccl_ir(msccl_dir / "mscclang_allreduce_ring_n64_ch1_i1_LL128.xml")
    # the same ring for the executor: every link's 126 messages dealt over channels
    st = write_msccl_ir(alg, tmp_path / "e.xml", verify=True)
    assert st.max_steps_per_tb <= 64 and 1 < st.nchannels <= 32
    back = read_msccl_ir(tmp_path / "e.xml", inplace=alg.meta.inplace)
    assert _symbolic.run(back) == []
    # the MSCCL-IR order of each channel is one subsequence of the link's order, at both ends
    for r in (0, 17, 63):
        sends = [int(t) for t, k in zip(back.graphs[r].chan, back.graphs[r].kind, strict=True) if k == NodeType.SEND]
        assert sorted(set(sends)) == list(range(st.nchannels))


def test_tb_limit_of_rccl(msccl_dir: Path, tmp_path: Path) -> None:
    alg = read_msccl_ir(msccl_dir / "pregen_rccl_allgather_8n_128kb_1mb.xml")
    write_msccl_ir(alg, tmp_path / "ok.xml", target="rccl")  # 56 tbs per GPU <= 64
    assert ET.parse(tmp_path / "ok.xml").getroot().get("nchannels") == "32"


@pytest.mark.parametrize(
    "name",
    [
        "mscclang_allreduce_ring_n8_ch2_i4_Simple.xml",
        "pregen_teccl_amd32_allgather.xml",
        "mscclang_alltoall_two_step_2x8_Simple.xml",
        "sccl_allgather_dgx1_steps2.xml",
    ],
)
def test_round_trip_through_chakra_et_files(msccl_dir: Path, tmp_path: Path, name: str) -> None:
    """XML -> Chakra ET files -> XML -> Chakra ET files: same verdict, same simulated time."""
    from hub.chakra import read_algorithm, write_algorithm
    from hub.sim import simulate
    from hub.verify import verify

    a = read_msccl_ir(msccl_dir / name)
    write_algorithm(a, tmp_path / "a")
    write_msccl_ir(read_algorithm(tmp_path / "a"), tmp_path / "b.xml", target="msccl-legacy")
    write_algorithm(read_msccl_ir(tmp_path / "b.xml", inplace=a.meta.inplace), tmp_path / "b")
    b = read_algorithm(tmp_path / "b")
    assert verify(a).ok and verify(b).ok
    topo = f"switch:{a.ranks}"
    assert simulate(a, topo, size="4MiB").time_ns == simulate(b, topo, size="4MiB").time_ns


PRODUCERS = [
    ("ring", "allreduce"),
    ("ring", "allgather"),
    ("ring", "reducescatter"),
    ("ring", "alltoall"),
    ("ring", "broadcast"),
    ("ring", "reduce"),
    ("direct", "allreduce"),
    ("direct", "alltoall"),
    ("halving_doubling", "allreduce"),
    ("double_binary_tree", "allreduce"),
    ("double_binary_tree", "broadcast"),
]


@pytest.mark.parametrize("producer, coll", PRODUCERS)
def test_any_builtin_algorithm_exports(tmp_path: Path, producer: str, coll: str) -> None:
    """hub.* producers -> MSCCL-IR -> import: still correct; same simulated time where each
    connection's transfers are already ordered by dependencies (all of these but the ring all-to-all)."""
    import hub.algorithms as A
    from hub.sim import simulate
    from hub.verify import check

    fn = getattr(A, f"produce_{producer}")
    params = getattr(
        A,
        {
            "ring": "RingParams",
            "direct": "DirectParams",
            "halving_doubling": "HalvingDoublingParams",
            "double_binary_tree": "DoubleBinaryTreeParams",
        }[producer],
    )
    a = fn(params(collective=coll, ranks=8))
    out = tmp_path / "x.xml"
    write_msccl_ir(a, out)
    b = read_msccl_ir(out, inplace=a.meta.inplace, root=a.meta.root)
    check(b)
    ta = simulate(a, "switch:8", size="1MiB").time_ns
    tb = simulate(b, "switch:8", size="1MiB").time_ns
    if (producer, coll) == ("ring", "alltoall"):  # its shrinking messages on one connection get serialized
        assert 0 <= tb - ta <= 10
    else:
        assert ta == tb


def test_verify_option_refuses_a_wrong_algorithm(msccl_dir: Path, tmp_path: Path) -> None:
    wrong = read_msccl_ir(msccl_dir / "mscclang_allreduce_pcie_hierarchical_n8_i1_LL_CHECKFAIL.xml")
    out = tmp_path / "w.xml"
    with pytest.raises(ExportError, match="fails verification: .*double-counts"):
        write_msccl_ir(wrong, out, verify=True)
    assert list(tmp_path.iterdir()) == []  # nothing half-written
    good = read_msccl_ir(msccl_dir / "mscclang_allreduce_ring_n8_ch1_i1_LL128.xml")
    write_msccl_ir(good, out, verify=True)
    assert out.exists()
