"""Write algorithms and workloads as Chakra ET files (``<prefix>.<rank>.et``).

Algorithm files are encoded column-wise with numpy: every field of every node becomes a
"piece" (a flat byte array plus one length per node, 0 when the field is absent), and one
gather interleaves the pieces node by node. No per-node Python object is made except for node
names and foreign attributes. The bytes are identical to what protobuf's serializer produces
for the same messages (fields in field-number order, proto3 defaults omitted); the tests check
this against :func:`._wire.encode_node` and MLCommons' decoder.

Two attribute sets are written (``attributes=``): ``"profile"``, the collhub collective profile
(lossless, docs/spec/collective-profile.md), and ``"astrasim"``, exactly what ASTRA-sim master
reads and nothing else (chakra-et.md §4.3, §5, §7).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ..errors import ExportError, UsageError
from . import _profile as P
from ._model import COMM_TYPE_OF, Algorithm, AlgorithmMeta, NodeType, RankGraph
from ._wire import TypedValue, delimit, encode_global_metadata, encode_node, varint_matrix, varint_matrix_t
from ._workload import Workload, WorkloadNode

__all__ = [
    "ASTRASIM_TAG_LIMIT", "Attributes", "astrasim_problem", "check_prefix", "encode_rank", "encode_ranks",
    "rank_path", "stale_rank_files", "write_algorithm", "write_files_atomically", "write_workload",
]

#: Which attributes the writers put on nodes and into the GlobalMetadata:
#: ``"profile"`` = the collhub profile (lossless), ``"astrasim"`` = only what ASTRA-sim reads.
Attributes = Literal["profile", "astrasim"]
_ATTRIBUTE_SETS = ("profile", "astrasim")
#: ASTRA-sim's system layer keeps tags modulo 500,000,000: larger tags would alias.
ASTRASIM_TAG_LIMIT = 500_000_000


def _check_attributes(attributes: str) -> None:
    if attributes not in _ATTRIBUTE_SETS:
        raise UsageError(f"unknown attribute set {attributes!r}", hint="use 'profile' or 'astrasim'")


def rank_path(prefix: str | os.PathLike[str], rank: int) -> Path:
    """``<prefix>.<rank>.et``."""
    return Path(f"{os.fspath(prefix)}.{rank}.et")


# -- GlobalMetadata ----------------------------------------------------------------------------
def metadata_attrs(meta: AlgorithmMeta, rank: int) -> list[tuple[str, Any]]:
    """The profile's GlobalMetadata attributes for one rank file."""
    M = P.META
    attrs: list[tuple[str, Any]] = [
        (M.SCHEMA, TypedValue("string_val", P.SCHEMA)),
        (M.PROFILE, TypedValue("string_val", P.PROFILE_VERSION)),
        (M.COLLECTIVE, TypedValue("string_val", str(meta.collective.value))),
        (M.RANKS, TypedValue("int32_val", meta.ranks)),
        (M.IN_CHUNKS, TypedValue("int32_val", meta.in_chunks)),
        (M.OUT_CHUNKS, TypedValue("int32_val", meta.out_chunks)),
        (M.SCRATCH_CHUNKS, TypedValue("int32_val", meta.scratch_chunks)),
        (M.INPLACE, TypedValue("bool_val", bool(meta.inplace))),
        (M.ROOT, TypedValue("int32_val", meta.root)),
    ]
    if meta.name:
        attrs.append((M.ALGORITHM, TypedValue("string_val", meta.name)))
    if meta.producer:
        attrs.append((M.PRODUCER, TypedValue("string_val", meta.producer)))
    if meta.size is not None:
        attrs.append((M.SIZE, TypedValue("int64_val", int(meta.size))))
    attrs.append((M.RANK, TypedValue("int32_val", rank)))
    for name, value in meta.extra:
        if name in P.META_NAMES:
            raise UsageError(f"AlgorithmMeta.extra uses the reserved metadata name {name!r}")
        attrs.append((name, value))
    return attrs


