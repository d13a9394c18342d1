"""How NCCL 2.30.7 cuts one collective into per-channel work (``scheduleCollTasksToPlan`` and
``calcCollChunking`` in ``src/enqueue.cc``), for one op alone in its group.

1. traffic = max(32 KiB, count x elemSize x trafficPerByte) (AllReduce 2, AllGather /
   ReduceScatter n, others 1; x4 for LL); per channel ``ceil(traffic / C / 16) x 16`` with C the
   op's channel cap (bounded by the communicator's channels);
2. the per-rank buffer is cut into cells of ``ceil(ceil(32 KiB / trafficPerByte) / 16) x 16`` bytes;
   the first channel takes what fits its traffic budget ("Lo"), then whole "Mid" channels, the
   rest on "Hi"; an overflow of the channel count spreads the rest evenly with the excess on Hi;
   the last cell is trimmed to the real count;
3. each part's chunk: the protocol's step (buffer / 8) x chunkSteps (Ring Simple: 4), LL halved,
   LL128 15/16 of its lines; Tree LL128 and PAT halve it for small parts; rounded down to the
   protocol's grain;
   NVLS: ``min(chunk, nvlsChunkSize = 128 KiB)``, then 64 / 32 / 16 KiB while the part is under
   64 / 8 / 2 x (heads x chunk); NVLSTree: ``min(128 KiB, treeMaxChunkSize)`` (64 KiB from 4 nodes
   on, ``ncclNvlsTuning``), then 256 / 128 / 64 / 32 KiB under 32 / 16 / 4 / 1 x (heads x chunk);
4. the proxy: steps per loop (Ring AllReduce 2(n-1), Ring AG/RS n-1, else 1), chunks per loop
   (ring n, NVLS heads, else 1), ``loops = ceil(bytes / (chunks per loop x chunk))``.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import _constants as K
from ._constants import ALGOS, PROTOS

__all__ = ["Part", "Split", "chunk_size", "split"]


def _divup(a: int, b: int) -> int:
    return -(-a // b)


def _log2i(n: int) -> int:
    return n.bit_length() - 1 if n > 0 else -1


@dataclass(frozen=True)
class Part:
    """One channel's share: ``count`` elements from element ``offset`` of the per-rank buffer."""

    channel: int
    offset: int
    count: int
    chunk_bytes: int
    chunk_steps: int
    slice_steps: int
    nsteps: int  # the proxy's buffer steps for the whole op on this channel
    loop_bytes: int


@dataclass(frozen=True)
class Split:
    collective: str
    algorithm: str
    protocol: str
    count: int
    elem_size: int
    channel_lo: int
    channel_hi: int
    count_lo: int
    count_mid: int
    count_hi: int
    chunk_lo: int
    chunk_mid: int
    chunk_hi: int
    parts: tuple[Part, ...]


def chunk_size(
    coll: str, algo: str, proto: str, nbytes: int, *, ranks: int, nodes: int, channels: int = 1, heads: int = 0
) -> tuple[int, int, int]:
    """(chunk bytes, chunkSteps, sliceSteps) of ``calcCollChunking`` for a part of ``nbytes``
    (NCCL's global bytes: the part's count x elemSize x n for AG/RS); ``heads``: NVLS heads."""
    p = PROTOS.index(proto)
    ring_simple = algo == "Ring" and proto == "Simple"
    steps3 = coll in ("AllReduce", "AllGather", "ReduceScatter")
    chunk_steps = K.RING_CHUNK_STEPS if ring_simple and steps3 else 1
    slice_steps = K.RING_SLICE_STEPS if ring_simple and steps3 else 1
    step = K.BUFF_SIZE[p] // K.NCCL_STEPS
    chunk = step * chunk_steps
    if proto == "LL":
        chunk //= 2
    if proto == "LL128":
        chunk = chunk // 16 * 15
    if algo == "Tree" and proto == "LL128":
        ppn = ranks / nodes
        steps_ll128 = 1 + _log2i(nodes) + 0.1 * ppn
        while nbytes // (channels * chunk) < steps_ll128 * 64 / ppn and chunk > 131072:
            chunk //= 2
        while nbytes // (channels * chunk) < steps_ll128 * 16 / ppn and chunk > 32768:
            chunk //= 2
    elif algo == "PAT" and coll == "AllGather":
        while chunk * channels * 32 > nbytes and chunk > 65536:
            chunk //= 2
    elif algo == "PAT" and coll == "ReduceScatter":
        while chunk * channels * 16 > nbytes and chunk > 65536:
            chunk //= 2
    elif algo == "NVLS":
        if heads < 1:
            raise ValueError("NVLS chunking needs the NVLS head count")
        chunk = min(chunk, K.NVLS_CHUNK_SIZE)
        ops = channels * heads
        for mult, cap in ((64, 65536), (8, 32768), (2, 16384)):
            if nbytes < mult * ops * chunk and chunk > cap:
                chunk = cap
    elif algo == "NVLSTree":
        if heads < 1:
            raise ValueError("NVLSTree chunking needs the NVLS head count")
        ops = channels * heads
        chunk = min(K.NVLS_CHUNK_SIZE, K.NVLS_TREE_MAX_CHUNK_4NODES if nodes >= 4 else K.NVLS_CHUNK_SIZE)
        for mult, cap in ((32, 262144), (16, 131072), (4, 65536), (1, 32768)):
            if nbytes < mult * ops * chunk and chunk > cap:
                chunk = cap
    elif algo.startswith("CollNet"):
        raise ValueError(f"the split of {algo} is not modelled (per CollNet head, not by cells)")
    chunk = chunk // K.GRAIN[p] * K.GRAIN[p]
    return chunk, chunk_steps, slice_steps


