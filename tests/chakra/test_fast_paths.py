"""The compiled fast paths agree with the general ones: the node decoder (``hub._native._codec``)
vs the general message decoder, compiled vs general framing and GlobalMetadata decoding,
batching, long names and extras."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hub._native import _codec
from hub.chakra import (
    Algorithm,
    AlgorithmMeta,
    Collective,
    NodeType,
    RankGraph,
    TypedValue,
    _ranks,
    _stream,
    read_algorithm,
    write_algorithm,
)
from hub.chakra._decode import decode_global_metadata, decode_node
from hub.chakra._meta import batch_metadata, typed_of
from hub.chakra._wire import delimit, encode_global_metadata, encode_node, encode_varint, frame
from hub.errors import TraceFormatError

from .conftest import assert_same_graphs, ring_allreduce


def _all_slow(b):
    """The compiled pass declining every node: the general decoder takes them all (the spans of
    the nodes from the general framer)."""
    b.dep_ptr[:] = 0
    slow = []
    for base, size in zip(b.bases.tolist(), b.sizes.tolist(), strict=True):
        starts, ends = frame(bytes(b.data[base : base + size]))
        slow += [(base + s, base + e) for s, e in zip(starts[1:], ends[1:], strict=True)]
    triples = np.array([(i, s, e) for i, (s, e) in enumerate(slow)], np.int64).reshape(-1, 3)
    return (
        bytearray(),
        bytearray(triples.tobytes()),
        bytearray(),
        bytearray(b.counts.size),
        bytearray(4 * b.counts.size),
    )


def _count_general(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []

    def counted(data, start, end):
        calls.append(start)
        return decode_node(data, start, end)

    monkeypatch.setattr(_ranks, "decode_node", counted)
    return calls


def test_fast_and_general_decoders_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, foreign_extra) -> None:
    alg = ring_allreduce(6, names=True).bind(6000)
    alg.graphs[1].extra = {3: foreign_extra}
    write_algorithm(alg, tmp_path / "a")
    calls = _count_general(monkeypatch)
    via_fast = read_algorithm(tmp_path / "a")
    assert len(calls) == 1  # only the node with foreign attributes left the fast path
    monkeypatch.setattr(_ranks, "_fast_decode", _all_slow)
    calls.clear()
    via_general = read_algorithm(tmp_path / "a")
    assert len(calls) == alg.node_count()
    assert_same_graphs(alg, via_fast)
    assert_same_graphs(alg, via_general)


def test_compiled_and_general_framing_agree(tmp_path: Path) -> None:
    paths = write_algorithm(ring_allreduce(5, names=True).bind(500), tmp_path / "f")
    datas = [p.read_bytes() for p in paths]
    data = bytearray(b"".join(datas))
    sizes = np.array([len(d) for d in datas], np.int64)
    bases = np.concatenate(([0], np.cumsum(sizes)))[:-1]
    starts, ends, counts, bad = _ranks.frame_files(data, bases, sizes)
    assert bad == -1
    want_s, want_e = [], []
    for base, d in zip(bases.tolist(), datas, strict=True):
        s, e = frame(d)
        want_s += [base + x for x in s]
        want_e += [base + x for x in e]
    assert starts.tolist() == want_s and ends.tolist() == want_e
    assert counts.tolist() == [len(frame(d)[0]) for d in datas]
    cut = bytearray(data[: int(bases[3]) + len(datas[3]) - 1])  # rank 3's last message cut short
    assert _ranks.frame_files(cut, bases[:4], np.append(sizes[:3], len(datas[3]) - 1))[3] == 3


def test_values_of_every_length_round_trip(tmp_path: Path) -> None:
    """Varints of 1..10 bytes (incl. negative int32 values) in templates of one shape."""
    n = 40
    vals = np.array([(1 << (7 * k)) - 1 for k in range(1, 10)] * 5)[:n]
    g = RankGraph.from_columns(
        # sizes at most 2^40 (what the reader accepts, docs/security.md): 1..6-byte varints; the
        # 7..10-byte ones are in duration
        n,
        kind=NodeType.SEND,
        peer=1,
        tag=(vals % 70000).astype(np.int32),
        size=np.minimum(vals >> 3, (1 << 40) - 1).astype(np.int64),
        src_buf=0,
        src_off=(vals % (1 << 31)).astype(np.int32),
        tb=np.where(np.arange(n) % 3 == 0, -1, 5),
        chan=-np.arange(n) % 4,
        duration=np.where(np.arange(n) % 2 == 0, vals, -1),
        dep_ptr=np.concatenate(([0], np.arange(n))),
        dep_pos=np.arange(n - 1),
    )
    other = RankGraph.from_columns(1, kind=NodeType.RECV, peer=0)
    alg = Algorithm(AlgorithmMeta(Collective.CUSTOM, 2, 1, 1), (g, other))
    write_algorithm(alg, tmp_path / "v")
    assert_same_graphs(alg, read_algorithm(tmp_path / "v"))


def test_many_files_framed_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_stream, "_BATCH_BYTES", 3000)  # several decode batches
    alg = ring_allreduce(9).bind(900)
    paths = write_algorithm(alg, tmp_path / "m")
    assert_same_graphs(alg, read_algorithm(tmp_path / "m"))
    # an error found by the vectorized framing is reported with the precise file and message
    data = paths[5].read_bytes()
    paths[5].write_bytes(data[:-2])
    with pytest.raises(TraceFormatError) as info:
        read_algorithm(tmp_path / "m")
    assert info.value.rank == 5 and "runs past the end" in str(info.value)


def test_error_rank_in_later_batch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_stream, "_BATCH_BYTES", 2000)
    write_algorithm(ring_allreduce(5).bind(500), tmp_path / "e")
    # replace rank 3's last node by one that depends on a missing id
    path = tmp_path / "e.3.et"
    data = path.read_bytes()
    starts, _ends = frame(data)
    last = decode_node(data, starts[-1], len(data))
    last["data_deps"] = [777]
    last_attrs = last.pop("attrs")
    body = encode_node(**{k: v for k, v in last.items() if v is not None}, attrs=last_attrs)
    cut = starts[-1] - len(encode_varint(len(data) - starts[-1]))
    path.write_bytes(data[:cut] + delimit(body))
    with pytest.raises(TraceFormatError) as info:
        read_algorithm(tmp_path / "e")
    assert info.value.rank == 3 and "node id 777" in str(info.value) and info.value.node == last["id"]


def test_long_names_and_extras(tmp_path: Path) -> None:
    alg = ring_allreduce(2, names=True).bind(64)
    g = alg.graphs[0]
    g.names = ["x" * 700 if i == 1 else f"n{i}" for i in range(len(g))]
    g.extra = {0: (("blob", TypedValue("bytes_list", [b"\x00" * 600])),)}
    write_algorithm(alg, tmp_path / "w")
    assert_same_graphs(alg, read_algorithm(tmp_path / "w"))


def test_astrasim_example_via_general_decoder_matches(astrasim_example: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prefix = astrasim_example / "algorithm" / "custom_allreduce"
    a = read_algorithm(prefix)
    monkeypatch.setattr(_ranks, "_fast_decode", _all_slow)
    assert_same_graphs(a, read_algorithm(prefix))


_METADATA_CASES = [
    # (version, attributes): the compiled pass takes the usual kinds, the general decoder the rest
    ("0.0.4", []),
    (
        "",
        [
            ("schema", TypedValue("string_val", "1.0.2-chakra.0.0.4")),
            ("input_file", TypedValue("string_val", "é" * 300)),
        ],
    ),
    (
        "0.0.4",
        [
            ("ranks", TypedValue("int32_val", -5)),
            ("size", TypedValue("int64_val", -(1 << 40))),
            ("u32", TypedValue("uint32_val", (1 << 32) - 1)),
            ("u64", TypedValue("uint64_val", (1 << 64) - 1)),
            ("s32", TypedValue("sint32_val", -7)),
            ("s64", TypedValue("sint64_val", -(1 << 50))),
            ("inplace", TypedValue("bool_val", True)),
            ("rank", TypedValue("int32_val", 3)),
            ("rank", TypedValue("int32_val", 4)),  # the last of a name wins
        ],
    ),
    ("v", [("weights", TypedValue("double_list", [0.5])), ("ranks", TypedValue("int32_val", 2))]),
    ("v", [("x", TypedValue("double_val", 1.5))]),
    ("v", [("blob", TypedValue("bytes_val", b"\x00\xff"))]),
]


@pytest.mark.parametrize("version, attrs", _METADATA_CASES)
def test_compiled_and_general_metadata_decoders_agree(version: str, attrs: list) -> None:
    body = encode_global_metadata(version, attrs)
    data = bytearray(b"pad" + body)
    starts, ends = np.array([3], np.int64), np.array([3 + len(body)], np.int64)
    [got] = _codec.decode_metadata(data, starts, ends)
    want_version, want = decode_global_metadata(data, 3, len(data))
    typed = {name: tv for name, tv in want if tv is not None}
    if got is not None:  # the compiled pass took it: the same version and typed values
        assert got[0] == want_version
        assert typed_of(got[1]) == typed
        assert all(
            type(a.value) is type(b.value) for a, b in zip(typed_of(got[1]).values(), typed.values(), strict=True)
        )
    else:  # only messages with values of other kinds are left to the general decoder
        assert any(tv.field.endswith("_list") or tv.field in ("double_val", "bytes_val") for tv in typed.values())
    assert batch_metadata(data, starts, ends, [Path("x")], 0)[0] in (got[1] if got else None, typed)


def test_metadata_with_bad_utf8_is_reported_by_the_general_decoder() -> None:
    body = b"\x12\x06\x0a\x02\xff\xfe\x38\x01"  # attribute name 0xff 0xfe: not UTF-8
    data = bytearray(body)
    starts, ends = np.array([0], np.int64), np.array([len(body)], np.int64)
    assert _codec.decode_metadata(data, starts, ends) == [None]
    with pytest.raises(TraceFormatError, match="not valid UTF-8") as info:
        batch_metadata(data, starts, ends, [Path("a.0.et"), Path("a.1.et")], 1)
    assert info.value.rank == 1 and "a.1.et" in str(info.value)


def test_astrasim_example_metadata_takes_the_compiled_pass(astrasim_example: Path) -> None:
    data = (astrasim_example / "algorithm" / "custom_allreduce.0.et").read_bytes()
    starts, ends = frame(data)
    [got] = _codec.decode_metadata(data, np.array(starts[:1], np.int64), np.array(ends[:1], np.int64))
    version, want = decode_global_metadata(data, starts[0], ends[0])
    assert got is not None and got[0] == version
    assert typed_of(got[1]) == {name: tv for name, tv in want if tv is not None}
