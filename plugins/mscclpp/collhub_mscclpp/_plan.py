"""Reading an MSCCL++ execution plan (JSON) the way the executor's parser does.

Rules (``shared/reference/mscclpp.md`` §13.1, upstream ``src/core/executor/execution_plan.cc``):

1. the file is JSON (plain or gzip, at most ``max_bytes`` after decompression);
2. required keys: ``name collective inplace protocol gpus``; per GPU ``id input_chunks
   output_chunks scratch_chunks threadblocks channels remote_buffers``; per channel
   ``channel_type`` and ``connected_to`` or ``buffer_type`` + ``rank_groups``; per block ``id ops
   channels``; per op ``name``; per local/remote operand ``index`` and ``size``;
3. ``gpus[r].id == r``; thread-block ids ``0..n-1`` in list order;
4. op codes are the parser's 30; buffer types ``i o s``; channel types ``memory port none switch``;

The executor's fixed capacities (64 ops per block, which it checks at launch, and the unchecked
ones) are :mod:`._limits`' concern.

A violation is an :class:`~hub.errors.ImportFormatError` naming the file and the JSON path, with
the parser's reason. Everything is turned into plain typed records; nothing else is interpreted.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hub.errors import ImportFormatError

__all__ = ["DEFAULT_MAX_BYTES", "OPCODES", "Gpu", "Op", "Plan", "Block", "load_plan", "parse_plan"]

#: refuse files larger than this after decompression (the largest known plan is ~5.5 MB)
DEFAULT_MAX_BYTES = 256 * 1024 * 1024

OPCODES = frozenset(
    "nop barrier put pws pwsf get copy signal wait flush re res rre rres ppkt rppkt respkt cpkt upkt "
    "repkt recpkt recspkt glres gstore gstorepkt rlxsignal rlxwait pipeline sem_acquire sem_release".split()
)
BUFFER_TYPES = {"i": 0, "o": 1, "s": 2}
CHANNEL_TYPES = frozenset({"memory", "port", "none", "switch"})
TOP_FIELDS = (
    "name",
    "collective",
    "protocol",
    "inplace",
    "reuse_resources",
    "num_threads_per_block",
    "use_double_scratch_buffer",
    "buffer_alignment",
    "min_message_size",
    "max_message_size",
)


@dataclass
class Op:
    """One op as written (``raw``), with the parts every later step reads."""

    name: str
    raw: dict[str, Any]
    where: str  # JSON path, for messages
    body: list[Op] = field(default_factory=list)  # pipeline


@dataclass
class Block:
    id: int
    ops: list[Op]
    channels: dict[str, list[int]]  # type -> per-rank channel indices (the local table)
    remote_refs: dict[str, list[int]]  # access type -> remote buffer ids (the local table)


@dataclass
class Gpu:
    id: int
    input_chunks: int
    output_chunks: int
    scratch_chunks: int
    peers: dict[str, list[int]]  # memory/port: per-rank channel index -> peer
    switch: list[tuple[int, list[int]]]  # switch channel index -> (buffer, group ranks)
    remote_buffers: list[tuple[int, int, list[str]]]  # id -> (owner, buffer, access types)
    semaphores: list[int]  # init values
    blocks: list[Block]


@dataclass
class Plan:
    path: str
    top: dict[str, Any]  # the top-level fields other than gpus, as written
    gpus: list[Gpu]

    @property
    def name(self) -> str:
        return str(self.top["name"])

    @property
    def collective(self) -> str:
        return str(self.top["collective"])

    @property
    def protocol(self) -> str:
        return str(self.top["protocol"])


def load_plan(path: str | Path, *, max_bytes: int = DEFAULT_MAX_BYTES) -> Plan:
    """Read and parse ``path`` (JSON or gzip-compressed JSON)."""
    p = Path(path)
    try:
        with open(p, "rb") as fh:
            head = fh.read(2)
            fh.seek(0)
            if head == b"\x1f\x8b":
                with gzip.GzipFile(fileobj=fh) as gz:
                    data = gz.read(max_bytes + 1)
            else:
                data = fh.read(max_bytes + 1)
    except OSError as e:
        raise ImportFormatError(f"cannot read the plan: {e.strerror or e}", path=str(p)) from None
    except (EOFError, gzip.BadGzipFile) as e:
        raise ImportFormatError(f"broken gzip stream: {e}", path=str(p)) from None
    if len(data) > max_bytes:
        raise ImportFormatError(f"plan is larger than {max_bytes} bytes", path=str(p), hint="raise max_bytes")
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as e:
        line = getattr(e, "lineno", None)
        raise ImportFormatError(f"not JSON: {getattr(e, 'msg', e)}", path=str(p), line=line) from None
    return parse_plan(doc, str(p))


class _Ctx:
    def __init__(self, path: str) -> None:
        self.path = path

    def fail(self, where: str, msg: str, hint: str | None = None) -> ImportFormatError:
        return ImportFormatError(f"{where}: {msg}", path=self.path, hint=hint)

    def get(self, obj: Any, key: str, where: str, kind: type | tuple[type, ...]) -> Any:
        if not isinstance(obj, dict):
            raise self.fail(where, "expected a JSON object")
        if key not in obj:
            raise self.fail(f"{where}.{key}" if where else key, "missing required key (the parser needs it)")
        v = obj[key]
        ok = isinstance(v, kind) and not (kind is int and isinstance(v, bool))
        if isinstance(kind, tuple) and int in kind and isinstance(v, bool) and bool not in kind:
            ok = False
        if not ok:
            name = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
            raise self.fail(f"{where}.{key}" if where else key, f"expected {name}, got {type(v).__name__}")
        return v

    def count(self, obj: Any, key: str, where: str) -> int:
        v = self.get(obj, key, where, int)
        if v < 0:
            raise self.fail(f"{where}.{key}", f"must be >= 0, got {v}")
        return int(v)


def parse_plan(doc: Any, path: str = "<plan>") -> Plan:
    """Check ``doc`` against the parser's rules and return a :class:`Plan`."""
    c = _Ctx(path)
    if not isinstance(doc, dict):
        raise c.fail("$", "a plan is a JSON object")
    for key, kind in (("name", str), ("collective", str), ("protocol", str), ("inplace", bool)):
        c.get(doc, key, "", kind)
    for key in ("reuse_resources", "use_double_scratch_buffer"):
        if key in doc and not isinstance(doc[key], bool):
            raise c.fail(key, "expected bool")
    for key in ("num_threads_per_block", "buffer_alignment", "min_message_size", "max_message_size"):
        if key in doc and (not isinstance(doc[key], int) or isinstance(doc[key], bool) or doc[key] < 0):
            raise c.fail(key, "expected a non-negative integer")
    if doc.get("buffer_alignment", 16) == 0:
        raise c.fail("buffer_alignment", "must be > 0")
    gpus_raw = c.get(doc, "gpus", "", list)
    if not gpus_raw:
        raise c.fail("gpus", "a plan needs at least one GPU")
    top = {k: doc[k] for k in TOP_FIELDS if k in doc}
    gpus = [_gpu(c, g, r, len(gpus_raw)) for r, g in enumerate(gpus_raw)]
    return Plan(path=path, top=top, gpus=gpus)


