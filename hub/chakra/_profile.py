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
