"""hub.chakra.iter_ranks: a set read rank by rank, the same graphs as read_algorithm, checked
the same way, and never more than about one batch of graphs held by the reader."""

from __future__ import annotations

import tracemalloc
import weakref
from pathlib import Path

import numpy as np
import pytest

from hub.chakra import Algorithm, RankStream, _stream, iter_ranks, read_algorithm, write_algorithm
from hub.chakra._decode import decode_node
from hub.chakra._model import COLUMN_NAMES
from hub.chakra._ranks import Arena
from hub.chakra._wire import delimit, encode_node, encode_varint, frame
from hub.errors import TraceFormatError

from .conftest import assert_same_graphs, ring_allreduce


def test_stream_gives_the_graphs_of_read_algorithm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    alg = ring_allreduce(7, names=True).bind(7000)
    write_algorithm(alg, tmp_path / "s")
    monkeypatch.setattr(_stream, "_BATCH_BYTES", 2500)  # several batches
    stream = iter_ranks(tmp_path / "s")
    assert isinstance(stream, RankStream)
    assert stream.meta == alg.meta and len(stream) == 7  # known before any node is read
    assert_same_graphs(alg, Algorithm(stream.meta, tuple(stream)))
    with pytest.raises(RuntimeError, match="iterated once"):
        iter(stream)


def test_astrasim_example_streams_like_it_reads(astrasim_example: Path) -> None:
    prefix = astrasim_example / "algorithm" / "custom_allreduce"
    stream = iter_ranks(prefix)
    assert_same_graphs(read_algorithm(prefix), Algorithm(stream.meta, tuple(stream)))


def _break_last_node(path: Path) -> None:
    """Replace the last node of a rank file by one that depends on a missing id."""
    data = path.read_bytes()
    starts, _ends = frame(data)
    last = decode_node(data, starts[-1], len(data))
    last["data_deps"] = [777]
    attrs = last.pop("attrs")
    body = encode_node(**{k: v for k, v in last.items() if v is not None}, attrs=attrs)
    cut = starts[-1] - len(encode_varint(len(data) - starts[-1]))
    path.write_bytes(data[:cut] + delimit(body))


def test_bad_rank_raises_when_it_is_reached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    alg = ring_allreduce(6).bind(600)
    write_algorithm(alg, tmp_path / "b")
    _break_last_node(tmp_path / "b.4.et")
    monkeypatch.setattr(_stream, "_BATCH_BYTES", 1)  # one file per batch
    seen = []
    with pytest.raises(TraceFormatError) as info:
        for g in iter_ranks(tmp_path / "b"):
            seen.append(len(g))
    assert seen == [len(g) for g in alg.graphs[:4]]
    assert info.value.rank == 4 and "node id 777" in str(info.value)


def test_implausible_metadata_is_refused_before_any_node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_algorithm(ring_allreduce(4).bind(400), tmp_path / "m")
    monkeypatch.setenv("COLLHUB_MAX_CHUNK_SLOTS", "8")  # 4 ranks x 8 chunks: over the limit
    with pytest.raises(TraceFormatError, match="chunk slots exceed the limit"):
        iter_ranks(tmp_path / "m")


def test_stream_holds_about_one_batch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Counting the nodes of a set as they stream by keeps a fraction of the whole model."""
    alg = ring_allreduce(128, comp=False).bind(128 << 10)
    write_algorithm(alg, tmp_path / "big")
    model = alg.nbytes()
    monkeypatch.setattr(_stream, "_BATCH_BYTES", 64 << 10)
    tracemalloc.start()
    try:
        nodes = 0
        for g in iter_ranks(tmp_path / "big"):
            nodes += int(np.count_nonzero(g.kind >= 0))
        _now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert nodes == alg.node_count()
    # one batch of files, its per-batch state and a block of graphs' memory (four batches' worth)
    assert peak < model / 4, (peak, model)


def test_regular_ranks_share_frozen_columns_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A column holding what the previous rank's holds is that array, read-only (as producers
    share dependencies); a column that differs is the rank's own, writable; never a writable one
    shared. Across batches too."""
    alg = ring_allreduce(8).bind(8 << 10)
    write_algorithm(alg, tmp_path / "r")
    monkeypatch.setattr(_stream, "_BATCH_BYTES", 6000)  # a few ranks per batch
    back = read_algorithm(tmp_path / "r")
    assert_same_graphs(alg, back)
    columns = (*COLUMN_NAMES, "dep_ptr", "dep_pos")
    owners: dict[int, list[tuple[int, str]]] = {}
    for r, g in enumerate(back.graphs):
        for name in columns:
            owners.setdefault(id(getattr(g, name)), []).append((r, name))
    shared = [users for users in owners.values() if len(users) > 1]
    assert shared, "a ring's ranks have equal kinds, sizes and dependencies"
    for users in shared:
        r, name = users[0]
        assert not getattr(back.graphs[r], name).flags.writeable, users
    g0, g1 = back.graphs[0], back.graphs[1]
    assert g0.kind is g1.kind and g0.dep_pos is back.graphs[7].dep_pos  # rank 7 is in a later batch
    assert g0.peer is not g1.peer and g0.peer.flags.writeable
    g0.peer[0] = 5
    assert int(g1.peer[0]) != 5 or int(alg.graphs[1].peer[0]) == 5


def test_arena_reuses_a_block_only_when_nothing_refers_to_it() -> None:
    arena = Arena(1 << 12)
    first = arena.take(3000)
    block = weakref.ref(first.base)
    held = arena.take(3000)  # does not fit: a second block; the first is retired but still viewed
    assert held.base is not block()
    third = arena.take(3000)  # a third block: the first is still referred to by ``first``
    assert third.base is not block() and block() is not None
    del first
    again = arena.take(3000)  # now nothing refers to the first block: it is written again
    assert again.base is block() and again.size == 3008  # 64-byte multiples


def test_a_file_from_another_set_is_named(tmp_path: Path) -> None:
    """Rank files agree with rank 0's GlobalMetadata (checked file by file, most by comparing the
    compiled pass's attributes with rank 0's): one from a set of another size is refused."""
    write_algorithm(ring_allreduce(4).bind(400), tmp_path / "a")
    write_algorithm(ring_allreduce(4).bind(800), tmp_path / "b")
    (tmp_path / "a.2.et").write_bytes((tmp_path / "b.2.et").read_bytes())
    with pytest.raises(TraceFormatError) as info:
        read_algorithm(tmp_path / "a")
    assert info.value.rank == 2 and "a.2.et" in str(info.value)
    assert "GlobalMetadata attribute size is 800 here but 400 in rank 0's file" in str(info.value)
