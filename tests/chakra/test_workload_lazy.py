"""The lazy workload read: the compiled scan (``scan_workload_file``,
``hub/_native/_codec_workload_scan.c``) against the compiled decoder it stands for
(``_codec_workload.c``), and the lazy ``Workload``.

A lazy read must never fail later: the scan refuses a rank exactly when the decoder refuses it,
and finds the same dangling dependencies, on the real traces and on fuzzed node messages (random
attributes, random bytes as strings, damaged real files). Whole reads (lazy against the general
decoder) are compared in ``test_workload_compiled.py``.
"""

from __future__ import annotations

import pickle
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, strategies as st

from hub._native import _codec
from hub.chakra import Workload, WorkloadNode, read_workload
from hub.chakra._model import NodeType
from hub.chakra._wire import WireError, delimit, encode_global_metadata, frame
from hub.chakra._workload_io import _compiled_rank
from hub.errors import TraceFormatError
from tests.chakra.test_workload_compiled import _FUZZ, DATA, REAL, _node


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _agree(data: bytes, ranks: int = 8) -> bool:
    """The scan and the decoder on one rank file: same refusal, same ids and dangling pairs.
    True when both took the rank."""
    scanned = _codec.scan_workload_file(data, ranks)
    try:
        starts, ends = frame(data, empty_nodes=False)
    except WireError:
        assert scanned is None  # the framing refuses it before either pass
        return False
    decoded = _compiled_rank(data, starts, ends, 0, ranks) if len(starts) else None
    assert (scanned is None) == (decoded is None)
    if scanned is None or decoded is None:
        return False
    got_starts, got_ends, ids, _deps, per, types, coll_names, dangling = scanned
    assert np.frombuffer(got_starts, np.int64).tolist() == list(starts)
    assert np.frombuffer(got_ends, np.int64).tolist() == list(ends)
    nodes = decoded[0]
    assert np.frombuffer(ids, np.int64).tolist() == [n.id for n in nodes]
    assert list(types) == [int(n.type) for n in nodes]
    assert coll_names == {n.name for n in nodes if n.type == NodeType.COLL}
    pairs = np.frombuffer(dangling, np.int64).tolist()
    assert [(0, a, b) for a, b in zip(pairs[::2], pairs[1::2], strict=True)] == decoded[1]
    # the decoder drops dangling dependencies from deps; the scan counts every one
    assert sum(np.frombuffer(per, np.int64).tolist()) == sum(len(n.deps) for n in nodes) + len(decoded[1])
    return True


_META = delimit(encode_global_metadata("0.0.4", []))


@pytest.mark.parametrize("prefix", REAL, ids=lambda p: p.name)
def test_the_scan_takes_the_real_traces(prefix: Path) -> None:
    files = sorted(prefix.parent.glob(prefix.name + ".*.et"))
    if not files:
        pytest.skip("the shared real traces are not on this machine")
    for f in files:
        assert _agree(f.read_bytes(), len(files))


@_FUZZ
@given(nodes=st.lists(_node(), max_size=8), ranks=st.integers(1, 9))
def test_random_nodes_scan_as_they_decode(nodes: list[bytes], ranks: int) -> None:
    _agree(_META + b"".join(delimit(n) for n in nodes), ranks)


@_FUZZ
@given(raw=st.binary(max_size=12), where=st.sampled_from(["name", "attr name", "value", "io"]))
def test_strings_are_utf8_as_python_decodes_them(raw: bytes, where: str) -> None:
    """Any bytes as a node name, attribute name, string value or IOInfo field: the scan takes the
    rank exactly when Python's strict UTF-8 decoder takes the string."""
    s = _varint(len(raw)) + raw
    if where == "name":
        body = b"\x12" + s
    elif where == "io":
        body = b"\x42" + _varint(len(s) + 1) + b"\x0a" + s  # inputs.values
    else:
        attr = b"\x0a" + s + b"\x48\x01" if where == "attr name" else b"\x0a\x01a\xea\x01" + s  # int64 / string_val
        body = b"\x52" + _varint(len(attr)) + attr
    node = b"\x08\x01\x18\x04" + body
    try:
        raw.decode("utf-8")
        valid = True
    except UnicodeDecodeError:
        valid = False
    assert _agree(_META + delimit(node)) == valid


@_FUZZ
@given(data=st.data())
def test_damaged_real_files_scan_as_they_decode(data: st.DataObject) -> None:
    src = DATA / "dlrm8" / "dlrm.0.et"
    if not src.exists():
        pytest.skip("the shared real traces are not on this machine")
    raw = bytearray(src.read_bytes()[:6000])
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(raw) - 1))
        raw[at] = data.draw(st.integers(0, 255))
    _agree(bytes(raw))


def test_a_duplicate_id_is_refused_by_both() -> None:
    nodes = [b"\x08\x03\x18\x04", b"\x08\x01\x18\x04", b"\x08\x03\x18\x04"]  # ids 3, 1, 3 (not in order)
    data = _META + b"".join(delimit(n) for n in nodes)
    assert not _agree(data)


@pytest.mark.filterwarnings("ignore::hub.chakra.DanglingDependencyWarning")
def test_a_read_makes_no_node_until_used() -> None:
    prefix = REAL[0]
    if not prefix.with_name(prefix.name + ".0.et").exists():
        pytest.skip("the shared real traces are not on this machine")
    wl = read_workload(prefix)
    assert wl._ranks is None  # nothing made yet
    assert (wl.rank_count, wl.node_count()) == (8, 15496)
    eager = read_workload(prefix, lazy=False)
    assert eager._ranks is not None
    copy = pickle.loads(pickle.dumps(wl))  # a lazy workload travels to another process as it is
    assert wl == eager == copy  # == uses the nodes: made once, here
    assert wl._ranks is not None and isinstance(wl.ranks[0][0], WorkloadNode)
    wl.ranks = [[]]
    assert (wl.rank_count, wl.node_count()) == (1, 0)


def test_workload_keeps_its_constructor_and_equality() -> None:
    a = Workload(ranks=[[WorkloadNode(id=0, name="x", type=NodeType.COMP)]], name="w")
    b = Workload([[WorkloadNode(id=0, name="x", type=NodeType.COMP)]], "0.0.4", "w", {}, [])
    assert a == b and a.metadata == {} and a.dangling == [] and "name='w'" in repr(a)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert a != Workload(ranks=[], name="w")


@pytest.mark.filterwarnings("ignore::hub.chakra.DanglingDependencyWarning")
def test_a_file_changed_after_the_read_is_refused_on_first_use(tmp_path: Path) -> None:
    """The nodes are made from the files read again: a file replaced in between is refused,
    never decoded as if the scan had checked it; a file left alone reads the same."""
    src = REAL[1]
    if not src.with_name(src.name + ".0.et").exists():
        pytest.skip("the shared real traces are not on this machine")
    for f in src.parent.glob(src.name + ".*.et"):
        (tmp_path / f.name).write_bytes(f.read_bytes())
    prefix = tmp_path / src.name
    kept, changed = read_workload(prefix), read_workload(prefix)
    assert kept == read_workload(prefix, compiled=False)
    first = tmp_path / (src.name + ".0.et")
    # replaced by other bytes (a size the stamp tells apart: mtimes may tick coarser than a test)
    first.write_bytes(first.read_bytes() + b"\x02\x08\x01")
    with pytest.raises(TraceFormatError, match="changed since it was read"):
        changed.ranks  # noqa: B018 - the first use is the point
