"""Property-based fuzzing of the Chakra ET reader (Hypothesis, a few seconds in all).

Whatever the bytes, reading either succeeds with plausible values (what
:func:`hub.chakra.check_algorithm` demands holds) or raises a one-line
:class:`hub.errors.TraceFormatError` that names the file: never another exception, never a
value that wrapped around while being narrowed into the model.
"""

from __future__ import annotations

import gzip
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from hub.algorithms import ring
from hub.chakra import Algorithm, TypedValue, check_algorithm, read_trace, write_algorithm
from hub.chakra._decode import decode_global_metadata, decode_node
from hub.chakra._validate import ATTR_RANGES
from hub.chakra._wire import (
    ATTR_FIELDS,
    delimit,
    encode_global_metadata,
    encode_node,
    frame,
)
from hub.errors import TraceFormatError

_FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)


@pytest.fixture(scope="module")
def base() -> Iterator[tuple[Path, list[bytes]]]:
    """A good bound 3-rank ring all-reduce: its directory and each rank file's bytes."""
    d = Path(tempfile.mkdtemp(prefix="collhub-fuzz-"))
    paths = write_algorithm(ring("allreduce", 3).bind(3 << 10), d / "g")
    yield d, [p.read_bytes() for p in paths]
    shutil.rmtree(d, ignore_errors=True)


def _write_set(d: Path, files: list[bytes]) -> Path:
    for old in d.glob("f.*.et"):
        old.unlink()
    for r, data in enumerate(files):
        (d / f"f.{r}.et").write_bytes(data)
    return d / "f"


def _plausible(alg: Algorithm) -> None:
    check_algorithm(alg)  # what the reader promises holds for what it returns
    for g in alg.graphs:
        for _attr, (column, lo, hi) in ATTR_RANGES.items():
            if not column.startswith("_"):
                values = getattr(g, column)
                assert values.size == 0 or (int(values.min()) >= lo and int(values.max()) <= hi), column


def _read(prefix: Path) -> None:
    try:
        obj = read_trace(prefix)
    except TraceFormatError as exc:
        assert "\n" not in str(exc) and exc.path, str(exc)
        return
    if isinstance(obj, Algorithm):
        _plausible(obj)


@_FUZZ
@given(data=st.data())
def test_mutated_rank_files(
    base: tuple[Path, list[bytes]], data: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Bytes flipped, cut, inserted or deleted anywhere in one rank file."""
    _d, files = base
    files = list(files)
    r = data.draw(st.integers(0, len(files) - 1))
    buf = bytearray(files[r])
    for _ in range(data.draw(st.integers(1, 4))):
        op = data.draw(st.sampled_from(["flip", "cut", "insert", "delete"]))
        pos = data.draw(st.integers(0, max(len(buf) - 1, 0)))
        if op == "flip" and buf:
            buf[pos] ^= data.draw(st.integers(1, 255))
        elif op == "cut":
            del buf[pos:]
        elif op == "insert":
            buf[pos:pos] = data.draw(st.binary(min_size=1, max_size=12))
        elif buf:
            del buf[pos : pos + data.draw(st.integers(1, 8))]
    files[r] = bytes(buf)
    _read(_write_set(tmp_path_factory.mktemp("m"), files))


_TYPED = st.one_of(
    st.builds(TypedValue, st.just("int32_val"), st.integers(-(1 << 31), (1 << 31) - 1)),
    st.builds(TypedValue, st.just("int64_val"), st.integers(-(1 << 63), (1 << 63) - 1)),
    st.builds(TypedValue, st.just("uint64_val"), st.integers(0, (1 << 64) - 1)),
    st.builds(TypedValue, st.just("sint64_val"), st.integers(-(1 << 63), (1 << 63) - 1)),
    st.builds(TypedValue, st.just("double_val"), st.floats(allow_nan=True, allow_infinity=True)),
    st.builds(TypedValue, st.just("bool_val"), st.booleans()),
    st.builds(TypedValue, st.just("string_val"), st.text(max_size=8)),
    st.builds(TypedValue, st.just("int64_list"), st.lists(st.integers(-(1 << 63), (1 << 63) - 1), max_size=3)),
)
_NODE_ATTRS = st.sampled_from([*ATTR_RANGES, "comm_type", "x"])
_META_ATTRS = st.sampled_from(
    [
        "ranks",
        "in_chunks",
        "out_chunks",
        "scratch_chunks",
        "root",
        "size",
        "rank",
        "inplace",
        "collective",
        "collhub_profile",
        "algorithm",
    ]
)


def _recode(data: bytes, meta: Any = None, node: Any = None) -> bytes:
    starts, ends = frame(data)
    version, attrs = decode_global_metadata(data, starts[0], ends[0])
    nodes = [decode_node(data, s, e) for s, e in zip(starts[1:], ends[1:], strict=False)]
    if meta is not None:
        name, value = meta
        attrs = [(k, v) for k, v in attrs if k != name] + [(name, value)]
    if node is not None:
        i, name, value = node
        nd = nodes[i % len(nodes)]
        nd["attrs"] = [(k, v) for k, v in nd["attrs"] if k != name] + [(name, value)]
    return delimit(encode_global_metadata(version, attrs)) + b"".join(delimit(encode_node(**nd)) for nd in nodes)


@_FUZZ
@given(rank=st.integers(0, 2), index=st.integers(0, 40), name=_NODE_ATTRS, value=_TYPED)
def test_any_value_in_any_node_attribute(
    base: tuple[Path, list[bytes]],
    rank: int,
    index: int,
    name: str,
    value: TypedValue,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    _d, files = base
    files = list(files)
    files[rank] = _recode(files[rank], node=(index, name, value))
    _read(_write_set(tmp_path_factory.mktemp("n"), files))


@_FUZZ
@given(ranks=st.sets(st.integers(0, 2), min_size=1), name=_META_ATTRS, value=_TYPED)
def test_any_value_in_any_metadata_attribute(
    base: tuple[Path, list[bytes]],
    ranks: set[int],
    name: str,
    value: TypedValue,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    _d, files = base
    files = [_recode(f, meta=(name, value)) if r in ranks else f for r, f in enumerate(files)]
    _read(_write_set(tmp_path_factory.mktemp("g"), files))


@settings(max_examples=60, deadline=None, database=None)
@given(blob=st.binary(max_size=300), gz=st.booleans(), count=st.integers(1, 3))
def test_arbitrary_bytes(blob: bytes, gz: bool, count: int, tmp_path_factory: pytest.TempPathFactory) -> None:
    data = gzip.compress(blob) if gz else blob
    _read(_write_set(tmp_path_factory.mktemp("b"), [data] * count))


def test_attribute_oneof_fields_are_all_tried() -> None:
    # the strategies above cover every scalar kind the reader must refuse or accept
    kinds = {kind for _n, (name, kind, is_list) in ATTR_FIELDS.items() if not is_list}
    assert {"int32", "int64", "uint64", "sint64", "f64", "bool", "str"} <= kinds
    assert np.iinfo(np.int32).max == ATTR_RANGES["cnt"][2]
