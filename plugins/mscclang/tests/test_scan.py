"""The reader's fast path (``_scan``) against its general expat path: the same algorithm (columns,
names, ``source.line``, metadata) on every corpus file, the same result or the same error on
mutated files, and the general path for every file outside the canonical subset."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from collhub_mscclang import read_msccl_ir
from collhub_mscclang._reader import DEFAULT_MAX_BYTES, MAX_TOKEN_BYTES, _read, _Reader
from collhub_mscclang._scan import scan
from hub.chakra import Algorithm
from hub.errors import ImportFormatError

from .mscclang_corpus import CORPUS, corpus_files

SMALL = CORPUS / "mscclang_allreduce_ring_n4_ch1_i1_LL128.xml"

pytestmark = pytest.mark.skipif(not SMALL.is_file(), reason=f"the MSCCL-IR corpus is not at {CORPUS}")


def _digest(alg: Algorithm) -> str:
    """Everything an import decides: metadata, columns, dependencies, names and extras."""
    h = hashlib.sha256(repr(alg.meta).encode())
    for g in alg.graphs:
        g.digest(h)
        h.update(repr((g.names, sorted(g.extra.items()))).encode())
    return h.hexdigest()


def _fast(path: Path, names: bool) -> Algorithm | None:
    rd = _Reader(path, max_bytes=DEFAULT_MAX_BYTES, names=names)
    return scan(rd, path.read_bytes(), MAX_TOKEN_BYTES)


def _general(path: Path, names: bool | None) -> Algorithm:
    return _read(path, name=None, max_bytes=DEFAULT_MAX_BYTES, inplace=None, root=None, names=names, fast=False)


def _outcome(read: object, path: Path) -> tuple[object, ...]:
    try:
        return ("ok", _digest(read(path)))  # type: ignore[operator]
    except ImportFormatError as e:
        return ("error", str(e), e.line, e.hint)


@pytest.mark.parametrize("name", corpus_files())
@pytest.mark.parametrize("names", [True, False])
def test_every_corpus_file_takes_the_fast_path_and_reads_the_same(msccl_dir: Path, name: str, names: bool) -> None:
    path = msccl_dir / name
    fast = _fast(path, names)
    assert fast is not None, "msccl-tools' and RCCL's files are in the canonical subset"
    assert _digest(fast) == _digest(_general(path, names))


@pytest.mark.parametrize("name", corpus_files())
def test_every_corpus_file_writes_the_same_et_on_both_paths(tmp_path: Path, msccl_dir: Path, name: str) -> None:
    """What a user gets from `produce mscclang.ir`: the ET files of the fast path (gpus lowered
    in batches) and of the general path (one gpu at a time) are byte for byte the same."""
    from hub.chakra import write_algorithm

    path = msccl_dir / name
    fast = _fast(path, path.stat().st_size <= 512 * 1024)
    assert fast is not None
    a = write_algorithm(fast, tmp_path / "fast" / "a")
    b = write_algorithm(_general(path, None), tmp_path / "general" / "a")
    assert [p.read_bytes() for p in a] == [p.read_bytes() for p in b]


def test_an_exported_file_takes_the_fast_path(tmp_path: Path) -> None:
    """mscclang.export writes the subset too (so round trips are fast)."""
    from collhub_mscclang import write_msccl_ir
    from hub.algorithms import RingParams, produce_ring

    out = tmp_path / "ring.xml"
    write_msccl_ir(produce_ring(RingParams(collective="allreduce", ranks=6)), out, fuse=False)
    fast = _fast(out, True)
    assert fast is not None and _digest(fast) == _digest(_general(out, True))


def _variants() -> list[tuple[str, bytes]]:
    """The small ring rewritten in ways XML allows but the subset does not: the same algorithm.
    Empty without the corpus (read at collection, so it must not fail there)."""
    if not SMALL.is_file():
        return []
    text = SMALL.read_bytes()
    step = re.search(rb"<step [^>]*/>", text)
    assert step is not None
    s = step.group()
    reordered = b"<step " + b" ".join(sorted(s[6:-2].split(b" "), reverse=True)) + b"/>"
    return [
        ("crlf", text.replace(b"\n", b"\r\n")),
        ("comment-in-tb", text.replace(s, s + b"<!-- a note -->", 1)),
        ("single-quotes", text.replace(b'srcbuf="i"', b"srcbuf='i'", 1)),
        ("reordered-attributes", text.replace(s, reordered, 1)),
        ("character-reference", text.replace(b'cnt="1"', b'cnt="&#49;"', 1)),
        ("unknown-element", text.replace(b"</gpu>", b"<note/></gpu>", 1)),
        ("tab-between-attributes", text.replace(b'" type=', b'"\ttype=', 1)),
        ("blank-around-equals", text.replace(b' cnt="', b' cnt = "', 1)),
        ("text-in-tb", text.replace(s, s + b"words", 1)),
        ("bom", b"\xef\xbb\xbf" + text),
        ("cdata", text.replace(b"</gpu>", b"<![CDATA[<step/>]]></gpu>", 1)),
        ("pi", text.replace(b"</gpu>", b"<?app x?></gpu>", 1)),
        ("extra-step-attribute", text.replace(b'hasdep="', b'x="1" hasdep="', 1)),
        ("empty-step-element", text.replace(s, s[:-2] + b"></step>", 1)),
    ]


@pytest.mark.parametrize("case, data", _variants(), ids=[c for c, _ in _variants()])
def test_files_outside_the_subset_take_the_general_path(tmp_path: Path, case: str, data: bytes) -> None:
    path = tmp_path / f"{case}.xml"
    path.write_bytes(data)
    assert _fast(path, False) is None
    assert _digest(read_msccl_ir(path, names=False)) == _digest(read_msccl_ir(SMALL, names=False))


def _refusals() -> list[tuple[str, bytes, str]]:
    if not SMALL.is_file():  # read at collection, like _variants
        return []
    text = SMALL.read_bytes()
    gpu1 = re.search(rb"<gpu id=\"1\".*?</gpu>", text, re.S)
    assert gpu1 is not None
    return [
        ("ra", text.replace(b'type="rrs"', b'type="ra"', 1), "'ra' \\(residual add\\) is not supported"),
        ("unknown-type", text.replace(b'type="rrs"', b'type="put"', 1), "unknown step type 'put'"),
        ("repeated-gpu", text.replace(gpu1.group(), gpu1.group().replace(b'id="1"', b'id="0"', 1)), "appears twice"),
        ("int32-overflow", text.replace(b'cnt="1"', b'cnt="2147483648"', 1), "out of range"),
        ("s-out-of-order", text.replace(b'<step s="1"', b'<step s="2"', 1), "s=1 expected"),
        ("unmatched-cnt", text.replace(b'cnt="1"', b'cnt="2"', 1), "cnt"),
    ]


@pytest.mark.parametrize("case, data, message", _refusals(), ids=[c for c, _, _ in _refusals()])
def test_a_refused_canonical_file_is_reported_by_the_general_path(
    tmp_path: Path, case: str, data: bytes, message: str
) -> None:
    """The fast path never words an error: a bad file in the subset gets the general message."""
    path = tmp_path / f"{case}.xml"
    path.write_bytes(data)
    assert _fast(path, True) is None
    with pytest.raises(ImportFormatError, match=message) as exc:
        read_msccl_ir(path)
    assert _outcome(read_msccl_ir, path) == _outcome(lambda p: _general(p, None), path)
    assert exc.value.line is not None and exc.value.line > 1


_NUMBER = re.compile(rb'="(-?[0-9]+)"')
_FUZZ = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)


@_FUZZ
@given(
    st.lists(st.tuples(st.integers(0, 10**6), st.integers(-3, 70)), max_size=3),
    st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 6), st.binary(max_size=6)), max_size=2),
)
def test_fuzz_both_paths_agree(
    tmp_path: Path, numbers: list[tuple[int, int]], edits: list[tuple[int, int, bytes]]
) -> None:
    """Changed numbers (staying in the subset) and raw byte edits (mostly leaving it): the same
    algorithm or the same error, with its line and hint, on both paths."""
    data = SMALL.read_bytes()
    spans = [m.span(1) for m in _NUMBER.finditer(data)]
    for k, value in numbers:
        a, b = spans[k % len(spans)]
        data = data[:a] + str(value).encode() + data[b:]
        spans = [m.span(1) for m in _NUMBER.finditer(data)]
    buf = bytearray(data)
    for pos, cut, new in edits:
        pos %= len(buf) + 1
        buf[pos : pos + cut] = new
    path = tmp_path / "m.xml"
    path.write_bytes(bytes(buf))
    assert _outcome(lambda p: read_msccl_ir(p, names=True), path) == _outcome(lambda p: _general(p, True), path)


_STEP_SPAN = re.compile(rb"<step [^>]*/>")
# what a step's text is made of, and what may break it: blanks, quotes, markup, signs, digits, letters
_STEP_ALPHABET = b' \t\n"<>/=-09iosrcnypedb'
_STEP_BYTES = st.binary(max_size=4).map(lambda b: bytes(_STEP_ALPHABET[c % len(_STEP_ALPHABET)] for c in b))


@_FUZZ
@given(st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 120), st.integers(0, 3), _STEP_BYTES), max_size=3))
def test_fuzz_edits_inside_steps_read_the_same(tmp_path: Path, edits: list[tuple[int, int, int, bytes]]) -> None:
    """Edits inside the steps' text (what _check_step_text proves without a regex): a blank more
    or less, a quote, '<' or '/' in the wrong place, a renamed attribute or buffer, a sign or digit
    in a word: the same algorithm or the same error on both paths."""
    buf = bytearray(SMALL.read_bytes())
    for k, offset, cut, new in edits:
        steps = list(_STEP_SPAN.finditer(buf))
        if not steps:
            break
        m = steps[k % len(steps)]
        pos = m.start() + offset % (m.end() - m.start() + 1)
        buf[pos : pos + cut] = new
    path = tmp_path / "m.xml"
    path.write_bytes(bytes(buf))
    assert _outcome(lambda p: read_msccl_ir(p, names=True), path) == _outcome(lambda p: _general(p, True), path)


@pytest.mark.parametrize(
    "case, old, new",
    [
        ("long-buffer-name", b'srcbuf="i"', b'srcbuf="input"'),
        ("empty-buffer-name", b'dstbuf="i"', b'dstbuf=""'),
        ("blank-before-close", b'"/>', b'" />'),
        ("no-blank-before-step", b'\n      <step s="1"', b'<step s="1"'),
    ],
)
def test_steps_at_the_edge_of_the_subset(tmp_path: Path, case: str, old: bytes, new: bytes) -> None:
    """Well-formed steps the fast path declines (other buffer names, a blank before '/>') or takes
    (steps without blanks between them): the same result as the general path either way."""
    data = SMALL.read_bytes()
    assert old in data
    path = tmp_path / f"{case}.xml"
    path.write_bytes(data.replace(old, new, 1))
    assert (_fast(path, True) is None) == (case != "no-blank-before-step")
    assert _outcome(lambda p: read_msccl_ir(p, names=True), path) == _outcome(lambda p: _general(p, True), path)


@pytest.mark.parametrize("batch", [1, 7, 100])
def test_columns_read_in_batches_of_gpus_are_the_same(
    monkeypatch: pytest.MonkeyPatch, msccl_dir: Path, batch: int
) -> None:
    """The fast path reads step columns for several gpus at once; any batch size gives one result."""
    import collhub_mscclang._scan as scan_module

    monkeypatch.setattr(scan_module, "_BATCH_STEPS", batch)
    for name in ("mscclang_allreduce_allpairs_n8_i2_LL.xml", "pregen_teccl_amd32_allgather.xml"):
        fast = _fast(msccl_dir / name, True)
        assert fast is not None and _digest(fast) == _digest(_general(msccl_dir / name, True)), name


_ONE = b'<algo name="one" proto="Simple" nchannels="1" nchunksperloop="1" ngpus="1" coll="allreduce" inplace="1">'
_GPU = b'<gpu id="0" i_chunks="1" o_chunks="0" s_chunks="0">'
_TB = b'<tb id="0" send="-1" recv="-1" chan="0"'


_GPU = b'<gpu id="0" i_chunks="1" o_chunks="0" s_chunks="0">'
_TB = b'<tb id="0" send="-1" recv="-1" chan="0"'


@pytest.mark.parametrize(
    "case, data",
    [
        ("no-tb", _ONE + _GPU + b"</gpu></algo>"),
        ("empty-tb", _ONE + _GPU + _TB + b"/></gpu></algo>"),
        ("blank-tb", _ONE + _GPU + b"\n" + _TB + b">\n </tb>\n</gpu>\n</algo>\n"),
        ("no-gpu", _ONE + b"</algo>"),
    ],
)
def test_gpus_and_tbs_without_steps(tmp_path: Path, case: str, data: bytes) -> None:
    path = tmp_path / f"{case}.xml"
    path.write_bytes(data)
    fast = _fast(path, True)
    assert (fast is None) == (case == "no-gpu")  # a missing gpu is refused, so worded by the general path
    assert _outcome(lambda p: read_msccl_ir(p, names=True), path) == _outcome(lambda p: _general(p, True), path)
