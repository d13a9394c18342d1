"""Names and defaults of the collhub collective profile (see docs/spec/collective-profile.md).

Node attributes come in two groups: the ones ASTRA-sim reads (``comm_*``, typed as every Chakra
reader expects) and the profile's semantic attributes (short names, all ``int32_val``), which
are written only when they differ from their default.
"""

from __future__ import annotations

from ._model import NodeType

__all__ = [
    "ATTR_COMM_DST",
    "ATTR_COMM_SIZE",
    "ATTR_COMM_SRC",
    "ATTR_COMM_TAG",
    "ET_VERSION",
    "META",
    "ONESIDED",
    "PROFILE_VERSION",
    "SCHEMA",
    "SEMANTIC_ATTRS",
    "count_default",
]

#: GlobalMetadata.version written by collhub (never empty: see the zero-length pitfall).
ET_VERSION = "0.0.4"
#: GlobalMetadata attr ``schema``: the value ASTRA-sim's own converter writes.
SCHEMA = "1.0.2-chakra.0.0.4"
#: Version of this profile, in GlobalMetadata attr ``collhub_profile``.
PROFILE_VERSION = "1.0"

# ASTRA-sim attributes: comm_size int64_val, peers and tag int32_val.
ATTR_COMM_SIZE = "comm_size"
ATTR_COMM_SRC = "comm_src"
ATTR_COMM_DST = "comm_dst"
ATTR_COMM_TAG = "comm_tag"

#: Semantic attributes: attribute name -> (RankGraph column, default). All int32_val.
#: ``cnt`` has a per-type default, see :func:`count_default`.
SEMANTIC_ATTRS: tuple[tuple[str, str, int], ...] = (
    ("cnt", "count", 0),
    ("sbuf", "src_buf", -1),
    ("soff", "src_off", -1),
    ("dbuf", "dst_buf", -1),
    ("doff", "dst_off", -1),
    ("op", "op", 0),
    ("tb", "tb", -1),
    ("chan", "chan", 0),
)


def count_default(kind: int) -> int:
    """Default of ``cnt``: one chunk for SEND/RECV, none for every other node type."""
    return 1 if kind in (NodeType.SEND, NodeType.RECV) else 0


class META:
    """GlobalMetadata attribute names of the profile."""

    SCHEMA = "schema"
    PROFILE = "collhub_profile"
    COLLECTIVE = "collective"
    RANKS = "ranks"
    IN_CHUNKS = "in_chunks"
    OUT_CHUNKS = "out_chunks"
    SCRATCH_CHUNKS = "scratch_chunks"
    INPLACE = "inplace"
    ROOT = "root"
    ALGORITHM = "algorithm"
    PRODUCER = "producer"
    SIZE = "size"
    RANK = "rank"
    #: a workload's name (workload files only)
    WORKLOAD = "workload"


#: Every GlobalMetadata attribute the profile interprets; others go to AlgorithmMeta.extra.
META_NAMES = frozenset(v for k, v in vars(META).items() if not k.startswith("_") and isinstance(v, str))


class ONESIDED:
    """Node and GlobalMetadata attribute names of the one-sided section of the profile (section 10
    of docs/spec/collective-profile.md): what a SEND/RECV/COMP node lowered from a one-sided
    program (MSCCL++ execution plans, NCCL NVLS/symmetric kernels) keeps of its source.

    Node attributes are foreign attributes in the profile's sense (readers keep them, ASTRA-sim
    ignores them); all are written by every one-sided producer with the same meaning.
    """

    #: string_val: the source op code (``put``, ``get``, ``signal``, ``glres``, ...)
    OP = "os.op"
    #: int32_val: index of the op in its thread block (pipeline bodies unrolled: see ``ITER``)
    INDEX = "os.idx"
    #: int32_val: pipeline iteration the node belongs to (absent: not in a pipeline)
    ITER = "os.iter"
    #: string_val: channel type, ``memory`` | ``port`` | ``switch`` | ``none``
    CHANNEL = "os.channel"
    #: int32_val: connection index k: the k-th channel of its type between the two ranks (the
    #: executor pairs the k-th channel of r->p with the k-th of p->r); the node's ``chan`` column
    #: holds the same value
    CONN = "os.conn"
    #: int32_val 1: a relaxed signal/wait (orders execution, makes no data visible)
    RELAXED = "os.relaxed"
    #: int32_val 1: a synchronisation-only node (signal, wait, nop, barrier, semaphore): its
    #: chunks, if any, are synthesized flag chunks, not data
    SYNC = "os.sync"
    #: int32_val 1: the node's chunk operands are synthesized (the flag region of scratch)
    SYNTH = "os.synth"
    #: string_val: how the node stands for its source op (``MAPPINGS``)
    MAPPING = "os.map"
    #: string_val: ``Simple`` | ``LL`` (packet) for data nodes of a packet op
    PROTOCOL = "os.proto"
    #: int32_val: wire bytes per payload byte (2 for LL packets, else absent = 1)
    PAYLOAD = "os.payload"
    #: int64_list: switch (multicast) group of a switch-lowered node, ranks in order
    GROUP = "os.group"
    #: int32_val: device semaphore id / barrier id of a sync node
    SEMAPHORE = "os.sem"
    BARRIER = "os.barrier"

    # values of MAPPING: "exact" nodes say what the hardware does; the others are labelled
    # two-sided stand-ins (section 10.3)
    EXACT = "exact"
    PULL = "pull-as-push"
    SWITCH_REDUCE = "switch-reduce-as-p2p"
    SWITCH_MULTICAST = "switch-multicast-as-p2p"
    SIGNAL = "signal-as-message"
    MAPPINGS = (EXACT, PULL, SWITCH_REDUCE, SWITCH_MULTICAST, SIGNAL)

    #: bytes a lowered signal/wait message carries once bound (one semaphore increment)
    SIGNAL_BYTES = 8
    #: GlobalMetadata prefix of a one-sided program's own top-level fields (``mscclpp.name``, ...)
    META_PREFIX = "os.meta."
    #: GlobalMetadata int32_val: chunks of the scratch buffer that are synthesized flag chunks
    #: (the last ones); GlobalMetadata int32_val: sub-chunks per source chunk
    FLAG_CHUNKS = "os.flag_chunks"
    REFINE = "os.refine"