def _gpu(c: _Ctx, g: Any, r: int, n: int) -> Gpu:
    w = f"gpus[{r}]"
    gid = c.get(g, "id", w, int)
    if gid != r:
        raise c.fail(f"{w}.id", f"GPU rank does not match: id {gid} at position {r}")
    ins, outs, scr = (c.count(g, k, w) for k in ("input_chunks", "output_chunks", "scratch_chunks"))
    peers: dict[str, list[int]] = {"memory": [], "port": []}
    switch: list[tuple[int, list[int]]] = []
    for i, ch in enumerate(c.get(g, "channels", w, list)):
        cw = f"{w}.channels[{i}]"
        t = c.get(ch, "channel_type", cw, str)
        if t not in CHANNEL_TYPES:
            raise c.fail(f"{cw}.channel_type", f"Invalid channel type: {t}")
        if t == "switch":
            bt = c.get(ch, "buffer_type", cw, str)
            if bt not in BUFFER_TYPES:
                raise c.fail(f"{cw}.buffer_type", f"Invalid buffer type: {bt}")
            for j, grp in enumerate(c.get(ch, "rank_groups", cw, list)):
                ranks = c.get(grp, "ranks", f"{cw}.rank_groups[{j}]", list)
                if not all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x < n for x in ranks):
                    raise c.fail(f"{cw}.rank_groups[{j}].ranks", f"ranks must be GPU ids 0..{n - 1}")
                switch.append((BUFFER_TYPES[bt], [int(x) for x in ranks]))
            continue
        to = c.get(ch, "connected_to", cw, list)
        if not all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x < n and x != r for x in to):
            raise c.fail(f"{cw}.connected_to", f"peers must be other GPU ids in 0..{n - 1}")
        if t != "none":
            peers[t].extend(int(x) for x in to)
    rbufs: list[tuple[int, int, list[str]]] = []
    for i, rb in enumerate(c.get(g, "remote_buffers", w, list)):
        rw = f"{w}.remote_buffers[{i}]"
        owner = c.get(rb, "rank", rw, int)
        bt = c.get(rb, "type", rw, str)
        if not 0 <= owner < n or owner == r:
            raise c.fail(f"{rw}.rank", f"owner {owner} is not another GPU")
        if bt not in BUFFER_TYPES:
            raise c.fail(f"{rw}.type", f"Invalid buffer type: {bt}")
        acc = rb.get("access_channel_types", [])
        if not isinstance(acc, list) or not all(a in CHANNEL_TYPES for a in acc):
            raise c.fail(f"{rw}.access_channel_types", "expected a list of channel types")
        rbufs.append((owner, BUFFER_TYPES[bt], [str(a) for a in acc]))
    sems = []
    for i, s in enumerate(g.get("semaphores", []) or []):
        sems.append(c.count(s, "init_value", f"{w}.semaphores[{i}]"))
    blocks = [_block(c, tb, r, t) for t, tb in enumerate(c.get(g, "threadblocks", w, list))]
    return Gpu(r, ins, outs, scr, peers, switch, rbufs, sems, blocks)