def astrasim_metadata_attrs(meta: AlgorithmMeta, rank: int) -> list[tuple[str, Any]]:
    """The small GlobalMetadata of the ``"astrasim"`` set: what the reference converter writes
    (``schema``, ``collective``) plus the rank count, the algorithm's name and size, and the rank.
    ASTRA-sim ignores all of it; collhub's reader uses ``ranks`` and ``collective``."""
    M = P.META
    attrs: list[tuple[str, Any]] = [
        (M.SCHEMA, TypedValue("string_val", P.SCHEMA)),
        (M.COLLECTIVE, TypedValue("string_val", str(meta.collective.value))),
        (M.RANKS, TypedValue("int32_val", meta.ranks)),
    ]
    if meta.name:
        attrs.append((M.ALGORITHM, TypedValue("string_val", meta.name)))
    if meta.size is not None:
        attrs.append((M.SIZE, TypedValue("int64_val", int(meta.size))))
    attrs.append((M.RANK, TypedValue("int32_val", rank)))
    return attrs


def astrasim_problem(alg: Algorithm) -> str | None:
    """The first reason ASTRA-sim's custom-collective path cannot run ``alg``, or None.

    Refused: node types other than COMM_SEND/COMM_RECV/COMP (the walker issues no others), an
    empty rank (feeder_v3 finds no dependency-free node), a message without a byte size
    (``comm_size`` is required), a peer that is not another rank, a tag outside
    0..499,999,999 (tags are kept modulo 500,000,000) and duplicate ids (feeder_v3 indexes by id).
    """
    n = alg.ranks
    for rank, g in enumerate(alg.graphs):
        kinds = g.kind
        if len(g) == 0:
            return f"rank {rank} has no nodes (ASTRA-sim's feeder refuses a graph without a dependency-free node)"
        bad = np.flatnonzero(~np.isin(kinds, (NodeType.SEND, NodeType.RECV, NodeType.COMP)))
        if bad.size:
            p = int(bad[0])
            return (
                f"rank {rank}, node {int(g.ids[p])}: node type {NodeType(int(kinds[p])).name} cannot appear in a "
                "custom-collective ET (ASTRA-sim issues only COMM_SEND, COMM_RECV and COMP nodes)"
            )
        comm = (kinds == NodeType.SEND) | (kinds == NodeType.RECV)
        unsized = np.flatnonzero(comm & (g.size < 0))
        if unsized.size:
            p = int(unsized[0])
            return (f"rank {rank}, node {int(g.ids[p])}: message has no byte size (algorithm not bound to a "
                    "collective size)")
        wrong = np.flatnonzero(comm & ((g.peer < 0) | (g.peer >= n) | (g.peer == rank)))
        if wrong.size:
            p = int(wrong[0])
            return f"rank {rank}, node {int(g.ids[p])}: peer {int(g.peer[p])} is not another rank of 0..{n - 1}"
        tags = np.flatnonzero(comm & ((g.tag < 0) | (g.tag >= ASTRASIM_TAG_LIMIT)))
        if tags.size:
            p = int(tags[0])
            return (
                f"rank {rank}, node {int(g.ids[p])}: tag {int(g.tag[p])} is outside 0..{ASTRASIM_TAG_LIMIT - 1} "
                f"(ASTRA-sim keeps tags modulo {ASTRASIM_TAG_LIMIT})"
            )
        ids = np.sort(g.ids)
        dup = np.flatnonzero(ids[1:] == ids[:-1])
        if dup.size:
            return f"rank {rank}, node {int(ids[dup[0]])}: node id used twice (ASTRA-sim indexes nodes by id)"
    return None


