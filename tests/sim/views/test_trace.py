"""The simulation's Chrome/Perfetto trace can be read: slices on a track nest (here: never
overlap), every send has an arrow to its receive; the PNG stays a picture at 64 ranks."""

from __future__ import annotations

import json
import struct
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from hub.algorithms import direct, halving_doubling, ring
from hub.chakra import Algorithm
from hub.sim import simulate
from hub.sim._views.trace import trace_events, write_plot, write_trace
from tests.conftest import SHARED_DATA


def _ns(us: float) -> int:
    return round(us * 1000)


def _assert_tracks_nest(events: list[dict[str, Any]]) -> dict[tuple[int, int], list[dict[str, Any]]]:
    """The rule trace viewers draw by: on one (pid, tid) track, a slice starts after the previous
    one ends or lies wholly inside the slice that encloses it."""
    tracks: dict[tuple[int, int], list[dict[str, Any]]] = defaultdict(list)
    for e in events:
        if e["ph"] == "X":
            tracks[(e["pid"], e["tid"])].append(e)
    for key, slices in tracks.items():
        slices.sort(key=lambda e: (_ns(e["ts"]), -_ns(e["dur"])))
        open_ends: list[int] = []
        for e in slices:
            s, f = _ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"])
            while open_ends and open_ends[-1] <= s:
                open_ends.pop()
            assert not open_ends or f <= open_ends[-1], (
                f"track {key}: {e['name']} [{s}, {f}) overlaps the slice ending at {open_ends[-1]}"
            )
            open_ends.append(f)
    return tracks


def _cases() -> list[tuple[str, Algorithm, str]]:
    cases = [
        ("ring-4ch", ring("allreduce", 8, channels=4), "ring:8"),
        ("direct", direct("allreduce", 8), "switch:8"),
        ("halving-doubling", halving_doubling("allreduce", 8), "torus:2x4"),
    ]
    xml = SHARED_DATA / "msccl-ir" / "mscclang_allreduce_allpairs_n8_i2_LL.xml"
    mscclang = pytest.importorskip("collhub_mscclang") if xml.exists() else None
    if mscclang is not None:
        cases.append(("msccl-allpairs", mscclang.read_msccl_ir(xml), "switch:8"))
    return cases


@pytest.mark.parametrize("mode", ["unaware", "aware"])
def test_every_track_nests_and_every_send_has_an_arrow(mode: str) -> None:
    for name, alg, net in _cases():
        res = simulate(alg, net, mode=mode, size="1MiB")
        events = trace_events(res)
        tracks = _assert_tracks_nest(events)
        xs = [e for e in events if e["ph"] == "X"]
        sends = [e for e in xs if e["cat"] == "send"]
        assert len(sends) == res.messages, name
        # concurrency really is split into lanes (the cases have operations in flight at once)
        assert len(tracks) > 3 * res.ranks, name
        names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["name"] == "thread_name"}
        assert set(tracks) <= set(names), name
        for (pid, tid), slices in tracks.items():
            label = names[(pid, tid)]
            assert all(e["cat"] == label.split()[0] for e in slices), (name, label)
            for e in slices:  # a peer track holds only that peer's messages
                if e["cat"] != "comp":
                    assert label.split()[2] == str(e["args"]["peer"]), (name, label)
        starts = {e["id"]: e for e in events if e["ph"] == "s"}
        ends = {e["id"]: e for e in events if e["ph"] == "f"}
        assert set(starts) == set(ends) and len(starts) == res.messages, name
        by_track = {(e["pid"], e["tid"], _ns(e["ts"])): e for e in xs}
        for i, s in starts.items():
            send = by_track[(s["pid"], s["tid"], _ns(s["ts"]))]
            f = ends[i]
            assert send["cat"] == "send" and send["args"]["peer"] == f["pid"], name
            # the arrow lands inside a receive from the sender, with the same tag
            recv = [
                e for e in tracks[(f["pid"], f["tid"])] if _ns(e["ts"]) <= _ns(f["ts"]) <= _ns(e["ts"]) + _ns(e["dur"])
            ]
            assert any(
                e["cat"] == "recv" and e["args"]["peer"] == s["pid"] and e["args"]["tag"] == send["args"]["tag"]
                for e in recv
            ), name


def test_trace_file_is_chrome_json(tmp_path: Path) -> None:
    res = simulate(ring("allreduce", 8), "ring:8", mode="aware", size="1MiB")
    doc = json.loads(write_trace(res, tmp_path / "t.json").read_text())
    assert doc["otherData"]["time_ns"] == 41181 and doc["traceEvents"]
    assert {e["ph"] for e in doc["traceEvents"]} == {"M", "X", "s", "f"}


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


@pytest.mark.parametrize(("ranks", "net"), [(8, "ring:8"), (64, "torus:8x8")])
def test_png_timeline_stays_bounded(tmp_path: Path, ranks: int, net: str) -> None:
    pytest.importorskip("matplotlib")
    res = simulate(ring("allreduce", ranks), net, mode="aware", size="1MiB")
    w, h = _png_size(write_plot(res, tmp_path / "t.png"))
    assert 600 <= w <= 1600 and 300 <= h <= 1000, (w, h)
