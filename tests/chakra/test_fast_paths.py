"""The vectorized fast paths agree with the general ones: templates vs field walker, framing of
many files at once, batching, and the writer's wide-piece fallback."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hub.chakra import (
    Algorithm,
    AlgorithmMeta,
    Collective,
    NodeType,
    RankGraph,
    TypedValue,
    _decode,
    _reader,
    read_algorithm,
    write_algorithm,
)
from hub.chakra._wire import decode_node, delimit, encode_node, encode_varint, frame
from hub.errors import TraceFormatError

from .conftest import assert_same_graphs, ring_allreduce


def _no_templates(data, buf, starts, ends, known, value_key):
    return [], np.zeros(starts.size, bool)


def test_walker_and_templates_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, foreign_extra) -> None:
    alg = ring_allreduce(6, names=True).bind(6000)
    alg.graphs[1].extra = {3: foreign_extra}
    write_algorithm(alg, tmp_path / "a")
    via_templates = read_algorithm(tmp_path / "a")
    monkeypatch.setattr(_decode, "match_templates", _no_templates)
    via_walker = read_algorithm(tmp_path / "a")
    assert_same_graphs(alg, via_templates)
    assert_same_graphs(alg, via_walker)


def test_values_of_every_length_round_trip(tmp_path: Path) -> None:
    """Varints of 1..10 bytes (incl. negative int32 values) in templates of one shape."""
    n = 40
    vals = np.array([(1 << (7 * k)) - 1 for k in range(1, 10)] * 5)[:n]
    g = RankGraph.from_columns(
        # sizes >> 3: still 1..9-byte varints, and their sum stays within int64
        n, kind=NodeType.SEND, peer=1, tag=(vals % 70000).astype(np.int32), size=(vals >> 3).astype(np.int64),
        src_buf=0, src_off=(vals % (1 << 31)).astype(np.int32), tb=np.where(np.arange(n) % 3 == 0, -1, 5),
        chan=-np.arange(n) % 4, duration=np.where(np.arange(n) % 2 == 0, vals, -1),
        dep_ptr=np.concatenate(([0], np.arange(n))), dep_pos=np.arange(n - 1),
    )
    other = RankGraph.from_columns(1, kind=NodeType.RECV, peer=0)
    alg = Algorithm(AlgorithmMeta(Collective.CUSTOM, 2, 1, 1), (g, other))
    write_algorithm(alg, tmp_path / "v")
    assert_same_graphs(alg, read_algorithm(tmp_path / "v"))


def test_many_files_framed_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_reader, "_VECTOR_FRAMING_FILES", 4)
    monkeypatch.setattr(_reader, "_BATCH_NODES", 50)  # several decode batches
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
    monkeypatch.setattr(_reader, "_BATCH_NODES", 30)
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


def test_writer_wide_piece_fallback(tmp_path: Path) -> None:
    alg = ring_allreduce(2, names=True).bind(64)
    g = alg.graphs[0]
    g.names = ["x" * 700 if i == 1 else f"n{i}" for i in range(len(g))]
    g.extra = {0: (("blob", TypedValue("bytes_list", [b"\x00" * 600])),)}
    write_algorithm(alg, tmp_path / "w")
    assert_same_graphs(alg, read_algorithm(tmp_path / "w"))


def test_astrasim_example_via_walker_matches_templates(astrasim_example: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prefix = astrasim_example / "algorithm" / "custom_allreduce"
    a = read_algorithm(prefix)
    monkeypatch.setattr(_decode, "match_templates", _no_templates)
    assert_same_graphs(a, read_algorithm(prefix))