def _block(c: _Ctx, tb: Any, r: int, t: int) -> Block:
    w = f"gpus[{r}].threadblocks[{t}]"
    tid = c.get(tb, "id", w, int)
    if tid != t:
        raise c.fail(f"{w}.id", f"thread-block ids must be 0..n-1 in list order: id {tid} at position {t}")
    chans: dict[str, list[int]] = {}
    for i, ch in enumerate(c.get(tb, "channels", w, list)):
        cw = f"{w}.channels[{i}]"
        ty = c.get(ch, "channel_type", cw, str)
        if ty not in CHANNEL_TYPES:
            raise c.fail(f"{cw}.channel_type", f"Invalid channel type: {ty}")
        ids = c.get(ch, "channel_ids", cw, list)
        chans.setdefault(ty, []).extend(int(x) for x in ids if isinstance(x, int))
    refs: dict[str, list[int]] = {}
    for i, rr in enumerate(tb.get("remote_buffer_refs", []) or []):
        rw = f"{w}.remote_buffer_refs[{i}]"
        ty = c.get(rr, "access_channel_type", rw, str)
        refs.setdefault(ty, []).extend(int(x) for x in c.get(rr, "remote_buffer_ids", rw, list))
    ops = [_op(c, o, f"{w}.ops[{i}]", nested=False) for i, o in enumerate(c.get(tb, "ops", w, list))]
    return Block(t, ops, chans, refs)


def _operand_ok(b: Any) -> bool:
    """The common case, checked without building messages (plans hold ~10^5 operands)."""
    if type(b) is not dict:
        return False
    i, n = b.get("index"), b.get("size")
    if type(i) is not int or type(n) is not int or i < 0 or n < 0:
        return False
    if "type" in b:
        return b["type"] in BUFFER_TYPES
    return "buffer_id" in b or "switch_channel_id" in b


def _op(c: _Ctx, o: Any, w: str, *, nested: bool) -> Op:
    name = o.get("name") if type(o) is dict else None
    if type(name) is not str:
        name = c.get(o, "name", w, str)
    if name not in OPCODES:
        raise c.fail(f"{w}.name", f"Invalid operation type: {name}")
    for key in ("src_buff", "dst_buff"):
        lst = o.get(key)
        if not lst:
            continue
        if type(lst) is not list:
            raise c.fail(f"{w}.{key}", "expected a list of operands")
        for j, b in enumerate(lst):
            if _operand_ok(b):
                continue
            bw = f"{w}.{key}[{j}]"
            c.count(b, "index", bw)
            c.count(b, "size", bw)
            if "type" in b and b["type"] not in BUFFER_TYPES:
                raise c.fail(f"{bw}.type", f"Invalid buffer type: {b['type']}")
            if not ({"type", "buffer_id", "switch_channel_id"} & set(b)):
                raise c.fail(bw, "an operand needs type, buffer_id or switch_channel_id")
    if "channel_type" in o and o["channel_type"] not in CHANNEL_TYPES:
        raise c.fail(f"{w}.channel_type", f"Invalid channel type: {o['channel_type']}")
    body: list[Op] = []
    if name == "pipeline":
        if nested:
            raise c.fail(w, "pipelines cannot be nested")
        ctx = c.get(o, "iter_context", w, dict)
        if c.count(ctx, "unit_size", f"{w}.iter_context") == 0:
            raise c.fail(f"{w}.iter_context.unit_size", "must be > 0")
        c.count(ctx, "num_chunks", f"{w}.iter_context")
        body = [_op(c, b, f"{w}.ops[{j}]", nested=True) for j, b in enumerate(c.get(o, "ops", w, list))]
    return Op(name, o, w, body)
