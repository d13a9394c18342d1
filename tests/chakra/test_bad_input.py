"""Malformed files give a one-line TraceFormatError naming file, rank and node, never a raw error."""

from __future__ import annotations

import gzip
import random
from pathlib import Path

import pytest

from hub.chakra import TypedValue, read_algorithm, read_trace, read_workload, write_algorithm
from hub.chakra._wire import delimit, encode_global_metadata, encode_node
from hub.errors import TraceFormatError

from .conftest import ring_allreduce

META = delimit(encode_global_metadata("0.0.4"))


def _send(id: int, dst: int = 1, deps=()) -> bytes:
    return delimit(
        encode_node(
            id=id,
            type=5,
            data_deps=list(deps),
            attrs=[
                ("comm_size", TypedValue("int64_val", 64)),
                ("comm_dst", TypedValue("int32_val", dst)),
                ("comm_tag", TypedValue("int32_val", 0)),
            ],
        )
    )


def _recv(id: int, src: int = 0, deps=()) -> bytes:
    return delimit(
        encode_node(
            id=id,
            type=6,
            data_deps=list(deps),
            attrs=[
                ("comm_size", TypedValue("int64_val", 64)),
                ("comm_src", TypedValue("int32_val", src)),
                ("comm_tag", TypedValue("int32_val", 0)),
            ],
        )
    )


def _pair(tmp_path: Path, rank0: bytes, rank1: bytes | None = None) -> Path:
    (tmp_path / "t.0.et").write_bytes(rank0)
    (tmp_path / "t.1.et").write_bytes(rank1 if rank1 is not None else META + _recv(0))
    return tmp_path / "t"


def _err(prefix: Path) -> TraceFormatError:
    with pytest.raises(TraceFormatError) as info:
        read_algorithm(prefix)
    err = info.value
    assert "\n" not in str(err)
    return err


def test_good_pair_reads(tmp_path: Path) -> None:
    alg = read_algorithm(_pair(tmp_path, META + _send(0)))
    assert alg.ranks == 2 and alg.graphs[0].peer.tolist() == [1]


def test_empty_file(tmp_path: Path) -> None:
    err = _err(_pair(tmp_path, b""))
    assert "empty file" in str(err) and err.rank == 0 and err.path.endswith("t.0.et")


def test_truncated_file(tmp_path: Path) -> None:
    data = META + _send(0) + _send(1, deps=[0])
    err = _err(_pair(tmp_path, data[:-3]))
    assert "runs past the end" in str(err) and err.rank == 0 and err.hint


def test_length_past_eof(tmp_path: Path) -> None:
    err = _err(_pair(tmp_path, META + b"\xff\x01" + b"\x08\x01"))  # claims 255 bytes, has 2
    assert "255 bytes runs past the end" in str(err)


def test_varint_too_long(tmp_path: Path) -> None:
    err = _err(_pair(tmp_path, META + b"\xff" * 11 + b"\x01"))
    assert "longer than 10 bytes" in str(err)


def test_varint_cut(tmp_path: Path) -> None:
    err = _err(_pair(tmp_path, META + _send(0) + b"\x80"))
    assert "cut off" in str(err)


def test_bad_varint_inside_node(tmp_path: Path) -> None:
    body = b"\x08" + b"\xff" * 11  # id varint of 11 bytes inside a well-framed node
    err = _err(_pair(tmp_path, META + _send(0) + delimit(body)))
    assert "longer than 10 bytes" in str(err) and "message #1" in str(err)


def test_field_running_past_node(tmp_path: Path) -> None:
    body = encode_node(id=1, type=5) + b"\x52\x40abc"  # attr of 64 bytes, only 3 there
    err = _err(_pair(tmp_path, META + _send(0) + delimit(body)))
    assert "runs past its message" in str(err)


def test_unknown_node_type(tmp_path: Path) -> None:
    err = _err(_pair(tmp_path, META + _send(0) + delimit(encode_node(id=1, type=42))))
    assert "unknown node type 42" in str(err) and err.node == 1 and err.rank == 0


def test_send_without_comm_dst(tmp_path: Path) -> None:
    node = delimit(encode_node(id=3, type=5, attrs=[("comm_size", TypedValue("int64_val", 8))]))
    err = _err(_pair(tmp_path, META + node))
    assert "COMM_SEND_NODE has no comm_dst" in str(err) and err.node == 3


def test_recv_without_comm_src(tmp_path: Path) -> None:
    node = delimit(encode_node(id=4, type=6, attrs=[("comm_dst", TypedValue("int32_val", 1))]))
    err = _err(_pair(tmp_path, META + _send(0), META + node))
    assert "COMM_RECV_NODE has no comm_src" in str(err) and err.rank == 1 and err.node == 4


