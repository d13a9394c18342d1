"""mscclang.ir on hostile input: encodings, pipes and fifos (endless ones included), oversized tokens,
gzip bombs, odd files. Each is an ImportFormatError naming the file, in bounded time; through the
CLI each is exit 3 with one ``error:`` line and a ``hint:``, no traceback and no ET files written,
under a memory cap. Hypothesis fuzzes the reader with mutated and generated files."""

from __future__ import annotations

import gzip
import os
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from collhub_mscclang import read_msccl_ir
from hub.errors import ImportFormatError
from tests.registry.hostile_cli import assert_clean, run_batch

HEAD = '<algo name="h" proto="Simple" nchannels="1" nchunksperloop="2" ngpus="2" coll="allreduce" inplace="1">'


def _step(s: int, t: str, off: int) -> str:
    return (
        f'<step s="{s}" type="{t}" srcbuf="i" srcoff="{off}" dstbuf="i" dstoff="{off}" cnt="1" '
        'depid="-1" deps="-1" hasdep="0"/>'
    )


def _gpu(r: int) -> str:
    # a 2-rank all-reduce: send my chunk, receive-reduce the peer's, then exchange the totals
    peer = 1 - r
    steps = [_step(0, "s", r), _step(1, "rrc", peer), _step(2, "s", peer), _step(3, "r", r)]
    return (
        f'<gpu id="{r}" i_chunks="2" o_chunks="0" s_chunks="0"><tb id="0" send="{peer}" recv="{peer}" chan="0">'
        + "".join(steps)
        + "</tb></gpu>"
    )


GOOD = (HEAD + _gpu(0) + _gpu(1) + "</algo>\n").encode()
MiB = 1 << 20


def _decl(enc: str, body: bytes = GOOD) -> bytes:
    return f'<?xml version="1.0" encoding="{enc}"?>\n'.encode() + body