# -- vectorized node encoding --------------------------------------------------------------------
class _Pieces:
    """Per-node byte pieces of one rank, in output order.

    Pieces are kept *transposed*: a (w, n) uint8 matrix whose column i holds node i's bytes
    top-aligned, plus the used length per node (0 = absent). Building row by row keeps every
    numpy write contiguous. Assembly stacks the pieces, transposes once to node-major order and
    keeps the used bytes with one index computed from a mask, which is protobuf field order
    within each node.
    """

    #: beyond this width (a very long name or dependency list) pieces are gathered instead
    MAX_WIDTH = 512

    def __init__(self, n: int) -> None:
        self.n = n
        self.mats: list[Any] = []
        self.lens: list[np.ndarray] = []

    def add_varint(self, prefix: bytes, values: np.ndarray, present: np.ndarray | None, *, attr: bool = False) -> None:
        """``prefix`` + varint(value) for each node where ``present`` (all if None).

        With ``attr``, byte 1 of the prefix is a length byte that covers the rest of the piece
        (the body length of a Node.attr whose value is the varint).
        """
        n = self.n
        if present is not None:
            if not present.any():
                return
            values = np.where(present, values, 0)  # absent rows are masked out anyway
        vm, vl = varint_matrix_t(values)
        c = len(prefix)
        mat = np.empty((c + vm.shape[0], n), np.uint8)
        mat[:c] = np.frombuffer(prefix, np.uint8)[:, None]
        mat[c:] = vm
        if attr:
            mat[1] = (c - 2 + vl).astype(np.uint8)
        lens = vl + c
        if present is not None:
            lens[~present] = 0
        self.mats.append(mat)
        self.lens.append(lens)

    def add_flat(self, flat: np.ndarray, lens: np.ndarray) -> None:
        """A variable-length piece given as all nodes' bytes concatenated, with their lengths."""
        n = self.n
        w = int(lens.max()) if n else 0
        if w == 0:
            return
        if w <= self.MAX_WIDTH:
            mat = np.zeros((w, n), np.uint8)
            cols = np.repeat(np.arange(n), lens)
            rows = np.arange(flat.size) - np.repeat(np.cumsum(lens) - lens, lens)
            mat[rows, cols] = flat
            self.mats.append(mat)
        else:
            self.mats.append(_FlatPiece(flat))
        self.lens.append(lens)

    def add_int_attr(self, name: str, value_key: int, values: np.ndarray, present: np.ndarray | None) -> None:
        """A Node.attr (field 10) holding ``name`` and one varint-typed value."""
        nb = name.encode()
        # 0x52 <body len> 0x0a <name len> name <value key> varint; the body is < 128 bytes
        self.add_varint(bytes([0x52, 0, 0x0A, len(nb)]) + nb + bytes([value_key]), values, present, attr=True)

    def add_python(self, parts: dict[int, bytes]) -> None:
        """Pieces made one by one in Python (names, foreign attributes) for some positions."""
        if not parts:
            return
        lens = np.zeros(self.n, np.int64)
        keys = sorted(parts)
        lens[keys] = [len(parts[k]) for k in keys]
        self.add_flat(np.frombuffer(b"".join(parts[k] for k in keys), np.uint8), lens)

    def assemble(self) -> tuple[np.ndarray, np.ndarray]:
        """For each node, a length varint then every piece in order: (bytes, bytes per node)."""
        n = self.n
        if n == 0:
            return np.zeros(0, np.uint8), np.zeros(0, np.int64)
        body = np.sum(self.lens, axis=0) if self.lens else np.zeros(n, np.int64)
        hm, hl = varint_matrix_t(body)
        mats = [hm, *self.mats]
        lens = [hl, *self.lens]
        if any(isinstance(m, _FlatPiece) for m in mats):
            return _assemble_segments(mats, lens), body + hl
        widths = [m.shape[0] for m in mats]
        big = np.empty((sum(widths), n), np.uint8)
        off = 0
        for m, w in zip(mats, widths, strict=False):
            big[off : off + w] = m
            off += w
        # byte j of piece k of node i is kept iff j < (its length): the mask is made node-major at
        # once (a gather of the lengths, then one compare), and boolean indexing of the transposed
        # bytes keeps them in node order, fields in order (no int64 index of every output byte)
        piece_lens = np.stack(lens, axis=1).astype(np.int16)  # (n, pieces); a piece is <= MAX_WIDTH
        piece_of = np.repeat(np.arange(len(widths)), widths)
        within = np.concatenate([np.arange(w, dtype=np.int16) for w in widths])
        mask = piece_lens[:, piece_of] > within[None, :]
        return np.ascontiguousarray(big.T)[mask], body + hl


class _FlatPiece:
    """A piece too wide for the matrix layout: the concatenated bytes of all nodes."""

    def __init__(self, flat: np.ndarray) -> None:
        self.flat = flat


def _assemble_segments(mats: list[Any], lens: list[np.ndarray]) -> np.ndarray:
    """General assembly by one gather over all pieces' bytes (any width)."""
    flats = []
    for m, ln in zip(mats, lens, strict=False):
        if isinstance(m, _FlatPiece):
            flats.append(m.flat)
        else:
            flats.append(m.T[np.arange(m.shape[0])[None, :] < ln[:, None]])
    seg = np.stack(lens, axis=1)  # (n, K)
    bases = np.cumsum([0] + [f.size for f in flats[:-1]])
    starts = np.empty_like(seg)
    for k in range(seg.shape[1]):
        starts[:, k] = bases[k] + np.cumsum(seg[:, k]) - seg[:, k]
    seg_len = seg.ravel()
    out_start = np.cumsum(seg_len) - seg_len
    idx = np.repeat(starts.ravel() - out_start, seg_len) + np.arange(int(seg_len.sum()))
    return np.concatenate(flats)[idx]