def test_dependency_on_missing_node(tmp_path: Path) -> None:
    err = _err(_pair(tmp_path, META + _send(0) + _send(1, deps=[0, 77])))
    assert "node id 77" in str(err) and err.node == 1


def test_dependency_on_missing_node_with_id_gaps(tmp_path: Path) -> None:
    err = _err(_pair(tmp_path, META + _send(10) + _send(20, deps=[10]) + _send(30, deps=[15])))
    assert "node id 15" in str(err) and err.node == 30


def test_duplicate_ids(tmp_path: Path) -> None:
    err = _err(_pair(tmp_path, META + _send(5) + _send(5)))
    assert "duplicate node id" in str(err) and err.node == 5


def test_cycle_does_not_hang(tmp_path: Path) -> None:
    alg = read_algorithm(_pair(tmp_path, META + _send(0, deps=[1]) + _send(1, deps=[0])))
    assert [alg.graphs[0].deps_of(i).tolist() for i in range(2)] == [[1], [0]]


def test_missing_rank_file_by_metadata(tmp_path: Path) -> None:
    write_algorithm(ring_allreduce(4).bind(64), tmp_path / "r")
    (tmp_path / "r.2.et").unlink()
    err = _err(tmp_path / "r")
    assert "missing rank file" in str(err) and "4 ranks" in str(err) and err.rank == 2
    assert err.path.endswith("r.2.et")


def test_gap_without_metadata(tmp_path: Path) -> None:
    (tmp_path / "g.0.et").write_bytes(META + _send(0))
    (tmp_path / "g.1.et").write_bytes(META + _recv(0))
    (tmp_path / "g.3.et").write_bytes(META + _recv(0))
    err = _err(tmp_path / "g")
    assert "missing rank file" in str(err) and err.rank == 2


def test_no_rank_zero(tmp_path: Path) -> None:
    err = _err(tmp_path / "nothing")
    assert "file not found" in str(err) and err.path.endswith("nothing.0.et")


def test_directory_instead_of_file(tmp_path: Path) -> None:
    (tmp_path / "d.0.et").mkdir()
    err = _err(tmp_path / "d")
    assert "is a directory" in str(err)


def test_corrupt_gzip(tmp_path: Path) -> None:
    data = gzip.compress(META + _send(0))
    err = _err(_pair(tmp_path, data[:-6]))
    assert "corrupt gzip" in str(err)


def test_rank_attribute_mismatch(tmp_path: Path) -> None:
    paths = write_algorithm(ring_allreduce(2).bind(64), tmp_path / "s")
    a, b = paths[0].read_bytes(), paths[1].read_bytes()
    paths[0].write_bytes(b)
    paths[1].write_bytes(a)
    err = _err(tmp_path / "s")
    assert "GlobalMetadata says this is rank 1" in str(err)


def test_float_comm_size_is_refused(tmp_path: Path) -> None:
    node = delimit(
        encode_node(
            id=0, type=5, attrs=[("comm_size", TypedValue("double_val", 8.0)), ("comm_dst", TypedValue("int32_val", 1))]
        )
    )
    err = _err(_pair(tmp_path, META + node))
    assert "floating-point" in str(err) and err.node == 0


def test_workload_dangling_dependency_is_a_warning(tmp_path: Path) -> None:
    # issue #15: Chakra's original ETFeeder treats a dependency on an absent node as satisfied
    from hub.chakra import DanglingDependencyWarning

    (tmp_path / "w.0.et").write_bytes(META + delimit(encode_node(id=0, type=7, data_deps=[3])))
    for read in (read_workload, read_trace):
        with pytest.warns(DanglingDependencyWarning, match="node 0 -> 3"):
            wl = read(tmp_path / "w")
        assert wl.ranks[0][0].deps == [] and wl.dangling == [(0, 0, 3)]


def test_fuzzed_files_never_raise_raw_errors(tmp_path: Path) -> None:
    """Every truncation and many random byte flips of a real file: success or TraceFormatError."""
    paths = write_algorithm(ring_allreduce(2, names=True).bind(100), tmp_path / "f")
    good = paths[0].read_bytes()
    rng = random.Random(1234)
    cases = [good[:cut] for cut in range(0, len(good), 3)]
    for _ in range(150):
        data = bytearray(good)
        for _k in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        cases.append(bytes(data))
    for data in cases:
        paths[0].write_bytes(data)
        try:
            read_algorithm(tmp_path / "f")
        except TraceFormatError as exc:
            assert "\n" not in str(exc)
