"""The channel/chunk split (``scheduleCollTasksToPlan`` + ``calcCollChunking``) against every
record NCCL printed: 6 (collective, algorithm) pairs x protocols x rank counts x channel caps x sizes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from collhub_nccl._split import chunk_size, split

from .conftest import jsonl


def test_chunks_equal(nccl_data: Path) -> None:
    rows = jsonl(nccl_data / "tuning" / "chunks.jsonl.gz")
    assert len(rows) > 16000
    for d in rows:
        sp = split(
            d["coll"], d["algo"], d["proto"], d["count"], d["esize"],
            ranks=d["nRanks"], nodes=d["nNodes"], channels=d["nChannelsMax"],
        )  # fmt: skip
        where = (d["coll"], d["algo"], d["proto"], d["nRanks"], d["nChannelsMax"], d["nBytes"])
        got = (sp.channel_lo, sp.channel_hi, sp.count_lo, sp.count_mid, sp.count_hi, sp.chunk_lo, sp.chunk_mid)
        keys = ("channelLo", "channelHi", "countLo", "countMid", "countHi", "chunkBytesLo", "chunkBytesMid")
        assert got == tuple(d[k] for k in keys), where
        assert sp.chunk_hi == d["chunkBytesHi"], where
        got_proxy = [
            (p.channel, p.nsteps, p.chunk_bytes, p.loop_bytes, p.offset * d["esize"], p.count * d["esize"])
            for p in sp.parts
        ]
        want_proxy = [
            (p["ch"], p["nsteps"], p["chunkSize"], p["loopSize"], p["loopOffset"], p["channelSize"]) for p in d["proxy"]
        ]
        assert got_proxy == want_proxy, where


def test_reference_example() -> None:
    """nccl.md's example: 8 ranks, 4 channels, AllReduce Ring 1 MiB float."""
    ll = split("AllReduce", "Ring", "LL", 1 << 18, 4, ranks=8, nodes=8, channels=4)
    assert [p.count * 4 for p in ll.parts] == [256 << 10] * 4 and ll.chunk_lo == 32 << 10
    simple = split("AllReduce", "Ring", "Simple", 1 << 18, 4, ranks=8, nodes=8, channels=4)
    assert simple.chunk_lo == 2 << 20 and simple.parts[0].nsteps == 56
    assert chunk_size("AllGather", "PAT", "Simple", 1 << 20, ranks=8, nodes=8)[0] == 64 << 10


def test_nvls_splits_equal(selections: list[dict[str, Any]]) -> None:
    """NVLS / NVLSTree picks of the shared systems: channels, chunk, loop and steps per channel."""
    from .conftest import system_of

    seen = 0
    for d in selections:
        if d.get("kind") != "select" or not d["algo"].startswith("NVLS"):
            continue
        s = system_of(d["label"])
        esize = d["nBytes"] // d["count"]  # the records name no type: AllReduce of floats
        sp = split(
            d["coll"], d["algo"], d["proto"], d["count"], esize, ranks=s.ranks, nodes=s.nodes,
            channels=d["nMaxChannels"], comm_channels=s.nvls_channels, heads=s.nvls_heads,
        )  # fmt: skip
        where = (d["label"], d["coll"], d["algo"], d["nBytes"])
        assert (sp.channel_lo, sp.channel_hi) == (d["channelLo"], d["channelHi"]), where
        got = [(p.channel, p.nsteps, p.chunk_bytes, p.loop_bytes, p.offset * esize, p.count * esize) for p in sp.parts]
        want = [
            (p["ch"], p["nsteps"], p["chunkSize"], p["loopSize"], p["loopOffset"], p["channelSize"]) for p in d["proxy"]
        ]
        assert got == want, where
        seen += 1
    assert seen > 100