def encode_rank(g: RankGraph, rank: int, *, attributes: Attributes = "profile") -> np.ndarray:
    """The delimited Node messages of one rank graph, as a uint8 array."""
    return encode_ranks([g], [rank], attributes=attributes)[0]


def encode_ranks(graphs: Sequence[RankGraph], ranks: Sequence[int], *,
                 attributes: Attributes = "profile") -> list[np.ndarray]:
    """Encode several rank graphs in one vectorized pass (amortizes numpy's per-call cost).

    ``attributes`` selects the node attribute set, see :func:`write_algorithm`.
    """
    _check_attributes(attributes)
    sizes = np.array([len(g) for g in graphs], np.int64)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    n = int(offsets[-1])
    pcs = _Pieces(n)

    def col(name: str) -> np.ndarray:
        return np.concatenate([getattr(g, name) for g in graphs]) if len(graphs) > 1 else getattr(graphs[0], name)

    kind = col("kind").astype(np.int64)
    ids = col("ids")
    if n and ids.min() < 0:
        bad = int(np.searchsorted(offsets, int(np.argmax(ids < 0)), side="right")) - 1
        raise UsageError(f"rank {ranks[bad]}: node ids must be >= 0 (Chakra ids are uint64)")
    # field 1 id (omitted when 0), 2 name, 3 type
    pcs.add_varint(b"\x08", ids, ids != 0)
    if any(g.names is not None for g in graphs):
        names: dict[int, bytes] = {}
        for g, off in zip(graphs, offsets.tolist(), strict=False):
            if g.names is not None:
                names.update((off + i, encode_node(name=s)) for i, s in enumerate(g.names) if s)
        pcs.add_python(names)
    pcs.add_varint(b"\x18", kind, kind != 0)
    # field 5 data_deps, packed: the ids of the positions each node depends on
    dep_ids = np.concatenate([g.ids[g.dep_pos] for g in graphs])
    if dep_ids.size:
        dep_ptr = np.concatenate([g.dep_ptr[1:] + base for g, base in
                                  zip(graphs, np.cumsum([0] + [g.dep_pos.size for g in graphs[:-1]]), strict=False)])
        dep_ptr = np.concatenate(([0], dep_ptr))
        dm, dl = varint_matrix(dep_ids)
        dflat = dm[np.arange(dm.shape[1])[None, :] < dl[:, None]]
        csum = np.concatenate(([0], np.cumsum(dl)))
        dep_bytes = csum[dep_ptr[1:]] - csum[dep_ptr[:-1]]
        pcs.add_varint(b"\x2a", dep_bytes, dep_ptr[1:] > dep_ptr[:-1])
        pcs.add_flat(dflat, dep_bytes)
    # field 7 duration_micros (0 and unset are the same on the wire)
    dur = col("duration")
    send = kind == NodeType.SEND
    recv = kind == NodeType.RECV
    comm = send | recv
    if attributes == "astrasim":
        # exactly what the custom-collective walker reads (chakra-et.md §5.2, §7), in the reference
        # converter's order: SEND comm_size, comm_dst, comm_tag; RECV comm_size, comm_src, comm_tag
        pcs.add_varint(b"\x38", dur, (dur > 0) & (kind == NodeType.COMP))
        peer = col("peer").astype(np.int64)
        pcs.add_int_attr(P.ATTR_COMM_SIZE, 0x48, col("size"), comm)  # int64_val
        pcs.add_int_attr(P.ATTR_COMM_DST, 0x38, peer, send)  # int32_val; one of dst/src per node
        pcs.add_int_attr(P.ATTR_COMM_SRC, 0x38, peer, recv)
        pcs.add_int_attr(P.ATTR_COMM_TAG, 0x38, col("tag"), comm)
        return _split(pcs, offsets)
    pcs.add_varint(b"\x38", dur, dur > 0)
    # field 10 attributes: ASTRA-sim's first, then the profile's semantic ones
    size = col("size")
    pcs.add_int_attr(P.ATTR_COMM_SIZE, 0x48, size, size >= 0)  # int64_val
    own = np.repeat(np.asarray(ranks, np.int64), sizes)
    peer = col("peer").astype(np.int64)
    pcs.add_int_attr(P.ATTR_COMM_SRC, 0x38, np.where(send, own, peer), comm)  # int32_val
    pcs.add_int_attr(P.ATTR_COMM_DST, 0x38, np.where(send, peer, own), comm)
    tag = col("tag")
    pcs.add_int_attr(P.ATTR_COMM_TAG, 0x38, tag, comm | (tag != 0))
    cnt_default = comm.astype(np.int64)  # 1 for SEND/RECV, 0 otherwise
    for attr, column, default in P.SEMANTIC_ATTRS:
        values = col(column)
        present = values != (cnt_default if column == "count" else default)
        pcs.add_int_attr(attr, 0x38, values, present)
    if any(g.extra for g in graphs):
        parts: dict[int, bytes] = {}
        for g, off in zip(graphs, offsets.tolist(), strict=False):
            for pos, attrs in g.extra.items():
                parts[off + int(pos)] = b"".join(encode_node(attrs=[(name, value)]) for name, value in attrs)
        pcs.add_python(parts)
    return _split(pcs, offsets)