def test_the_good_file_imports() -> None:
    """The base every case breaks is itself valid (so each case fails for its own reason)."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "good.xml"
        p.write_bytes(GOOD)
        from hub.verify import check

        alg = read_msccl_ir(p)
        assert alg.ranks == 2
        check(alg)  # structure, progress and semantics: a real all-reduce


# -- files: (case, bytes, what the message must say) ------------------------------------------
FILE_CASES: list[tuple[str, bytes, str]] = [
    ("encoding-bogus", _decl("bogus"), "unknown encoding 'bogus'"),
    ("encoding-empty", _decl(""), "malformed XML"),
    ("encoding-huge", _decl("x" * 10_000), "unknown encoding"),
    ("encoding-utf32", _decl("utf-32"), "unsupported encoding"),
    ("encoding-shift-jis", _decl("shift_jis"), "unsupported encoding"),
    ("encoding-ebcdic", _decl("cp037"), "unsupported encoding"),
    ("encoding-utf16-but-utf8", _decl("UTF-16"), "malformed XML"),
    ("attribute-4mib", GOOD.replace(b'name="h"', b'name="' + b"a" * (4 * MiB) + b'"'), "longer than"),
    ("attribute-64mib", GOOD.replace(b'name="h"', b'name="' + b"a" * (64 * MiB) + b'"'), "longer than"),
    ("attribute-name-4mib", GOOD.replace(b'name="h"', b"a" * (4 * MiB) + b'="1"'), "longer than"),
    ("attributes-200k", GOOD.replace(b'name="h"', b" ".join(b'a%d="1"' % i for i in range(200_000))), "longer than"),
    ("whitespace-in-tag-4mib", GOOD.replace(b"<algo", b"<algo" + b" " * (4 * MiB)), "longer than"),
    ("comment-4mib", GOOD.replace(b"<gpu", b"<!--" + b"c<" * (2 * MiB) + b"--><gpu", 1), "longer than"),
    ("pi-4mib", GOOD.replace(b"<gpu", b"<?pi " + b"p<" * (2 * MiB) + b"?><gpu", 1), "longer than"),
    ("step-attr-4mib", GOOD.replace(b'cnt="1"', b'cnt="' + b"1" * (4 * MiB) + b'"', 1), "longer than"),
    ("empty-file", b"", "malformed XML"),
    ("nul-bytes", bytes(4096), "malformed XML"),
    ("gzip-magic-only", b"\x1f\x8b", "cannot read"),
    ("gzip-truncated", gzip.compress(GOOD)[:-20], "cannot read"),
    ("gzip-corrupt", gzip.compress(GOOD)[:12] + b"\xff" * 40, "cannot read"),
    ("gzip-of-garbage", gzip.compress(os.urandom(2000)), "malformed XML"),
    ("doctype-bomb", b'<!DOCTYPE a [<!ENTITY a "aaaa">]>' + GOOD, "DOCTYPE"),
]


def _gzip_bomb(path: Path, prefix: bytes, filler: bytes, gib: int) -> None:
    """A .gz that inflates to ``prefix`` + ``gib`` GiB of ``filler`` (~1 KiB per MiB on disk)."""
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = (filler * (MiB // len(filler) + 1))[:MiB]
    with path.open("wb") as f:
        f.write(comp.compress(prefix) + comp.flush(zlib.Z_FULL_FLUSH))
        f.write(comp.compress(block) + comp.flush(zlib.Z_FULL_FLUSH))
        repeat = comp.compress(block) + comp.flush(zlib.Z_FULL_FLUSH)
        f.write(repeat * (gib * 1024 - 2))


@pytest.mark.parametrize("case, data, fragment", FILE_CASES, ids=[c for c, _, _ in FILE_CASES])
def test_hostile_files(tmp_path: Path, case: str, data: bytes, fragment: str) -> None:
    path = tmp_path / f"{case}.xml"
    path.write_bytes(data)
    start = time.monotonic()
    with pytest.raises(ImportFormatError) as info:
        read_msccl_ir(path)
    assert time.monotonic() - start < 5
    assert fragment in info.value.message and str(path) in info.value.message
    assert "\n" not in info.value.message


@pytest.mark.parametrize("enc", ["UTF-8", "us-ascii", "ISO-8859-1", "latin1", "cp1252", "iso-8859-15"])
def test_accepted_encodings(tmp_path: Path, enc: str) -> None:
    path = tmp_path / "e.xml"
    path.write_bytes(_decl(enc))
    assert read_msccl_ir(path).ranks == 2
    (tmp_path / "u16.xml").write_bytes(('<?xml version="1.0" encoding="UTF-16"?>' + GOOD.decode()).encode("utf-16"))
    assert read_msccl_ir(tmp_path / "u16.xml").ranks == 2


def test_deeply_nested_unknown_elements_are_skipped_in_bounded_time(tmp_path: Path) -> None:
    path = tmp_path / "deep.xml"
    path.write_bytes(GOOD.replace(b"</algo>", b"<x>" * 100_000 + b"</x>" * 100_000 + b"</algo>"))
    start = time.monotonic()
    assert read_msccl_ir(path).ranks == 2
    assert time.monotonic() - start < 5


def test_a_long_but_legal_attribute_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "long.xml"
    path.write_bytes(GOOD.replace(b'name="h"', b'name="' + b"n" * 900_000 + b'"'))
    assert read_msccl_ir(path).meta.name == "n" * 900_000


def test_parse_time_is_linear_not_quadratic(tmp_path: Path) -> None:
    """An attribute 16x longer must not cost ~256x: both are refused within the first MiBs."""
    times = []
    for mib in (8, 128):
        path = tmp_path / f"a{mib}.xml"
        with path.open("wb") as f:
            f.write(b'<algo name="')
            f.write(b"a" * (mib * MiB))
            f.write(GOOD[len(b'<algo name="h') :])
        start = time.monotonic()
        with pytest.raises(ImportFormatError, match="longer than"):
            read_msccl_ir(path)
        times.append(time.monotonic() - start)
    assert max(times) < 2.0, times


def test_regular_file_over_the_limit_is_refused_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "big.xml"
    with path.open("wb") as f:
        f.truncate(3 << 30)  # sparse: 3 GiB that are never read
    start = time.monotonic()
    with pytest.raises(ImportFormatError, match="above the limit"):
        read_msccl_ir(path)
    assert time.monotonic() - start < 1


def test_not_files(tmp_path: Path) -> None:
    with pytest.raises(ImportFormatError, match="is a directory"):
        read_msccl_ir(tmp_path)
    with pytest.raises(ImportFormatError, match="cannot read"):
        read_msccl_ir(tmp_path / "missing.xml")
    with pytest.raises(ImportFormatError, match="malformed XML"):
        read_msccl_ir("/dev/zero")


def test_gzip_bomb_stops_at_the_limit(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.xml.gz"
    _gzip_bomb(bomb, HEAD.encode(), b"<x>" + b"y" * 249 + b"</x>", 4)  # 4 GiB of short tokens
    start = time.monotonic()
    with pytest.raises(ImportFormatError, match="decompressed XML exceeds the limit of 33554432"):
        read_msccl_ir(bomb, max_bytes=32 * MiB)
    assert time.monotonic() - start < 5


# -- pipes and fifos --------------------------------------------------------------------------
@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Callable[[Callable[[BinaryIO], None]], Path]]:
    """``fifo(feed)``: a named pipe that a thread fills with ``feed(file)``; always torn down."""
    threads: list[tuple[Path, threading.Thread]] = []

    def make(feed: Callable[[BinaryIO], None]) -> Path:
        path = tmp_path / f"in{len(threads)}.fifo"
        os.mkfifo(path)

        def writer() -> None:
            try:
                with open(path, "wb") as f:
                    feed(f)
            except OSError:
                pass  # BrokenPipeError: the reader gave up, as it should

        thread = threading.Thread(target=writer, daemon=True)
        thread.start()
        threads.append((path, thread))
        return path

    yield make
    for path, thread in threads:
        if thread.is_alive():  # a writer still waiting for a reader: open and close the read end
            try:
                os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))
            except OSError:
                pass
        thread.join(5)


def _endless(prefix: bytes, filler: bytes) -> Callable[[BinaryIO], None]:
    def feed(f: BinaryIO) -> None:
        f.write(prefix)
        block = filler * (65536 // len(filler))
        for _ in range(1 << 20):  # 64 GiB: "endless" for any test run
            f.write(block)

    return feed


def test_fifo_and_gzip_fifo_are_read_as_streams(fifo: Callable[[Callable[[BinaryIO], None]], Path]) -> None:
    assert read_msccl_ir(fifo(lambda f: f.write(GOOD))).ranks == 2


def test_gzip_through_a_fifo(tmp_path: Path, fifo: Callable[[Callable[[BinaryIO], None]], Path]) -> None:
    data = gzip.compress(GOOD)
    assert read_msccl_ir(fifo(lambda f: f.write(data))).ranks == 2


@pytest.mark.parametrize(
    "prefix, filler, kw, fragment",
    [
        (b'<algo name="', b"a", {}, "longer than"),  # one endless attribute
        (HEAD.encode(), b"<x>" + b"y" * 249 + b"</x>", {"max_bytes": 4 * MiB}, "input exceeds the limit of 4194304"),
        (HEAD.encode() + b"<!--", b"-<", {}, "longer than"),  # an endless comment
    ],
)
def test_endless_fifo_is_cut_while_reading(
    fifo: Callable[[Callable[[BinaryIO], None]], Path], prefix: bytes, filler: bytes, kw: dict[str, int], fragment: str
) -> None:
    start = time.monotonic()
    with pytest.raises(ImportFormatError, match=fragment):
        read_msccl_ir(fifo(_endless(prefix, filler)), **kw)
    assert time.monotonic() - start < 5


def test_fifo_without_a_writer_does_not_block(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nobody ever opens the write end: the read ends after COLLHUB_INPUT_TIMEOUT, naming the path."""
    monkeypatch.setenv("COLLHUB_INPUT_TIMEOUT", "1")
    path = tmp_path / "lonely.fifo"
    os.mkfifo(path)
    start = time.monotonic()
    with pytest.raises(ImportFormatError, match="no data within 1 s") as info:
        read_msccl_ir(path)
    assert str(path) in str(info.value) and time.monotonic() - start < 5


