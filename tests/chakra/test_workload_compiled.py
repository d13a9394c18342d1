"""The compiled workload pass (``hub/_native/_codec_workload.c``) against the general decoder.

``read_workload(prefix)`` and ``read_workload(prefix, compiled=False)`` must agree byte for byte
(every field of every node, the metadata, the dangling dependencies and the warning) and error
for error (same exception class and message), on MLCommons' real PyTorch traces and on fuzzed
files: random nodes of every attribute kind, and random byte damage to real files.
"""

from __future__ import annotations

import shutil
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from hub.chakra import Workload, read_workload, write_workload
from hub.chakra._reader import _compiled_kinds, _decoded_kinds
from hub.chakra._wire import ATTR_FIELDS, TypedValue, delimit, encode_global_metadata, encode_node, frame
from hub.chakra._workload_io import _compiled_rank
from tests.conftest import REPO

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "chakra-pytorch"
REAL = [DATA / "dlrm8" / "dlrm", DATA / "coll4" / "coll4", DATA / "ddp2" / "ddp2"]
_FUZZ = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)


def _outcome(prefix: Path, compiled: bool) -> tuple[str, Any]:
    """What a read gives: ("ok", every node's fields, metadata, dangling, warnings) or the error."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            wl: Workload = read_workload(prefix, compiled=compiled)
        except Exception as exc:  # noqa: BLE001 - the comparison is the point
            return "error", (type(exc).__name__, str(exc))
    nodes = [[vars(n) for n in r] for r in wl.ranks]
    types = [[{k: type(v).__name__ for k, v in n.attrs.items()} for n in r] for r in wl.ranks]
    return "ok", (nodes, types, wl.version, wl.name, wl.metadata, wl.dangling, [str(w.message) for w in caught])


def _same(prefix: Path) -> str:
    got, want = _outcome(prefix, True), _outcome(prefix, False)
    assert got == want
    return got[0]


@pytest.mark.parametrize("prefix", REAL, ids=lambda p: p.name)
def test_real_traces_read_the_same(prefix: Path) -> None:
    if not prefix.with_name(prefix.name + ".0.et").exists():
        pytest.skip("the shared real traces are not on this machine")
    assert _same(prefix) == "ok"
    first = prefix.with_name(prefix.name + ".0.et")
    data = first.read_bytes()
    starts, ends = frame(data)
    assert _compiled_rank(data, starts, ends, 0, 8) is not None  # the compiled pass took it


@pytest.mark.parametrize("prefix", REAL, ids=lambda p: p.name)
def test_the_kind_walk_gives_the_decoded_kinds(prefix: Path) -> None:
    first = prefix.with_name(prefix.name + ".0.et")
    if not first.exists():
        pytest.skip("the shared real traces are not on this machine")
    data = first.read_bytes()
    starts, ends = frame(data)
    assert _compiled_kinds(data, starts, ends) == _decoded_kinds(data, starts, ends, first)


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="collhub-wl-fuzz-"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _write(d: Path, files: list[bytes]) -> Path:
    for old in d.glob("w.*.et"):
        old.unlink()
    for r, data in enumerate(files):
        (d / f"w.{r}.et").write_bytes(data)
    return d / "w"


_SCALARS = {name: kind for name, kind, is_list in ATTR_FIELDS.values() if not is_list}
_NAMES = ["comm_type", "comm_size", "comm_src", "comm_dst", "comm_tag", "is_cpu_op", "pg_name", "rf_id", "op", ""]


@st.composite
def _value(draw: st.DrawFn) -> TypedValue:
    field = draw(st.sampled_from([*_SCALARS, "int64_list", "string_list"]))
    kind = _SCALARS.get(field, "")
    if kind in ("f32", "f64"):
        return TypedValue(field, draw(st.floats(allow_nan=False, width=32 if kind == "f32" else 64)))
    if kind == "str" or field == "string_list":
        text = draw(st.sampled_from(["", "[]", "nccl:all_reduce", "é✓"]))
        return TypedValue(field, [text] if field == "string_list" else text)
    if kind == "bytes":
        return TypedValue(field, draw(st.binary(max_size=4)))
    if kind == "bool":
        return TypedValue(field, draw(st.booleans()))
    if field == "int64_list":
        return TypedValue(field, draw(st.lists(st.integers(-5, 5), max_size=3)))
    lo, hi = {
        "int32": (-(1 << 31), (1 << 31) - 1),
        "sint32": (-(1 << 31), (1 << 31) - 1),
        "uint32": (0, (1 << 32) - 1),
        "fixed32": (0, (1 << 32) - 1),
        "sfixed32": (-(1 << 31), (1 << 31) - 1),
        "uint64": (0, (1 << 64) - 1),
        "fixed64": (0, (1 << 64) - 1),
    }.get(kind, (-(1 << 63), (1 << 63) - 1))
    return TypedValue(field, draw(st.one_of(st.integers(max(lo, -3), 10), st.integers(lo, hi))))


@st.composite
def _node(draw: st.DrawFn) -> bytes:
    io = st.none() | st.fixed_dictionaries({"values": st.just("[1]"), "shapes": st.just("[[2]]"), "types": st.just("")})
    return encode_node(
        id=draw(st.integers(0, 12)),
        name=draw(st.sampled_from(["", "gemm", "## zero_grad ##", "nccl:all_reduce"])),
        type=draw(st.integers(0, 8)),
        ctrl_deps=draw(st.lists(st.integers(0, 14), max_size=2)),
        data_deps=draw(st.lists(st.integers(0, 14), max_size=3)),
        start_time_micros=draw(st.integers(0, 1 << 40)),
        duration_micros=draw(st.integers(0, 1 << 40)),
        inputs=draw(io),
        outputs=draw(io),
        attrs=draw(st.lists(st.tuples(st.sampled_from(_NAMES), _value()), max_size=5)),
    )


@_FUZZ
@given(ranks=st.lists(st.lists(_node(), max_size=8), min_size=1, max_size=3))
def test_random_nodes_read_the_same(workdir: Path, ranks: list[list[bytes]]) -> None:
    meta = delimit(encode_global_metadata("0.0.4", []))
    prefix = _write(workdir, [meta + b"".join(delimit(n) for n in nodes) for nodes in ranks])
    _same(prefix)


@_FUZZ
@given(data=st.data())
def test_damaged_real_files_read_the_same(workdir: Path, data: st.DataObject) -> None:
    src = DATA / "coll4" / "coll4.0.et"
    if not src.exists():
        pytest.skip("the shared real traces are not on this machine")
    raw = bytearray(src.read_bytes()[:4000])  # the first nodes, so that each example is quick
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(raw) - 1))
        how = data.draw(st.sampled_from(["flip", "cut", "insert"]))
        if how == "flip":
            raw[at] ^= 1 << data.draw(st.integers(0, 7))
        elif how == "cut":
            del raw[at:]
            if not raw:
                raw = bytearray(b"\x00")
        else:
            raw[at:at] = data.draw(st.binary(min_size=1, max_size=3))
    prefix = _write(workdir, [bytes(raw)])
    _same(prefix)


def test_a_refused_rank_is_read_by_the_general_decoder(workdir: Path) -> None:
    """A list attribute is not taken by the compiled pass: the rank is still read, the same."""
    meta = delimit(encode_global_metadata("0.0.4", []))
    nodes = [
        encode_node(id=1, name="a", type=4, attrs=[("dims", TypedValue("int64_list", [1, 2]))]),
        encode_node(id=2, name="b", type=4, data_deps=[1, 9]),
    ]
    prefix = _write(workdir, [meta + b"".join(delimit(n) for n in nodes)])
    assert _same(prefix) == "ok"
    with pytest.warns(UserWarning, match="absent nodes"):
        assert np.array_equal(read_workload(prefix).ranks[0][0].attrs["dims"], [1, 2])


# -- writing -------------------------------------------------------------------------------------
def _written(wl: Workload, prefix: Path, compiled: bool, attributes: Any = "profile") -> tuple[str, Any]:
    """What a write gives: ("ok", the bytes of every file) or the error."""
    try:
        paths = write_workload(wl, prefix, compiled=compiled, attributes=attributes)
    except Exception as exc:  # noqa: BLE001 - the comparison is the point
        return "error", (type(exc).__name__, str(exc))
    return "ok", [p.read_bytes() for p in paths]


def _same_bytes(wl: Workload, d: Path) -> str:
    got, want = _written(wl, d / "c", True), _written(wl, d / "p", False)
    assert got == want
    return got[0]


@pytest.mark.filterwarnings("ignore::hub.chakra.DanglingDependencyWarning")
@pytest.mark.parametrize("prefix", REAL, ids=lambda p: p.name)
def test_real_traces_write_the_same_bytes(prefix: Path, tmp_path: Path) -> None:
    if not prefix.with_name(prefix.name + ".0.et").exists():
        pytest.skip("the shared real traces are not on this machine")
    wl = read_workload(prefix)
    assert _same_bytes(wl, tmp_path) == "ok"
    from hub._native import _codec
    from hub.chakra._workload_io import WORKLOAD_TYPING

    assert _codec.encode_workload(wl.ranks[0], WORKLOAD_TYPING) is not None  # the compiled pass wrote it


_PLAIN = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 300),
    st.integers(-(1 << 64), 1 << 65),
    st.floats(allow_nan=False),
    st.sampled_from(["", "x", "é✓", "\ud800"]),
    st.binary(max_size=3),
    st.lists(st.integers(0, 3), max_size=2),
    st.just(TypedValue("int32_val", 3)),
    st.just(np.int64(4)),
    st.just(bytearray(b"ab")),
)
#: the values the compiled pass takes (so that whole ranks of them exercise it)
_SIMPLE = st.one_of(st.none(), st.booleans(), st.integers(-5, 300), st.floats(allow_nan=False), st.just("é✓"))


@st.composite
def _wl_node(draw: st.DrawFn) -> Any:
    from hub.chakra import NodeType, WorkloadNode

    plain = draw(st.booleans())
    deps = draw(st.lists(st.integers(0 if plain else -1, 6), max_size=4))
    ctrl = draw(st.one_of(st.just([]), st.lists(st.sampled_from([*deps, 7]), max_size=2) if deps else st.just([7])))
    io = st.none() | st.fixed_dictionaries(
        {"values": st.sampled_from(["", "[1]"]), "shapes": st.sampled_from(["", "[]"])}
    )
    return WorkloadNode(
        id=draw(st.integers(0 if plain else -1, 9)),
        name=draw(st.sampled_from(["", "gemm", "nccl:all_reduce"])),
        type=draw(st.sampled_from(list(NodeType))),
        deps=deps,
        duration_micros=draw(st.one_of(st.none(), st.integers(-3, 1 << 40), *([] if plain else [st.booleans()]))),
        comm_type=draw(st.one_of(st.none(), st.integers(0, 9))),
        comm_size=draw(
            st.one_of(st.none(), st.integers(-1, 1 << 40), *([] if plain else [st.just(2.5), st.just(1 << 70)]))
        ),
        comm_src=draw(st.one_of(st.none(), st.integers(-2, 9))),
        comm_dst=draw(st.one_of(st.none(), st.integers(0, 9))),
        comm_tag=draw(st.one_of(st.none(), st.integers(0, 9))),
        is_cpu_op=draw(st.one_of(st.booleans(), st.just(0), st.just("x"))),
        pg_name=draw(st.sampled_from(["", "0", "pg1"])),
        attrs=draw(st.dictionaries(st.sampled_from(_NAMES), _SIMPLE if plain else _PLAIN, max_size=4)),
        ctrl_deps=ctrl,
        inputs=draw(io),
        outputs=draw(io),
        start_time_micros=draw(st.integers(0, 1 << 40)),
    )


@_FUZZ
@given(ranks=st.lists(st.lists(_wl_node(), max_size=6), min_size=1, max_size=3), astrasim=st.booleans())
def test_random_workloads_write_the_same_bytes(workdir: Path, ranks: list[list[Any]], astrasim: bool) -> None:
    wl = Workload(ranks=ranks, name="fuzz")
    attributes = "astrasim" if astrasim else "profile"
    assert _written(wl, workdir / "c", True, attributes) == _written(wl, workdir / "p", False, attributes)


def test_the_compiled_size_limit_is_the_size_grammar_limit() -> None:
    # hub/_native/_codec.h's HUB_MAX_BYTES must be hub._units.MAX_BYTES: a larger comm_size goes to
    # the general decoder, which refuses it naming the node
    from hub._units import MAX_BYTES

    header = (REPO / "hub" / "_native" / "_codec.h").read_text()
    assert "#define HUB_MAX_BYTES (1LL << 40)" in header and MAX_BYTES == 1 << 40
