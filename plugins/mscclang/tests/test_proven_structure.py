"""The import's proven structure (``hub.verify``'s ``structure_proven``): the reader checks every
structure-level fact while lowering, so the verifier may skip that level for its algorithms. The
reports must be the same with and without the switch, on every corpus file and on files mutated
into semantic errors, deadlocks and mismatched messages that the reader still accepts."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from collhub_mscclang import read_msccl_ir
from collhub_mscclang._components import produce_ir
from collhub_mscclang._params import IRParams
from hub.errors import ImportFormatError
from hub.verify import verify

from .mscclang_corpus import CORPUS, corpus_files


def _both(path: Path) -> tuple[str, str]:
    alg = read_msccl_ir(path)
    return repr(verify(alg)), repr(verify(alg, structure_proven=True))


@pytest.mark.parametrize("name", corpus_files())
def test_every_corpus_file_gets_the_same_report(msccl_dir: Path, name: str) -> None:
    checked, proven = _both(msccl_dir / name)
    assert checked == proven


def test_an_exported_unfused_ring_gets_the_same_report(tmp_path: Path) -> None:
    """The shape of the benchmark's 128-rank file (s/r/rrc), smaller."""
    from collhub_mscclang import write_msccl_ir
    from hub.algorithms import RingParams, produce_ring

    out = tmp_path / "ring.xml"
    write_msccl_ir(produce_ring(RingParams(collective="allreduce", ranks=16)), out, fuse=False, enforce_limits=False)
    alg = read_msccl_ir(out)
    rep = verify(alg)
    assert rep.ok and repr(rep) == repr(verify(alg, structure_proven=True))


_NUMBER = re.compile(rb'(?:srcoff|dstoff|cnt|depid|deps|hasdep)="(-?[0-9]+)"')
_SOURCES = [
    "mscclang_allreduce_ring_n4_ch1_i1_LL128.xml",
    "mscclang_allgather_ring_outofplace_n4.xml",
    "pregen_rccl_allreduce_1step_4n_ll_1pass.xml",
]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.sampled_from(_SOURCES), st.lists(st.tuples(st.integers(0, 10**6), st.integers(-1, 9)), min_size=1, max_size=3)
)
def test_fuzz_mutated_files_the_reader_accepts_get_the_same_report(
    tmp_path: Path, source: str, numbers: list[tuple[int, int]]
) -> None:
    """Changed offsets, counts and dependencies: whatever the reader accepts (wrong data, a
    deadlock, a race), the verifier reports the same with the structure level skipped."""
    data = (CORPUS / source).read_bytes()
    for k, value in numbers:
        spans = [m.span(1) for m in _NUMBER.finditer(data)]
        a, b = spans[k % len(spans)]
        data = data[:a] + str(value).encode() + data[b:]
    path = tmp_path / "m.xml"
    path.write_bytes(data)
    try:
        checked, proven = _both(path)
    except ImportFormatError:
        return  # refused by the reader: nothing reaches the verifier
    assert checked == proven


def test_the_import_verifies_with_the_structure_proven(monkeypatch: pytest.MonkeyPatch, msccl_dir: Path) -> None:
    """``produce mscclang.ir`` (default and verify=true) does not re-run the structure level:
    replacing its per-node checks by a failure changes nothing."""
    import hub.verify._api as api

    def fail(*_: object) -> None:
        raise AssertionError("check_structure ran")

    monkeypatch.setattr(api, "check_structure", fail)
    for verify_param in (None, True):
        alg = produce_ir(
            IRParams(path=msccl_dir / "mscclang_allreduce_ring_n8_ch1_i1_LL128.xml", verify=verify_param), None
        )
        assert alg.ranks == 8