def test_fifo_whose_writer_stalls_does_not_block(
    fifo: Callable[[Callable[[BinaryIO], None]], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer that sends half a file, then nothing while keeping the pipe open."""
    monkeypatch.setenv("COLLHUB_INPUT_TIMEOUT", "1")
    release = threading.Event()

    def stall(f: BinaryIO) -> None:
        f.write(GOOD[: len(GOOD) // 2])
        f.flush()
        release.wait(30)

    try:
        with pytest.raises(ImportFormatError, match="no data within 1 s"):
            read_msccl_ir(fifo(stall))
    finally:
        release.set()


# -- the CLI ----------------------------------------------------------------------------------
def test_cli_fifos_that_never_speak_end_cleanly(tmp_path: Path) -> None:
    """A fifo with no writer, given as path= directly, through /dev/fd, and behind a symlink."""
    lonely = tmp_path / "lonely.fifo"
    os.mkfifo(lonely)
    (tmp_path / "link.xml").symlink_to(lonely)
    env = {"COLLHUB_INPUT_TIMEOUT": "2"}
    runs = [
        (["produce", "mscclang.ir", "--set", f"path={p}", "--out", str(tmp_path / "o" / str(i))], env)
        for i, p in enumerate([lonely, tmp_path / "link.xml"])
    ]
    for ran in run_batch(runs, jobs=2):
        assert_clean(ran, 3)
        assert "no data within 2 s" in ran.stderr and ran.wall < 10
    assert not (tmp_path / "o").exists()


def test_cli_hostile_inputs_are_clean(tmp_path: Path) -> None:
    cases: list[tuple[str, Path]] = []
    for case, data, _ in FILE_CASES:
        if len(data) > 8 * MiB:
            continue  # the in-process test covers the biggest; keep the batch quick
        p = tmp_path / f"{case}.xml"
        p.write_bytes(data)
        cases.append((case, p))
    bomb = tmp_path / "bomb.xml.gz"
    _gzip_bomb(bomb, b"<algo ", b" ", 4)  # 4 GiB of blanks inside one tag
    cases += [
        ("gzip-bomb-4gib", bomb),
        ("directory", tmp_path),
        ("missing", tmp_path / "nope.xml"),
        ("dev-zero", Path("/dev/zero")),
    ]
    out = tmp_path / "out"
    runs = [(["produce", "mscclang.ir", "--set", f"path={p}", "--out", str(out / c / "r")], {}) for c, p in cases]
    for (case, _), ran in zip(cases, run_batch(runs), strict=False):
        assert_clean(ran, 3)
        assert not list((out / case).glob("*")) if (out / case).exists() else True, case


def test_cli_reads_stdin(tmp_path: Path) -> None:
    import subprocess
    import sys

    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "hub.cli",
            "produce",
            "mscclang.ir",
            "--set",
            "path=/dev/stdin",
            "--out",
            str(tmp_path / "r"),
        ],
        input=gzip.compress(GOOD),
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    assert len(list(tmp_path.glob("r.*.et"))) == 2


# -- property-based fuzzing -------------------------------------------------------------------
def _read_or_format_error(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    try:
        read_msccl_ir(path)
    except ImportFormatError as exc:
        assert "\n" not in exc.message


_FUZZ = settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)


@_FUZZ
@given(st.lists(st.tuples(st.integers(0, len(GOOD)), st.integers(0, 8), st.binary(max_size=12)), max_size=4))
def test_fuzz_mutated_files(tmp_path: Path, edits: list[tuple[int, int, bytes]]) -> None:
    """Bytes cut, replaced or inserted anywhere: an Algorithm or an ImportFormatError, nothing else."""
    data = bytearray(GOOD)
    for pos, cut, new in edits:
        data[pos : pos + cut] = new
    _read_or_format_error(tmp_path / "m.xml", bytes(data))


_ATTR = st.one_of(
    st.integers(-(2**40), 2**40).map(str),
    st.text(max_size=8),
    st.sampled_from(["", "-1", "0x10", "1e3", " 1", "١", "1_0", "+1", "2147483648", "nan"]),
)


@settings(_FUZZ, max_examples=60)
@given(
    st.dictionaries(
        st.sampled_from(
            [
                "ngpus",
                "nchunksperloop",
                "nchannels",
                "coll",
                "inplace",
                "proto",
                "i_chunks",
                "s_chunks",
                "send",
                "recv",
                "chan",
                "s",
                "type",
                "srcoff",
                "dstoff",
                "cnt",
                "depid",
                "deps",
                "hasdep",
                "srcbuf",
                "id",
            ]
        ),
        _ATTR,
        max_size=4,
    )
)
def test_fuzz_attribute_values(tmp_path: Path, values: dict[str, str]) -> None:
    """Any value in any attribute (first occurrence): an Algorithm or an ImportFormatError."""
    from xml.sax.saxutils import quoteattr

    text = GOOD.decode()
    for key, value in values.items():
        marker = f' {key}="'
        at = text.find(marker)
        if at >= 0:
            end = text.index('"', at + len(marker))
            text = text[:at] + f" {key}={quoteattr(value)}" + text[end + 1 :]
    _read_or_format_error(tmp_path / "a.xml", text.encode())
