"""mscclang.ir / mscclang.export on inputs the corpus lacks: hand-written fused rings with cnt > 1
over several channels, lexical variants (CRLF, comments, PIs, BOM, attribute order, gzip),
hostile integers, hasdep semantics; export of chunked algorithms keeps their concurrency."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest

from collhub_mscclang import read_msccl_ir, write_msccl_ir
from hub.errors import ImportFormatError

from . import _symbolic


def _ring_xml(n: int, k: int, chans: int, *, inplace: bool) -> str:
    """MSCCLang's fused ring all-reduce, written by hand (derivation in the comments): every rank
    has one tb per channel; channel c moves the sub-block [c*k/chans, (c+1)*k/chans) of each
    k-chunk block, so every step has cnt = k/chans."""
    w = k // chans
    ib, ob = "i", ("i" if inplace else "o")
    lines = [
        f'<algo name="hand" proto="LL" nchannels="{chans}" nchunksperloop="{n * k}" ngpus="{n}" '
        f'coll="allreduce" inplace="{int(inplace)}" outofplace="{int(not inplace)}" minBytes="0" maxBytes="0">'
    ]
    for r in range(n):
        lines.append(f'  <gpu id="{r}" i_chunks="{n * k}" o_chunks="{0 if inplace else n * k}" s_chunks="0">')
        for c in range(chans):
            lines.append(f'    <tb id="{c}" send="{(r + 1) % n}" recv="{(r - 1) % n}" chan="{c}">')
            # step 0 sends block r; step i (1..n-2) receives block r-i from r-1 (sent at its step
            # i-1), adds the local block and forwards (rrs); step n-1 does so for block r+1 and
            # keeps the total (rrcs); steps n-1+j forward the totals of block r+1-j (rcs); the last
            # step only stores block r+2-n (r).
            steps = [("s", r, ib, ib)]
            steps += [("rrs", (r - i) % n, ib, ib) for i in range(1, n - 1)]
            steps.append(("rrcs", (r + 1) % n, ib, ob))
            steps += [("rcs", (r + 1 - j) % n, ob, ob) for j in range(1, n - 1)]
            steps.append(("r", (r + 2 - n) % n, ob, ob))
            for s, (t, blk, sb, db) in enumerate(steps):
                off = blk * k + c * w
                lines.append(
                    f'      <step s="{s}" type="{t}" srcbuf="{sb}" srcoff="{off}" dstbuf="{db}" '
                    f'dstoff="{off}" cnt="{w}" depid="-1" deps="-1" hasdep="0"/>'
                )
            lines.append("    </tb>")
        lines.append("  </gpu>")
    lines.append("</algo>\n")
    return "\n".join(lines)


@pytest.mark.parametrize("n, k, chans, inplace", [(2, 2, 1, True), (3, 4, 2, True), (5, 6, 3, False), (8, 4, 2, False)])
def test_hand_written_fused_ring_with_cnt_above_one(tmp_path: Path, n: int, k: int, chans: int, inplace: bool) -> None:
    from hub.verify import check

    p = tmp_path / "ring.xml"
    p.write_text(_ring_xml(n, k, chans, inplace=inplace))
    alg = read_msccl_ir(p)
    assert alg.meta.inplace is inplace and alg.meta.in_chunks == n * k
    assert set(alg.graphs[0].count.tolist()) == {k // chans}
    check(alg)
    assert _symbolic.run(alg) == []


def _columns(alg: object) -> list[tuple[list[int], ...]]:
    return [
        (g.kind.tolist(), g.peer.tolist(), g.src_off.tolist(), g.dst_off.tolist(), g.count.tolist(), g.dep_pos.tolist())
        for g in alg.graphs
    ]  # type: ignore[attr-defined]


def test_lexical_variants_import_identically(tmp_path: Path) -> None:
    base = _ring_xml(4, 2, 2, inplace=True)
    ref = _columns(read_msccl_ir(_w(tmp_path / "a.xml", base)))

    def reorder(m: re.Match[str]) -> str:  # reverse attribute order, add an unknown attribute
        attrs = re.findall(r'\w+="[^"]*"', m.group(2))
        return f"<{m.group(1)} " + " ".join(reversed(attrs)) + ' x-extra="1"' + m.group(3)

    variants = {
        "crlf": base.replace("\n", "\r\n"),
        "prolog": '\ufeff<?xml version="1.0" encoding="UTF-8"?>\n<?producer x?>\n<!-- RCCL comment -->\n' + base,
        "reordered": re.sub(r"<(\w+) ([^>]*?)(/?>)", reorder, base),
        "unknown_elements": base.replace("</tb>", "<note>text</note></tb>").replace("<gpu ", "<meta/><gpu "),
        "blanks_in_ints": base.replace('cnt="1"', 'cnt=" 1"'),
        "no_outofplace_min_max": base.replace(' outofplace="0" minBytes="0" maxBytes="0"', ""),  # 2023 format
    }
    for name, text in variants.items():
        assert _columns(read_msccl_ir(_w(tmp_path / f"{name}.xml", text))) == ref, name
    gz = tmp_path / "a.xml.gz"
    gz.write_bytes(gzip.compress(base.encode()))
    assert _columns(read_msccl_ir(gz)) == ref


def _w(p: Path, text: str) -> Path:
    p.write_bytes(text.encode("utf-8"))
    return p


def test_gzip_limits_and_truncation(tmp_path: Path) -> None:
    data = gzip.compress(_ring_xml(4, 2, 1, inplace=True).encode())
    p = tmp_path / "a.xml.gz"
    p.write_bytes(data)
    with pytest.raises(ImportFormatError, match="decompressed XML exceeds the limit of 2000 bytes"):
        read_msccl_ir(p, max_bytes=2000)
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(ImportFormatError, match="cannot read"):
        read_msccl_ir(p)


HEAD = (
    '<algo name="t" proto="Simple" nchannels="1" nchunksperloop="2" ngpus="2" coll="allreduce" inplace="1" '
    'outofplace="0" minBytes="0" maxBytes="0">\n'
)


def _two_ranks(tb0: str, extra_tb: str = "") -> str:
    st = (
        '<step s="{s}" type="{t}" srcbuf="i" srcoff="{o}" dstbuf="i" dstoff="{o}" cnt="1" depid="-1" deps="-1" '
        'hasdep="0"/>'
    )
    return (
        HEAD
        + '<gpu id="0" i_chunks="2" o_chunks="0" s_chunks="0">\n<tb id="0" send="1" recv="1" chan="0">\n'
        + tb0
        + "</tb>\n"
        + extra_tb
        + '</gpu>\n<gpu id="1" i_chunks="2" o_chunks="0" s_chunks="0">\n'
        '<tb id="0" send="0" recv="0" chan="0">\n'
        + st.format(s=0, t="r", o=0)
        + "\n"
        + st.format(s=1, t="s", o=1)
        + "\n</tb>\n</gpu>\n</algo>\n"
    )


GOOD_TB0 = (
    '<step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" '
    'hasdep="0"/>\n'
    '<step s="1" type="r" srcbuf="i" srcoff="1" dstbuf="i" dstoff="1" cnt="1" depid="-1" deps="-1" '
    'hasdep="0"/>\n'
)


@pytest.mark.parametrize(
    "old, new, fragment",
    [
        (
            'nchunksperloop="2"',
            'nchunksperloop="99999999999999999999"',
            "nchunksperloop=99999999999999999999 of <algo> is out of range",
        ),
        ('nchannels="1"', 'nchannels="x"', "nchannels='x' of <algo> is not an integer"),
        ('s_chunks="0"', 's_chunks="4294967296"', "s_chunks=4294967296 of <gpu> is out of range"),
        (
            'srcoff="0" dstbuf="i" dstoff="0" cnt="1"',
            'srcoff="0" dstbuf="i" dstoff="0" cnt="100000000000000000000"',
            "gpu 0 tb 0 step 0: attribute cnt='100000000000000000000' of <step> is out of range",
        ),
        (
            'deps="-1" hasdep="0"/>\n<step s="1"',
            'deps="99999999999999999999" hasdep="0"/>\n<step s="1"',
            "attribute deps='99999999999999999999' of <step> is out of range",
        ),
        (
            'srcoff="0" dstbuf="i" dstoff="0" cnt="1"',
            'srcoff="0" dstbuf="i" dstoff="0" cnt="1_0"',
            "cnt='1_0' of <step> is not an integer",
        ),
        ('<tb id="0" send="1"', '<tb id="\u0661" send="1"', "attribute id='\u0661' of <tb> is not an integer"),
    ],
)
def test_hostile_integers_fail_with_one_line(tmp_path: Path, old: str, new: str, fragment: str) -> None:
    text = _two_ranks(GOOD_TB0)
    assert old in text
    with pytest.raises(ImportFormatError) as ei:
        read_msccl_ir(_w(tmp_path / "t.xml", text.replace(old, new, 1)))
    assert fragment in ei.value.message, ei.value.message


def test_absurd_ngpus_fails_fast(tmp_path: Path) -> None:
    # listing every missing rank of ngpus=2e9 used to exhaust memory
    text = (
        _two_ranks(GOOD_TB0)
        .replace('ngpus="2"', 'ngpus="2000000000"')
        .replace('nchunksperloop="2"', 'nchunksperloop="2000000000"')
    )
    with pytest.raises(ImportFormatError, match=r"no <gpu> for rank\(s\) \[2, 3, 4, 5, 6, 7, 8, 9\]"):
        read_msccl_ir(_w(tmp_path / "t.xml", text))


def _local_tb(steps: str) -> str:
    return '<tb id="1" send="-1" recv="-1" chan="0">\n' + steps + "</tb>\n"


def test_dependency_on_a_step_without_hasdep_waits_for_the_next_publishing_step(tmp_path: Path) -> None:
    # tb 1: s0 re (hasdep=0), s1 cpy (hasdep=1). tb 0's send waits for tb 1 step 0; the runtime
    # publishes no flag after step 0, so the send is released after step 1 (flags only grow)
    tb1 = (
        '<step s="0" type="re" srcbuf="i" srcoff="1" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" '
        'hasdep="0"/>\n'
        '<step s="1" type="cpy" srcbuf="i" srcoff="0" dstbuf="i" dstoff="1" cnt="1" depid="-1" deps="-1" '
        'hasdep="1"/>\n'
    )
    tb0 = GOOD_TB0.replace(
        'type="s" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1"',
        'type="s" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="1" deps="0"',
    )
    alg = read_msccl_ir(_w(tmp_path / "t.xml", _two_ranks(tb0, _local_tb(tb1))), names=True)
    g = alg.graphs[0]
    send = g.names.index("tb0/s0/s")
    assert [g.names[d] for d in g.deps_of(send)] == ["tb1/s1/cpy"]
    # with no later publishing step the GPU would hang: refused, naming the waiting step
    with pytest.raises(ImportFormatError, match=r"gpu 0 tb 0 step 0 \(s\): depends on tb 1 step 0, which has hasdep=0"):
        read_msccl_ir(_w(tmp_path / "t.xml", _two_ranks(tb0, _local_tb(tb1.replace('hasdep="1"', 'hasdep="0"')))))


# -- export -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "algo, coll, n",
    [
        ("ring", "allreduce", 4),
        ("direct", "allreduce", 3),
        ("halving_doubling", "allreduce", 4),
        ("hierarchical", "alltoall", 4),
    ],
)
def test_export_keeps_concurrent_pieces_on_separate_channels(tmp_path: Path, algo: str, coll: str, n: int) -> None:
    # hub.chunk's pieces are separate FIFOs in the profile; on one MSCCL channel they would share
    # one threadblock and run one after the other (the simulated time used to double)
    from hub.algorithms import make
    from hub.sim import simulate
    from hub.transforms import chunk_algorithm

    base = make(algo, coll, n)
    st1 = write_msccl_ir(base, tmp_path / "b.xml")
    for k in (2, 3):
        a = chunk_algorithm(base, k)
        st = write_msccl_ir(a, tmp_path / "a.xml")
        assert st.nchannels == k * st1.nchannels  # one lane per piece
        b = read_msccl_ir(tmp_path / "a.xml", inplace=a.meta.inplace)
        topo = f"fc:{n}"
        assert simulate(b, topo, size="1MiB").time_ns == simulate(a, topo, size="1MiB").time_ns
        assert _symbolic.run(b) == []


def test_sequential_ring_steps_share_one_channel(tmp_path: Path) -> None:
    from hub.algorithms import make

    # a ring's per-step tags follow one another (across ranks), so they stay on one channel
    assert write_msccl_ir(make("ring", "allreduce", 8), tmp_path / "r.xml").nchannels == 1


def test_lanes_fall_back_when_the_target_cannot_take_them(tmp_path: Path) -> None:
    from hub.algorithms import make
    from hub.transforms import chunk_algorithm

    a = chunk_algorithm(make("ring", "alltoall", 8), 3)
    # separate lanes need more than 64 steps in one tb: the executor gets the shared-channel form
    st = write_msccl_ir(a, tmp_path / "e.xml", target="msccl-executor-nccl")
    assert st.max_steps_per_tb <= 64 and st.nchannels == 1
    assert _symbolic.run(read_msccl_ir(tmp_path / "e.xml", inplace=a.meta.inplace)) == []
    assert write_msccl_ir(a, tmp_path / "l.xml", target="msccl-legacy").nchannels == 3
