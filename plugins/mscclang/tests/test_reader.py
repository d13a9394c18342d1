"""mscclang.ir: the corpus imports and verifies; malformed files fail with one precise line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from collhub_mscclang import read_msccl_ir
from hub.chakra import Buffer, Collective, NodeType, Op
from hub.errors import ImportFormatError, SemanticsError, VerificationError

from . import _symbolic
from .mscclang_corpus import corpus_files, histogram, manifest

CHECKFAIL = "mscclang_allreduce_pcie_hierarchical_n8_i1_LL_CHECKFAIL.xml"
FILES = corpus_files()


@pytest.mark.parametrize("name", FILES)
def test_corpus_node_counts_match_manifest(msccl_dir: Path, name: str) -> None:
    row = manifest()[name]
    h = histogram(row)
    get = lambda t: h.get(t, 0)  # noqa: E731
    alg = read_msccl_ir(msccl_dir / name)
    n = lambda k: sum(int(np.count_nonzero(g.kind == k)) for g in alg.graphs)  # noqa: E731
    copies = sum(sum(1 for a in g.extra.values() if dict(a).get("msccl.copy")) for g in alg.graphs)
    # by hand from the step mapping: one SEND per send-type step, one RECV per receive-type
    # step, one COMP per rrc/rrcs/rrs/cpy/re step and per <copy>; nops make no node
    assert n(NodeType.SEND) == get("s") + get("rcs") + get("rrs") + get("rrcs")
    assert n(NodeType.RECV) == get("r") + get("rcs") + get("rrc") + get("rrs") + get("rrcs")
    assert n(NodeType.COMP) == get("rrc") + get("rrcs") + get("rrs") + get("cpy") + get("re") + copies
    assert alg.ranks == int(row["ranks"])
    assert alg.collective is Collective.parse(manifest()[name]["coll"])


@pytest.mark.parametrize("name", [f for f in FILES if f != CHECKFAIL])
def test_corpus_verifies(msccl_dir: Path, name: str) -> None:
    from hub.verify import check

    alg = read_msccl_ir(msccl_dir / name)
    check(alg)
    assert _symbolic.run(alg) == []  # and the independent oracle agrees


def test_checkfail_is_rejected_with_a_semantic_message(msccl_dir: Path) -> None:
    from hub.verify import check, verify

    alg = read_msccl_ir(msccl_dir / CHECKFAIL)
    rep = verify(alg)
    assert not rep.ok
    with pytest.raises(SemanticsError) as ei:
        check(alg)
    text = " ".join(str(p) for p in ei.value.problems)
    assert "double-counts" in text and "rank" in text
    assert _symbolic.run(alg)


def test_ring_mapping_details(msccl_dir: Path) -> None:
    alg = read_msccl_ir(msccl_dir / "mscclang_allreduce_ring_n4_ch1_i1_LL128.xml")
    m = alg.meta
    assert (m.in_chunks, m.out_chunks, m.inplace) == (4, 4, True)
    assert m.scratch_chunks == 1  # one rrs temporary beyond s_chunks=0
    g = alg.graphs[0]
    # step 1 is rrs i3: RECV(COPY) into the temp, COMP REDUCE i3 into it, SEND the temp
    assert g.names[1:4] == ["tb0/s1/rrs.recv", "tb0/s1/rrs.comp", "tb0/s1/rrs.send"]
    assert g.kind[1:4].tolist() == [NodeType.RECV, NodeType.COMP, NodeType.SEND]
    assert (g.peer[1], g.peer[3]) == (3, 1)
    assert (g.dst_buf[1], g.dst_off[1]) == (Buffer.SCRATCH, 0)
    assert (g.op[2], g.src_buf[2], g.src_off[2]) == (Op.REDUCE, Buffer.INPUT, 3)
    assert (g.src_buf[3], g.src_off[3]) == (Buffer.SCRATCH, 0)
    # rrcs i1 (step 3): RECV(REDUCE) into i1, cost-only COMP, SEND i1
    i = g.names.index("tb0/s3/rrcs.recv")
    assert g.op[i] == Op.REDUCE and g.op[i + 1] == Op.NONE and g.src_off[i + 2] == 1
    # the chain: each node depends on the previous one
    assert all(g.deps_of(p).tolist() == [p - 1] for p in range(1, len(g)))


def test_nop_dependencies_fold_into_the_next_step(msccl_dir: Path) -> None:
    alg = read_msccl_ir(msccl_dir / "mscclang_allreduce_allpairs_n8_i2_LL.xml")
    g = alg.graphs[0]
    i = g.names.index("tb0/s6/re")
    deps = sorted(g.names[d] for d in g.deps_of(i))
    # nops s0..s5 wait for tb 4, 6, 8, 10, 12, 14 step 1; the re itself for tb 2 step 1
    assert deps == sorted(f"tb{t}/s1/r" for t in (2, 4, 6, 8, 10, 12, 14))


def test_copy_children_become_copies_first(msccl_dir: Path) -> None:
    alg = read_msccl_ir(msccl_dir / "pregen_teccl_amd32_allgather.xml")
    g = alg.graphs[1]
    assert g.names[:2] == ["copy/i0->o2", "copy/i1->o3"]
    assert g.op[0] == Op.COPY and g.dst_off[0] == 2
    assert dict(alg.meta.extra)["msccl.redop"] == "nop"


def test_file_valid_both_ways_defaults_to_out_of_place(msccl_dir: Path) -> None:
    path = msccl_dir / "pregen_rccl_unittest_allreduce_ring_16n_ll.xml"
    assert read_msccl_ir(path).meta.inplace is False
    assert read_msccl_ir(path, inplace=True).meta.inplace is True


def test_broadcast_root_is_inferred(msccl_dir: Path) -> None:
    assert read_msccl_ir(msccl_dir / "mscclang_broadcast_chain_n8_c4_i1_Simple.xml").meta.root == 0


# -- malformed input ------------------------------------------------------------------------------
HEAD = (
    '<algo name="t" proto="Simple" nchannels="1" nchunksperloop="2" ngpus="2" coll="allreduce" inplace="1" '
    'outofplace="0" minBytes="0" maxBytes="0">\n'
)


def step(s: int, t: str, off: int = 0, cnt: int = 1, depid: int = -1, deps: int = -1, hasdep: int = 0) -> str:
    return (
        f'      <step s="{s}" type="{t}" srcbuf="i" srcoff="{off}" dstbuf="i" dstoff="{off}" cnt="{cnt}" '
        f'depid="{depid}" deps="{deps}" hasdep="{hasdep}"/>\n'
    )


def doc(tb0: str, tb1: str, extra0: str = "") -> str:
    return (
        HEAD + '  <gpu id="0" i_chunks="2" o_chunks="0" s_chunks="0">\n'
        '    <tb id="0" send="1" recv="1" chan="0">\n' + tb0 + "    </tb>\n" + extra0 + "  </gpu>\n"
        '  <gpu id="1" i_chunks="2" o_chunks="0" s_chunks="0">\n'
        '    <tb id="0" send="0" recv="0" chan="0">\n' + tb1 + "    </tb>\n  </gpu>\n</algo>\n"
    )


GOOD0 = step(0, "s", 0) + step(1, "r", 1)
GOOD1 = step(0, "r", 0) + step(1, "s", 1)


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "t.xml"
    p.write_text(text)
    return p


def test_minimal_document_imports(tmp_path: Path) -> None:
    alg = read_msccl_ir(write(tmp_path, doc(GOOD0, GOOD1)))
    assert alg.node_count() == 4


@pytest.mark.parametrize(
    "tb0, tb1, extra0, line, fragment",
    [
        (step(0, "s") + step(1, "ra", 1), GOOD1, "", 5, "'ra' (residual add) is not supported"),
        (step(0, "s") + step(1, "xyz", 1), GOOD1, "", 5, "unknown step type 'xyz'"),
        (step(0, "s") + step(2, "r", 1), GOOD1, "", 5, "step s=2 but s=1 expected"),
        (step(0, "s") + step(1, "r", 5), GOOD1, "", 5, "dstoff=5 cnt=1 out of range"),
        (step(0, "s") + step(1, "r", 1, depid=3, deps=0), GOOD1, "", 5, "depid=3 names no tb"),
        (step(0, "s") + step(1, "r", 1, depid=0, deps=7), GOOD1, "", 5, "deps=7 names no step"),
        # an rrc with a distinct source (lowered in its two-node form) keeps its name in messages
        (
            step(0, "s") + step(1, "rrc", 1, depid=3, deps=0).replace('srcoff="1"', 'srcoff="0"'),
            GOOD1,
            "",
            5,
            "step 1 (rrc): depid=3 names no tb",
        ),
        (step(0, "s") + step(1, "r", 0, cnt=2), GOOD1, "", 5, "transfer 0 has cnt=1 at gpu 1 tb 0 (line 11) but cnt=2"),
        (step(0, "s") + step(1, "nop", -1, cnt=0), GOOD1, "", 5, "nop without a dependency"),
        (
            GOOD0,
            step(0, "r") + step(1, "s", 1) + step(2, "s", 0),
            "",
            3,
            "gpu 1 tb 0 sends 2 message(s) but gpu 0 tb 0 receives 1",
        ),
    ],
)
def test_errors_name_gpu_tb_step_and_line(
    tmp_path: Path, tb0: str, tb1: str, extra0: str, line: int, fragment: str
) -> None:
    p = write(tmp_path, doc(tb0, tb1, extra0))
    with pytest.raises(ImportFormatError) as ei:
        read_msccl_ir(p)
    e = ei.value
    assert fragment in e.message, e.message
    assert e.line == line, e.message
    assert str(p) in e.message


def test_missing_attribute(tmp_path: Path) -> None:
    p = write(tmp_path, doc(step(0, "s").replace(' cnt="1"', ""), GOOD1))
    with pytest.raises(ImportFormatError, match=r":4: gpu 0 tb 0 step 0: attribute 'cnt' of <step> not found"):
        read_msccl_ir(p)


def test_malformed_xml(tmp_path: Path) -> None:
    p = write(tmp_path, doc(GOOD0, GOOD1).replace("</tb>\n  </gpu>\n</algo>", "</gpu>\n</algo>"))
    with pytest.raises(ImportFormatError, match="malformed XML: mismatched tag") as ei:
        read_msccl_ir(p)
    assert ei.value.line == 12


def test_dependency_on_a_nop_is_refused(tmp_path: Path) -> None:
    tb0 = step(0, "s") + step(1, "nop", -1, 0, depid=0, deps=0) + step(2, "r", 1, depid=0, deps=1)
    with pytest.raises(ImportFormatError, match="which is a nop"):
        read_msccl_ir(write(tmp_path, doc(tb0, GOOD1)))


def test_cross_tb_cycle_is_refused(tmp_path: Path) -> None:
    text = (
        HEAD + '  <gpu id="0" i_chunks="2" o_chunks="0" s_chunks="0">\n'
        '    <tb id="0" send="-1" recv="-1" chan="0">\n'
        + step(0, "cpy", 0, depid=1, deps=0, hasdep=1).replace('dstoff="0"', 'dstoff="1"')
        + '    </tb>\n    <tb id="1" send="-1" recv="-1" chan="0">\n'
        + step(0, "cpy", 1, depid=0, deps=0, hasdep=1).replace('dstoff="1"', 'dstoff="0"')
        + '    </tb>\n  </gpu>\n  <gpu id="1" i_chunks="2" o_chunks="0" s_chunks="0"/>\n</algo>\n'
    )
    with pytest.raises(ImportFormatError, match="form a cycle"):
        read_msccl_ir(write(tmp_path, text))


def test_entity_expansion_is_refused(tmp_path: Path) -> None:
    bomb = (
        '<?xml version="1.0"?>\n<!DOCTYPE algo [\n <!ENTITY a "aaaaaaaaaa">\n'
        ' <!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">\n <!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">\n]>\n'
        + HEAD.replace('name="t"', 'name="&c;"')
        + "</algo>\n"
    )
    with pytest.raises(ImportFormatError, match="DOCTYPE") as ei:
        read_msccl_ir(write(tmp_path, bomb))
    assert ei.value.line == 2


def test_size_limit(tmp_path: Path) -> None:
    p = write(tmp_path, doc(GOOD0, GOOD1))
    with pytest.raises(ImportFormatError, match="above the limit of 100 bytes"):
        read_msccl_ir(p, max_bytes=100)


def test_new_format_op_elements_are_refused(tmp_path: Path) -> None:
    p = write(tmp_path, doc('      <op step="0" type="s" buf="i" off="0"/>\n', GOOD1))
    with pytest.raises(ImportFormatError, match="new format"):
        read_msccl_ir(p)


def test_comments_and_unknown_attributes_are_accepted(tmp_path: Path) -> None:
    text = "<!-- a comment -->\n" + doc(GOOD0, GOOD1).replace('maxBytes="0"', 'maxBytes="0" maxcount="1"')
    assert read_msccl_ir(write(tmp_path, text)).ranks == 2


def test_missing_gpu(tmp_path: Path) -> None:
    text = HEAD + '  <gpu id="0" i_chunks="2" o_chunks="0" s_chunks="0"/>\n</algo>\n'
    with pytest.raises(ImportFormatError, match=r"no <gpu> for rank\(s\) \[1\]"):
        read_msccl_ir(write(tmp_path, text))


def test_verification_error_is_not_raised_by_import(msccl_dir: Path) -> None:
    # importing never verifies: a wrong algorithm is still a well-formed one
    try:
        read_msccl_ir(msccl_dir / CHECKFAIL)
    except VerificationError:  # pragma: no cover
        pytest.fail("import must not verify")


def test_reduce_and_custom_collectives(tmp_path: Path) -> None:
    from hub.verify import check

    # reduce to rank 1: rank 0 sends its chunk, rank 1 receives and reduces (rrc)
    body = (
        '  <gpu id="0" i_chunks="1" o_chunks="1" s_chunks="0">\n    <tb id="0" send="1" recv="-1" chan="0">\n'
        + step(0, "s")
        + "    </tb>\n  </gpu>\n"
        '  <gpu id="1" i_chunks="1" o_chunks="1" s_chunks="0">\n    <tb id="0" send="-1" recv="0" chan="0">\n'
        + step(0, "rrc")
        + "    </tb>\n  </gpu>\n</algo>\n"
    )
    head = HEAD.replace('nchunksperloop="2"', 'nchunksperloop="1"')
    alg = read_msccl_ir(write(tmp_path, head.replace('coll="allreduce"', 'coll="reduce"') + body))
    assert alg.collective is Collective.REDUCE and alg.meta.root == 1  # the rank that never sends
    check(alg)
    custom = read_msccl_ir(write(tmp_path, head.replace('coll="allreduce"', 'coll="custom"') + body))
    assert custom.collective is Collective.CUSTOM and (custom.meta.in_chunks, custom.meta.out_chunks) == (1, 1)


def test_unknown_collective(tmp_path: Path) -> None:
    with pytest.raises(ImportFormatError, match="unknown collective coll='sendrecv'"):
        read_msccl_ir(write(tmp_path, doc(GOOD0, GOOD1).replace('coll="allreduce"', 'coll="sendrecv"')))
