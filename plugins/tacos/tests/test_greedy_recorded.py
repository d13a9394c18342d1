"""The greedy makes the schedules recorded from main's code before the packed scan
(``data/greedy_recorded.json``, written by ``record_greedy.py`` at commit bc01dcc: see its
provenance field), compiled and numpy paths alike; and the packed compiled scan (``_score.claim``,
``take_packed``, ``land``) agrees with a numpy first minimum on random states."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from collhub_tacos import network_of
from collhub_tacos._greedy import greedy_allgather
from hub.topology import load_topology

from . import record_greedy

RECORDED: dict[str, Any] = json.loads((Path(__file__).parent / "data" / "greedy_recorded.json").read_text())
#: the 4096-NPU case takes ~20 s CPU: run with COLLHUB_TACOS_BIG=1 (benchmarks time it)
BIG = {record_greedy.key(c) for c in record_greedy.BIG}


def test_the_record_has_provenance_from_main() -> None:
    assert "bc01dcc" in RECORDED["provenance"]
    assert {record_greedy.key(c) for c in record_greedy.CASES} <= set(RECORDED["cases"])


@pytest.mark.parametrize("name", sorted(RECORDED["cases"]))
def test_same_schedule_as_recorded(name: str) -> None:
    if name in BIG and not os.environ.get("COLLHUB_TACOS_BIG"):
        pytest.skip("4096 NPUs: set COLLHUB_TACOS_BIG=1 (about 20 s)")
    rec = RECORDED["cases"][name]
    got = record_greedy.run_case(*rec["args"])
    assert got == {k: rec[k] for k in got}, name


@pytest.mark.parametrize(
    "name", ["torus:16x16 k=1 tacos seed=0 scarce rule=True", "mesh:16x16 k=2 tacos seed=0 scarce rule=True"]
)
def test_numpy_path_makes_the_recorded_schedule(name: str) -> None:
    rec = RECORDED["cases"][name]
    assert record_greedy.run_case(*rec["args"], compiled=False) == {
        k: rec[k] for k in record_greedy.run_case(*rec["args"])
    }


def _random_uniform_topology(rng: np.random.Generator) -> str:
    """Uniform-speed networks (the packed scan's domain), odd sizes so columns are not whole words."""
    kind = int(rng.integers(4))
    a, b, c = (int(x) for x in rng.integers(2, 7, size=3))
    return [f"torus:{a}x{b + 1}", f"mesh:{a}x{b}x{min(c, 3)}", f"torus:{a}x{b}x{min(c, 3)}", f"ring:{a * b + 1}"][kind]


@pytest.mark.parametrize("case", range(12))
def test_compiled_matches_numpy_on_random_uniform_topologies(case: int) -> None:
    rng = np.random.default_rng(1000 + case)
    topo = _random_uniform_topology(rng)
    chunks = int(rng.integers(1, 4))
    model = str(rng.choice(["tacos", "pipelined"]))
    policy = str(rng.choice(["scarce", "random"]))
    net = network_of(load_topology(topo))
    for n in (net, net.reversed()):
        busy, delay = n.link_times_us((1 << 20) / chunks, model)
        got = greedy_allgather(n, chunks, busy, delay, np.random.default_rng(case), None, policy, True, True)
        ref = greedy_allgather(n, chunks, busy, delay, np.random.default_rng(case), None, policy, True, False)
        what = f"{topo} k={chunks} {model} {policy}"
        for field in ("chunk", "link", "start", "end"):
            assert np.array_equal(getattr(got, field), getattr(ref, field)), f"{what}: {field}"
        assert (got.events, got.makespan) == (ref.events, ref.makespan), what


@pytest.mark.parametrize("cols", [1, 7, 8, 63, 64, 65, 200])
@pytest.mark.parametrize("low", [0, 1])
def test_claim_is_the_numpy_first_minimum(cols: int, low: int) -> None:
    """take_packed builds the bitsets of a packed matrix; claim returns, per link, numpy's first
    minimum of P[v] | (0x80 unless u has it and v has not claimed it), and claims it."""
    from collhub_tacos import _score

    rng = np.random.default_rng(cols * 2 + low)
    rows = 9
    has = rng.random((rows, cols)) < 0.5
    claimed = has | (rng.random((rows, cols)) < 0.3)
    supply = rng.integers(1, 6, size=(rows, cols)).astype(np.uint8) if low else np.zeros((rows, cols), np.uint8)
    a = supply | (has.view(np.uint8) << 6) | (claimed.view(np.uint8) << 7)
    words = (cols + 63) // 64
    P = np.empty_like(a)
    HB = np.zeros((rows, words), np.uint64)
    CB = np.zeros((rows, words), np.uint64)
    order = rng.permutation(cols).astype(np.int32)
    swords = (words + 63) // 64
    HS, NS = np.zeros((rows, swords), np.uint64), np.zeros((rows, swords), np.uint64)
    _score.take_packed(a, rows, cols, order, P, HB, CB, HS, NS)
    full = np.full(words, ~np.uint64(0))
    if cols % 64:
        full[-1] = np.uint64((1 << (cols % 64)) - 1)
    for r in range(rows):  # the summaries: a bit per word, HB's word not zero, CB's word not full
        hs = np.unpackbits(HS[r].view(np.uint8), bitorder="little")[:words].astype(bool)
        ns = np.unpackbits(NS[r].view(np.uint8), bitorder="little")[:words].astype(bool)
        assert np.array_equal(hs, HB[r] != 0) and np.array_equal(ns, CB[r] != full)
    assert np.array_equal(P, a[:, order])
    bits = np.unpackbits(HB.view(np.uint8), axis=1, bitorder="little")[:, :cols]
    assert np.array_equal(bits.astype(bool), has[:, order])
    assert np.array_equal(
        np.unpackbits(CB.view(np.uint8), axis=1, bitorder="little")[:, :cols].astype(bool), claimed[:, order]
    )
    v = rng.permutation(rows).astype(np.int64)  # distinct destinations (one slot)
    u = rng.integers(0, rows, size=rows).astype(np.int64)
    key = P[v] | np.where(bits[u].astype(bool) & ~(P[v] >= 0x80), 0, 0x80).astype(np.uint8)
    want = key.argmin(axis=1)
    best = np.empty(rows, np.int64)
    val = np.empty(rows, np.uint8)
    _score.claim(P, HB, CB, rows, cols, v, u, low, best, val)
    found = key[np.arange(rows), want] < 0x80
    assert np.array_equal(val[found], key[np.arange(rows), want][found])
    assert np.array_equal(best[found], want[found])
    assert (val[~found] == 0x80).all()
    assert (P[v[found], best[found]] >= 0x80).all()  # claimed
    cb = np.unpackbits(CB.view(np.uint8), axis=1, bitorder="little")[:, :cols].astype(bool)
    assert cb[v[found], best[found]].all()


def test_claim_refuses_bad_shapes() -> None:
    from collhub_tacos import _score

    P = np.zeros((2, 8), np.uint8)
    HB = np.zeros((2, 1), np.uint64)
    idx = np.zeros(1, np.int64)
    with pytest.raises(ValueError):
        _score.claim(P, HB, np.zeros((2, 2), np.uint64), 2, 8, idx, idx, 1, idx.copy(), np.zeros(1, np.uint8))
    with pytest.raises(IndexError):
        _score.claim(P, HB, HB.copy(), 2, 8, np.array([5]), idx, 1, idx.copy(), np.zeros(1, np.uint8))


def _event_state(rows: int = 2, cols: int = 8, links: int = 2, depth: int = 1) -> dict[str, np.ndarray]:
    """A consistent packed state for the event calls: links 0 -> 1 and 1 -> 0, nothing in flight."""
    return {
        "P": np.zeros((rows, cols), np.uint8),
        "HB": np.zeros((rows, (cols + 63) // 64), np.uint64),
        "CB": np.zeros((rows, (cols + 63) // 64), np.uint64),
        "src": np.array([0, 1], np.int64),
        "dst": np.array([1, 0], np.int64),
        "land_at": np.full((links, depth), np.inf),
        "carry": np.full((links, depth), -1, np.int64),
        "holders": np.ones(cols, np.int64),
        "HS": np.zeros((rows, 1), np.uint64),
        "NS": np.full((rows, 1), 1, np.uint64),  # the one word of each row is not fully claimed
    }


def test_deliver_packed_lands_and_refuses_bad_state() -> None:
    from collhub_tacos import _score

    s = _event_state()
    s["land_at"][0, 0], s["carry"][0, 0] = 1.0, 3  # chunk 3 lands at NPU 1 over link 0 -> 1
    optr, oidx = np.array([0, 1, 2], np.int64), np.array([0, 1], np.int64)  # NPU 0 feeds link 0, NPU 1 link 1
    arrays = (s["P"], s["HB"], s["land_at"], s["carry"], s["dst"], optr, oidx, s["holders"], s["HS"])
    assert _score.deliver_packed(arrays, 2, 8, 2, 1, True, 0.5) == 0  # not yet
    assert _score.deliver_packed(arrays, 2, 8, 2, 1, True, 1.0) == 1
    assert s["P"][1, 3] == 0x40 and s["P"][0, 3] == 1  # has at 1; NPU 0 (fed by 1) gains a supplier
    assert s["HB"][1, 0] == 1 << 3 and s["HS"][1, 0] == 1 and s["HS"][0, 0] == 0 and s["holders"][3] == 2
    assert s["land_at"][0, 0] == np.inf and s["carry"][0, 0] == -1
    with pytest.raises(ValueError):
        _score.deliver_packed(arrays, 2, 9, 2, 1, True, 1.0)  # P is not (2, 9)
    with pytest.raises(IndexError):
        bad = arrays[:6] + (np.array([0, 7], np.int64),) + arrays[7:]
        _score.deliver_packed(bad, 2, 8, 2, 1, True, 1.0)


def test_match_packed_starts_and_refuses_bad_state() -> None:
    from collhub_tacos import _score

    s = _event_state()
    s["P"][0, 2] |= 0x40 | 0x80 | 1  # NPU 0 holds column 2 (NPU 1 has one supplier of it)
    s["P"][1, 2] = 1
    s["HB"][0, 0] = 1 << 2
    s["HS"][0, 0] = 1
    s["CB"][0, 0] = 1 << 2
    free, perm = np.array([0, 1], np.int64), np.array([1, 0], np.int64)
    times = np.array([2.0, 2.0]), np.array([3.0, 3.0])
    free_at, start_at, rec_id = np.zeros(2), np.zeros((2, 1)), np.full((2, 1), -1, np.int64)
    chunk_of = np.arange(8, dtype=np.int64)[::-1].copy()
    rec = np.zeros(4, np.int32), np.zeros(4, np.int32), np.zeros(4), np.zeros(4)
    arrays = (s["P"], s["HB"], s["CB"], free, perm, s["src"], s["dst"], *times, free_at, s["land_at"], start_at)
    arrays += (s["carry"], rec_id, chunk_of, *rec, s["HS"], s["NS"])
    n, nxt = _score.match_packed(arrays, 2, 8, 2, 1, 1, 0, 10.0, 10.0 + 1e-9)
    assert (n, nxt) == (1, 12.0)  # link 0 (0 -> 1) carries column 2; link 0 frees at 12, it lands at 13
    assert (rec[0][0], rec[1][0], rec[2][0], rec[3][0]) == (5, 0, 10.0, 13.0)  # chunk_of[2] = 5
    assert s["carry"][0, 0] == 2 and s["land_at"][0, 0] == 13.0 and free_at[0] == 12.0
    assert s["P"][1, 2] & 0x80 and s["CB"][1, 0] == 1 << 2  # claimed at NPU 1
    with pytest.raises(IndexError):
        bad = (s["P"], s["HB"], s["CB"], free, np.array([0, 5], np.int64)) + arrays[5:]
        _score.match_packed(bad, 2, 8, 2, 1, 1, 0, 10.0, 10.0)
    with pytest.raises(ValueError):
        _score.match_packed(arrays, 2, 8, 2, 1, 1, 5, 10.0, 10.0)  # n_recs beyond the record arrays


@pytest.mark.parametrize("topology,chunks", [("torus:4x4", 260), ("ring:3", 1400)])
def test_compiled_matches_numpy_past_4096_columns(topology: str, chunks: int) -> None:
    """Over 64 words a row (4096 columns), the scan's summaries take more than one word each."""
    net = network_of(load_topology(topology))
    assert net.npus * chunks > 4096
    busy, delay = net.link_times_us((1 << 20) / chunks, "tacos")
    got = greedy_allgather(net, chunks, busy, delay, np.random.default_rng(3), None, "scarce", True, True)
    ref = greedy_allgather(net, chunks, busy, delay, np.random.default_rng(3), None, "scarce", True, False)
    for field in ("chunk", "link", "start", "end"):
        assert np.array_equal(getattr(got, field), getattr(ref, field)), field
