"""NCCL 2.30.7's tuning constants, restated (``src/graph/tuning.cc``, ``src/enqueue.cc``,
``src/graph/search.cc``; commit 5067397c2676d5aed50042fc39e5c8ee96eb0027).

Index orders are NCCL's, so a table here reads like NCCL's own:

* algorithms ``Tree, Ring, CollNetDirect, CollNetChain, NVLS, NVLSTree, PAT``
* protocols ``LL, LL128, Simple``
* hardware ``NVLink, PCI, Net``; compute-capability rows ``Volta, Ampere, Hopper, Blackwell``;
  node-count columns ``1, 2, >= 3``.

Values are numbers only; the formulas that use them live in ``_tuning`` and ``_split``.
"""

from __future__ import annotations

__all__ = [
    "ALGOS",
    "BASE_LAT",
    "BUFF_SIZE",
    "COLLS",
    "GRAIN",
    "HW_LAT",
    "LL128_PER_CH_RING",
    "LL128_PER_CH_TREE",
    "LL_MAX",
    "MAX_NVLS_ARITY",
    "MAX_THREADS",
    "NCCL_COMMIT",
    "NCCL_STEPS",
    "NCCL_VERSION",
    "NVLS_CHUNK_SIZE",
    "NVLS_EFF",
    "NVLS_TREE_MAX_CHUNK_4NODES",
    "NVLS_TREE_PER_CH",
    "PROTOS",
    "THREAD_THRESHOLD",
    "TREE_CORRECTION",
    "TREE_PER_CH",
]

NCCL_VERSION = "2.30.7"
NCCL_COMMIT = "5067397c2676d5aed50042fc39e5c8ee96eb0027"

ALGOS = ("Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT")
PROTOS = ("LL", "LL128", "Simple")
#: NCCL's function order (ncclFunc_t), the order of its printed table
COLLS = ("Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce")

TREE, RING, COLLNET_DIRECT, COLLNET_CHAIN, NVLS, NVLS_TREE, PAT = range(7)
LL, LL128, SIMPLE = range(3)
HW_NVLINK, HW_PCI, HW_NET = range(3)

