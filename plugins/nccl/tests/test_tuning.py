"""The selection model against what NCCL 2.30.7 printed for every shared synthetic system:
the search results (graphs, channels), the latency/bandwidth tables, the choice per size with
every model time, and the channel/chunk split of the choice."""

from __future__ import annotations

from typing import Any

import pytest

from collhub_nccl._constants import ALGOS, COLLS, PROTOS
from collhub_nccl._split import split
from collhub_nccl._tuning import choose, model

from .conftest import system_of


def _g(v: float) -> float:
    return float(f"{v:g}")  # NCCL's model.jsonl prints %g (6 significant digits)


def test_graphs_and_channels_equal(models: list[dict[str, Any]]) -> None:
    assert len(models) >= 75
    for d in models:
        s = system_of(d["label"])
        for name in ("ring", "tree", "nvls"):
            mine, ref = getattr(s, name), d["graphs"][name]
            got = (mine.pattern, mine.channels, mine.bw_intra, mine.bw_inter, mine.type_intra, mine.type_inter)
            want = (
                ref["pattern"],
                ref["nChannels"],
                ref["bwIntra"],
                ref["bwInter"],
                ref["typeIntra"],
                ref["typeInter"],
            )
            assert got == want, (d["label"], name)
        assert (s.channels, s.nvls_channels, s.cpu_vendor) == (d["nChannels"], d["nvlsChannels"], d["cpuVendor"])


def test_model_tables_equal(models: list[dict[str, Any]]) -> None:
    cells = 0
    for d in models:
        m = model(system_of(d["label"]))
        assert [list(r) for r in m.max_threads] == d["maxThreads"], d["label"]
        assert [list(r) for r in m.thresholds] == d["threadThresholds"], d["label"]
        for c, coll in enumerate(COLLS):
            for a, algo in enumerate(ALGOS):
                for p, proto in enumerate(PROTOS):
                    where = (d["label"], coll, algo, proto)
                    assert _g(m.lat[c][a][p]) == d["latency_us"][coll][a][p], where
                    assert _g(m.bw[c][a][p]) == d["bandwidth_GBps"][coll][a][p], where
                    cells += 1
    assert cells == 105 * len(models)


def test_printed_table_equals_nccls_log(nccl_data: Any, models: list[dict[str, Any]]) -> None:
    import gzip

    from collhub_nccl._explain import model_table

    text = gzip.open(nccl_data / "tuning" / "nccl_info.log.gz", "rt").read()
    blocks = {b.split("\n", 1)[0].strip(): b for b in text.split("### system ")[1:]}
    for d in models:
        lines = [ln.removeprefix("NCCL INFO ") for ln in blocks[d["label"]].splitlines()]
        mine = model_table(system_of(d["label"]))
        # NCCL's log prints its rows; ours are the same strings (the third block's header pads alike)
        for row in mine:
            if row.lstrip().startswith(("Algorithm", "Protocol")):
                continue
            assert row in lines, (d["label"], row)


def test_selection_equal_every_size(selections: list[dict[str, Any]]) -> None:
    systems: dict[str, Any] = {}
    for d in selections:
        s = systems.setdefault(d["label"], system_of(d["label"]))
        ch = choose(s, d["coll"], d["nBytes"])
        where = (d["label"], d["coll"], d["nBytes"])
        assert (ch.algorithm, ch.protocol, ch.channels, ch.warps) == (
            d["algo"],
            d["proto"],
            d["nMaxChannels"],
            d["nWarps"],
        ), where
        assert {f"{a}/{p}": round(t, 3) for (a, p), t in ch.times.items()} == pytest.approx(d["time_us"], abs=6e-4)
        assert set(d["time_us"]) == {f"{a}/{p}" for a, p in ch.times}, where


def test_selected_split_equal(selections: list[dict[str, Any]]) -> None:
    checked = 0
    for d in selections:
        if d["algo"].startswith("NVLS"):
            continue  # NVLS splits per head, not by cells: not modelled
        s = system_of(d["label"])
        sp = split(
            d["coll"], d["algo"], d["proto"], d["count"], d["esize"],
            ranks=s.ranks, nodes=s.nodes, channels=d["nMaxChannels"], comm_channels=s.channels,
        )  # fmt: skip
        got = (sp.channel_lo, sp.channel_hi, sp.count_lo, sp.count_mid, sp.count_hi)
        want = tuple(d[k] for k in ("channelLo", "channelHi", "countLo", "countMid", "countHi"))
        assert got == want, (d["label"], d["coll"], d["nBytes"])
        assert (sp.chunk_lo, sp.chunk_mid, sp.chunk_hi) == (d["chunkBytesLo"], d["chunkBytesMid"], d["chunkBytesHi"])
        assert [(p.channel, p.nsteps, p.chunk_bytes, p.loop_bytes) for p in sp.parts] == [
            (p["ch"], p["nsteps"], p["chunkSize"], p["loopSize"]) for p in d["proxy"]
        ]
        checked += 1
    assert checked > 4000


def test_unseen_systems_are_consistent() -> None:
    """Systems outside the shared grid still give a choice, monotone model times and sane channels."""
    from collhub_nccl._system import parse_system

    for text in ("hopper:8x3@nic=400G", "ampere:8x32@nic=200G", "volta:1x128@nic=100G", "hopper:4x2@nic=800G"):
        s = parse_system(text)
        last: dict[tuple[str, str], float] = {}
        for k in range(10, 33):
            ch = choose(s, "AllReduce", 1 << k)
            assert 1 <= ch.channels <= 64 and ch.time_us == min(ch.times.values())
            for key, t in ch.times.items():
                assert t >= last.get(key, 0.0) * 0.5  # the tree correction may dip, never collapse
                last[key] = t