def _traffic_per_byte(coll: str, ranks: int) -> int:
    return 2 if coll == "AllReduce" else ranks if coll in ("AllGather", "ReduceScatter") else 1


def split(
    coll: str,
    algo: str,
    proto: str,
    count: int,
    elem_size: int,
    *,
    ranks: int,
    nodes: int,
    channels: int,
    comm_channels: int | None = None,
    heads: int = 0,
) -> Split:
    """The split of one op of ``count`` elements per rank (AllGather: per-rank input; ReduceScatter:
    per-rank output) over at most ``channels`` channels (NVLS/NVLSTree: ``comm_channels`` is the
    communicator's NVLS channels and ``heads`` its NVLS heads)."""
    if algo not in ALGOS or proto not in PROTOS:
        raise ValueError(f"unknown algorithm/protocol {algo}/{proto}")
    comm_ch = comm_channels if comm_channels is not None else channels
    n_max = comm_ch
    tpb = _traffic_per_byte(coll, ranks)
    if proto == "LL":
        tpb *= 4
    traffic = max(K.MIN_TRAFFIC_PER_CHANNEL, count * elem_size * tpb)
    n_ch = min(channels, n_max)
    per_channel = _divup(traffic // n_ch, 16) * 16
    cell = _divup(_divup(K.MIN_TRAFFIC_PER_CHANNEL, tpb), 16) * 16
    per_cell_elems = cell // elem_size
    cells = _divup(count * elem_size, cell)
    traffic_per_cell = cell * tpb
    cells_per_channel = min(cells, _divup(per_channel, traffic_per_cell))
    channel_id = 0
    cells_lo = cells if channel_id + 1 == n_max else min(cells, _divup(per_channel, traffic_per_cell))
    n_mid = (cells - cells_lo) // cells_per_channel if cells_per_channel else 0
    cells_hi = (cells - cells_lo) % cells_per_channel if cells_per_channel else 0
    n_used = (1 if cells_lo else 0) + n_mid + (1 if cells_hi else 0)
    if n_max < channel_id + n_used:
        n_mid = n_max - channel_id - 2
        cells_per_channel = (cells - cells_lo) // (n_mid + 1)
        cells_hi = cells_per_channel + (cells - cells_lo) % (n_mid + 1)
    if cells_hi == 0 and n_mid != 0:
        cells_hi = cells_per_channel
        n_mid -= 1
    if cells_lo == 0:
        channel_id += 1
        if n_mid == 0:
            cells_lo, cells_hi = cells_hi, 0
        else:
            cells_lo = cells_per_channel
            n_mid -= 1
    count_mid = cells_per_channel * per_cell_elems if n_mid else 0
    count_lo = cells_lo * per_cell_elems
    count_hi = cells_hi * per_cell_elems
    excess = cells * per_cell_elems - count
    if count_hi:
        count_hi -= excess
    else:
        count_lo -= excess
    n_used = (1 if count_lo else 0) + n_mid + (1 if cells_hi else 0)
    global_per_elem = elem_size * (ranks if coll in ("AllGather", "ReduceScatter") else 1)

    def chunk_of(c: int) -> tuple[int, int, int]:
        return (
            chunk_size(coll, algo, proto, global_per_elem * c, ranks=ranks, nodes=nodes, heads=heads)
            if c
            else (0, 0, 0)
        )

    lo, mid, hi = chunk_of(count_lo), chunk_of(count_mid), chunk_of(count_hi)
    ring = algo == "Ring" and coll in ("AllReduce", "AllGather", "ReduceScatter")  # Broadcast/Reduce: pipelines
    steps_loop = (2 * (ranks - 1) if coll == "AllReduce" else ranks - 1) if ring else 1
    chunks_loop = ranks if ring else heads if algo.startswith("NVLS") else 1
    parts = []
    lo_ch, hi_ch = channel_id, channel_id + n_used - 1
    for c in range(lo_ch, hi_ch + 1):
        if c == lo_ch:
            off, cnt, ck = 0, count_lo, lo
        elif c == hi_ch:
            off, cnt, ck = count_lo + n_mid * count_mid, count_hi, hi
        else:
            off, cnt, ck = count_lo + (c - lo_ch - 1) * count_mid, count_mid, mid
        loop = chunks_loop * ck[0]
        loops = _divup(global_per_elem * cnt, loop) if loop else 0
        parts.append(Part(c, off, cnt, ck[0], ck[1], ck[2], steps_loop * loops * ck[1], loop))
    return Split(
        coll,
        algo,
        proto,
        count,
        elem_size,
        lo_ch,
        hi_ch,
        count_lo,
        count_mid,
        count_hi,
        lo[0],
        mid[0],
        hi[0],
        tuple(parts),
    )