#: base latency (us) per algorithm, protocol
BASE_LAT = (
    (6.8, 14.0, 8.4),
    (6.6, 14.0, 8.4),
    (0.0, 0.0, 0.0),
    (0.0, 0.0, 0.0),
    (0.0, 0.0, 0.0),
    (0.0, 0.0, 0.0),
    (8.0, 8.0, 8.0),
)
#: hardware latency per step (us): [hw][algorithm][protocol]
HW_LAT = (
    (  # NVLink
        (0.6, 1.25, 4.0),
        (0.6, 1.9, 3.4),
        (0.0, 0.0, 3.7),
        (0.0, 0.0, 2.8),
        (0.0, 0.0, 25.0),
        (0.0, 0.0, 25.0),
        (0.0, 0.0, 4.0),
    ),
    (  # PCI
        (1.0, 1.9, 4.0),
        (1.0, 2.5, 5.7),
        (0.0, 0.0, 3.7),
        (0.0, 0.0, 2.8),
        (0.0, 0.0, 0.0),
        (0.0, 0.0, 0.0),
        (0.0, 0.0, 4.0),
    ),
    (  # Net
        (5.0, 8.5, 14.0),
        (2.7, 4.0, 14.0),
        (0.0, 0.0, 31.0),
        (0.0, 0.0, 30.0),
        (0.0, 0.0, 18.0),
        (0.0, 0.0, 20.9),
        (0.0, 0.0, 14.0),
    ),
)
#: LL bandwidth ceiling (GB/s): row = GPU generation on one node, CPU vendor row (0 Intel/other,
#: 1 AMD/mixed) on several; column = nodes 1 / 2 / >= 3
LL_MAX = (
    (39.0, 39.0, 20.4),
    (87.7, 22.5, 19.0),
    (141.0, 45.0, 35.0),
    (282.0, 90.0, 70.0),
)
LL128_PER_CH_RING = ((20.0, 20.0, 20.0), (20.0, 20.0, 20.0), (36.7, 36.7, 36.7), (40.0, 40.0, 40.0))
LL128_PER_CH_TREE = ((20.0, 20.0, 20.0), (20.0, 20.0, 20.0), (36.7, 36.7, 29.0), (55.6, 31.67, 20.0))
TREE_PER_CH = ((26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (38.7, 41.4, 36.0), (70.0, 42.8, 24.0))
NVLS_TREE_PER_CH = ((26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (0.0, 57.7, 45.5), (0.0, 96.0, 80.0))
NVLS_EFF = (0.0, 0.0, 0.85, 0.74)

#: Tree AllReduce bandwidth factor per protocol and floor(log2(nBytes / 64)), indices 0..22 used
TREE_CORRECTION = (
    (
        1.0,
        1.0,
        1.0,
        1.0,
        0.9,
        0.8,
        0.7,
        0.7,
        0.7,
        0.7,
        0.6,
        0.5,
        0.4,
        0.4,
        0.5,
        0.6,
        0.7,
        0.8,
        0.9,
        1.0,
        1.0,
        1.0,
        1.0,
        1.0,
    ),
    (
        1.0,
        1.0,
        1.0,
        1.0,
        1.0,
        0.9,
        0.8,
        0.8,
        0.8,
        0.7,
        0.6,
        0.6,
        0.6,
        0.6,
        0.6,
        0.6,
        0.8,
        0.9,
        0.9,
        0.9,
        0.9,
        1.0,
        1.0,
        1.0,
    ),
    (
        0.9,
        0.9,
        0.9,
        0.9,
        0.9,
        0.9,
        0.9,
        0.8,
        0.7,
        0.6,
        0.6,
        0.5,
        0.5,
        0.5,
        0.5,
        0.6,
        0.7,
        0.8,
        0.7,
        0.7,
        0.8,
        0.9,
        0.9,
        0.9,
    ),
)

#: default thread counts (NCCL_LL_MAX_NTHREADS, NCCL_LL128_MAX_NTHREADS, NCCL_SIMPLE_MAX_NTHREADS),
#: NCCL_MAX_NTHREADS (CollNet, NVLS, Tree and PAT kernels), warp size
MAX_THREADS = (512, 640, 512)
MAX_NTHREADS = 640
WARP = 32
#: bytes per thread before another channel / more threads are used (LL, LL128, Simple)
THREAD_THRESHOLD = (8, 8, 64)

#: default connection buffers (bytes) per protocol; NCCL_STEPS slots each
BUFF_SIZE = (1 << 19, 4_915_200, 1 << 22)
NCCL_STEPS = 8
#: ``NCCL_NVLS_CHUNKSIZE`` default and NVLSTree's ``treeMaxChunkSize`` from 4 nodes on (sm90,
#: ``src/transport/nvls.cc`` ``ncclNvlsTuning``); below 4 nodes the tree cap is the chunk size
NVLS_CHUNK_SIZE = 128 << 10
NVLS_TREE_MAX_CHUNK_4NODES = 64 << 10
#: most NVLS heads per node (``NCCL_MAX_NVLS_ARITY``)
MAX_NVLS_ARITY = 32
#: ncclProtoGrainSize: LL 16 B, LL128 1920 B (15 x 128), Simple 512 B
GRAIN = (16, 1920, 512)
#: Ring + Simple chunk/slice steps for AllReduce, AllGather, ReduceScatter (others 1/1)
RING_CHUNK_STEPS = 4
RING_SLICE_STEPS = 2
#: smallest traffic a group charges per channel
MIN_TRAFFIC_PER_CHANNEL = 32 << 10
#: NVLS: nvlsChunkSize default, channels on sm90 / sm100
NVLS_CHUNK = 128 << 10
PAT_MAX_PARALLEL = 16

#: topology-search speed ladders (GB/s per channel), search.cc
SPEED_INTRA = {
    70: (40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0),
    90: (60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0),
}
SPEED_INTER = {
    70: (48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.4, 1.2, 0.24, 0.12),
    90: (48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12),
}