def _split(pcs: _Pieces, offsets: np.ndarray) -> list[np.ndarray]:
    """Assemble the pieces and cut the bytes at the rank boundaries ``offsets`` (in nodes)."""
    out, node_bytes = pcs.assemble()
    ends = np.concatenate(([0], np.cumsum(node_bytes)))[offsets]
    return [out[a:b] for a, b in zip(ends[:-1].tolist(), ends[1:].tolist(), strict=False)]


# -- files -------------------------------------------------------------------------------------
def write_files_atomically(contents: Sequence[tuple[Path, Sequence[bytes | np.ndarray]]], *,
                           stale: Sequence[Path] = ()) -> list[Path]:
    """Write a set of files all or nothing (see :func:`hub.atomic.write_files`)."""
    from ..atomic import write_files

    return write_files(contents, stale=stale)


def check_prefix(prefix: str | os.PathLike[str]) -> Path:
    """``prefix`` as a path, refused when it names no file (``""``, ``out/``): the rank files
    would be hidden ``.<rank>.et`` files."""
    text = os.fspath(prefix)
    if not text or text.endswith(("/", os.sep)) or Path(text).name in ("", ".", ".."):
        raise UsageError(f"output prefix {text!r} names no file",
                         hint="give a prefix such as out/ring (files out/ring.0.et, out/ring.1.et, ...)")
    return Path(text)


def stale_rank_files(prefix: str | os.PathLike[str], ranks: int) -> list[Path]:
    """Files ``<prefix>.<r>.et`` with ``r >= ranks``: the rest of an older, larger set, which
    writing a new set over the prefix removes (a reader would take them for one set)."""
    path = Path(os.fspath(prefix))
    parent = path.parent
    pat = re.compile(re.escape(path.name) + r"\.(\d+)\.et$")
    try:
        names = os.listdir(parent)
    except OSError:
        return []
    return [parent / f for f in names if (m := pat.match(f)) and int(m.group(1)) >= ranks]


#: nodes encoded per vectorized pass: big enough to amortize numpy's per-call cost, small enough
#: to keep the temporary matrices (about 150 bytes per node, several times) in cache-friendly sizes
BATCH_NODES = 16384
#: at most this many threads encode batches (memory bandwidth bounds the gain beyond)
MAX_THREADS = 4


def write_algorithm(alg: Algorithm, prefix: str | os.PathLike[str], *,
                    attributes: Attributes = "profile") -> list[Path]:
    """Write ``alg`` as ``<prefix>.<rank>.et`` files; return the paths.

    ``attributes`` chooses what goes on the wire:

    * ``"profile"`` (default): the collhub collective profile (docs/spec/collective-profile.md):
      ASTRA-sim's ``comm_*`` attributes plus the semantic ones (``cnt``, ``sbuf``, ``soff``,
      ``dbuf``, ``doff``, ``op``, ``tb``, ``chan``), foreign attributes, and the full
      GlobalMetadata. :func:`read_algorithm` gives back the same algorithm.
    * ``"astrasim"``: only what ASTRA-sim master's custom-collective path reads, typed as
      chakra-et.md §4.3/§7 prescribe. SEND: ``comm_size`` (int64, bytes), ``comm_dst``,
      ``comm_tag`` (int32); RECV: ``comm_size``, ``comm_src``, ``comm_tag``; COMP:
      ``duration_micros`` when > 0 (unset: ASTRA-sim charges 1 ns); ids, the graph's own names,
      types and ``data_deps``. GlobalMetadata: version ``0.0.4``, ``schema``, ``collective``,
      ``ranks``, ``algorithm`` (if named), ``size`` (if bound), ``rank``. An algorithm ASTRA-sim
      cannot run (see :func:`astrasim_problem`) raises :class:`hub.errors.ExportError`. Buffer
      semantics are not written, so reading such files back gives a timing-only algorithm.

    Files are written atomically as a set (temporary files, then renames), with the mode a newly
    created file gets (0666 minus the umask); rank files of an older, larger set under the same
    prefix are removed in the same step. An empty prefix (``""``, ``out/``) is refused.
    """
    check_prefix(prefix)
    _check_attributes(attributes)
    if attributes == "astrasim":
        problem = astrasim_problem(alg)
        if problem:
            raise ExportError(
                f"algorithm {alg.meta.name or alg.meta.collective.value!r}: {problem}",
                hint="ASTRA-sim's custom-collective ETs need bound SEND/RECV/COMP nodes between distinct ranks",
            )
    meta_attrs = astrasim_metadata_attrs if attributes == "astrasim" else metadata_attrs
    # ranks are encoded in batches of about BATCH_NODES nodes
    batches: list[list[int]] = []
    batch: list[int] = []
    for rank in range(len(alg.graphs) + 1):
        if batch and (rank == len(alg.graphs) or sum(len(alg.graphs[r]) for r in batch) >= BATCH_NODES):
            batches.append(batch)
            batch = []
        batch.append(rank)

    def encode(ranks: list[int]) -> list[np.ndarray]:
        return encode_ranks([alg.graphs[r] for r in ranks], ranks, attributes=attributes)

    workers = min(_cpus(), MAX_THREADS, len(batches))
    if workers > 1:
        # numpy releases the GIL in the heavy steps (copies, compares, boolean indexing): batches
        # encode in parallel threads; map() keeps the order and re-raises the first failure
        with ThreadPoolExecutor(workers) as pool:
            encoded = list(pool.map(encode, batches))
    else:
        encoded = [encode(b) for b in batches]
    contents: list[tuple[Path, Sequence[bytes | np.ndarray]]] = []
    for ranks, bodies in zip(batches, encoded, strict=False):
        for r, body in zip(ranks, bodies, strict=False):
            meta = delimit(encode_global_metadata(P.ET_VERSION, meta_attrs(alg.meta, r)))
            contents.append((rank_path(prefix, r), [meta, body]))
    return write_files_atomically(contents, stale=stale_rank_files(prefix, len(alg.graphs)))


def _cpus() -> int:
    """CPUs this process may run on (the affinity mask where known, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


# -- workloads ---------------------------------------------------------------------------------
#: Exact oneof typing of the attributes ASTRA-sim reads in a workload (chakra-et.md §4.3, §7).
WORKLOAD_TYPING: dict[str, str] = {
    "is_cpu_op": "bool_val", "num_ops": "int64_val", "tensor_size": "uint64_val", "tensor_loc": "int32_val",
    "comm_type": "int64_val", "comm_priority": "int32_val", "comm_size": "int64_val", "comm_src": "int32_val",
    "comm_dst": "int32_val", "comm_tag": "int32_val", "pg_name": "string_val", "involved_dim": "bool_list",
}


def _typed_workload_attr(name: str, value: Any) -> Any:
    field = WORKLOAD_TYPING.get(name)
    if field is None or isinstance(value, TypedValue):
        return value
    if field == "bool_list":
        return TypedValue(field, [bool(v) for v in value])
    if field == "bool_val":
        return TypedValue(field, bool(value))
    if field == "string_val":
        return TypedValue(field, str(value))
    return TypedValue(field, int(value))


def _named_workload_attrs(node: WorkloadNode) -> list[tuple[str, Any]]:
    """The attributes collhub's WorkloadNode fields stand for, in ASTRA-sim's generator order:
    ``is_cpu_op`` on every node (it picks the hardware-resource class), then the ``comm_*``."""
    comm: tuple[str, ...]
    if node.type == NodeType.COLL:
        comm = ("comm_type", "comm_size")
    elif node.type in (NodeType.SEND, NodeType.RECV):
        comm = ("comm_src", "comm_dst", "comm_size", "comm_tag")
    else:
        comm = ("comm_type", "comm_size", "comm_src", "comm_dst", "comm_tag")
    named: list[tuple[str, Any]] = [("is_cpu_op", bool(node.is_cpu_op))]
    named += [(key, getattr(node, key)) for key in comm if getattr(node, key) is not None]
    if node.pg_name:
        named.append(("pg_name", node.pg_name))
    return named


def encode_workload_node(node: WorkloadNode, rank: int = 0) -> bytes:
    """The body of one workload Node with ASTRA-sim's attribute typing.

    Attributes already in ``node.attrs`` keep their order (a workload read from a file is
    rewritten byte for byte), with the named fields' current values; named fields not in
    ``attrs`` come first. Attributes whose value is None are left out.
    """
    named = _named_workload_attrs(node)
    values = dict(named)
    attrs = [(k, v) for k, v in named if k not in node.attrs]
    attrs += [(k, values.get(k, v)) for k, v in node.attrs.items()]
    if node.id < 0 or any(d < 0 for d in node.deps):
        raise UsageError(f"workload rank {rank}, node {node.id}: ids must be >= 0")
    data_deps = list(node.deps)
    ctrl_deps = list(node.ctrl_deps)
    for d in ctrl_deps:  # deps = data_deps + ctrl_deps as read; keep each occurrence once
        if d in data_deps:
            data_deps.remove(d)
        else:
            ctrl_deps = []  # ctrl_deps no longer match deps: write everything as data_deps
            data_deps = list(node.deps)
            break
    typed = []
    for key, value in attrs:
        if value is None:
            continue
        try:
            typed.append((key, _typed_workload_attr(key, value)))
        except (TypeError, ValueError) as exc:
            raise UsageError(f"workload rank {rank}, node {node.id}: attribute {key!r}: {exc}") from None
    try:
        return encode_node(
            id=node.id, name=node.name, type=int(node.type), data_deps=data_deps, ctrl_deps=ctrl_deps,
            duration_micros=max(int(node.duration_micros or 0), 0), attrs=typed,
            # dependencies read as ctrl_deps stay ctrl_deps (a file is rewritten as it was read);
            # collhub's own dependencies are data_deps, which every Chakra reader honours
            start_time_micros=max(int(node.start_time_micros or 0), 0), inputs=node.inputs, outputs=node.outputs,
        )
    except TypeError as exc:  # a value infer_typed cannot store
        raise UsageError(f"workload rank {rank}, node {node.id}: {exc}",
                         hint="attribute values must be bool, int, float, str, bytes or lists of one of "
                              "those") from None


def write_workload(wl: Workload, prefix: str | os.PathLike[str], *,
                   attributes: Attributes = "profile") -> list[Path]:
    """Write ``wl`` as ``<prefix>.<rank>.et`` files (GlobalMetadata ``version`` = ``wl.version``).

    Nodes are written the same way in both attribute sets, with ASTRA-sim's typing. With
    ``"profile"`` the GlobalMetadata also names the workload (attribute ``workload``); with
    ``"astrasim"`` it holds the version only, byte-identical to ASTRA-sim's microbenchmark
    workloads, and a COMM_COLL node whose ``comm_type`` is no Chakra CollectiveCommType raises
    :class:`hub.errors.ExportError`.
    """
    check_prefix(prefix)
    _check_attributes(attributes)
    known = set(COMM_TYPE_OF.values())
    contents = []
    for rank, nodes in enumerate(wl.ranks):
        if attributes == "astrasim":
            for nd in nodes:
                if nd.type == NodeType.COLL and nd.comm_type not in known:
                    raise ExportError(f"workload rank {rank}, node {nd.id}: comm_type {nd.comm_type} is not a "
                                      "Chakra CollectiveCommType", hint=f"ASTRA-sim knows {sorted(known)}")
        attrs = [(P.META.WORKLOAD, TypedValue("string_val", wl.name))] if wl.name and attributes == "profile" else []
        meta = delimit(encode_global_metadata(wl.version or P.ET_VERSION, attrs))
        body = b"".join(delimit(encode_workload_node(nd, rank)) for nd in nodes)
        contents.append((rank_path(prefix, rank), [meta, body]))
    return write_files_atomically(contents, stale=stale_rank_files(prefix, len(wl.ranks)))
