"""Streaming MSCCL-IR reader: XML file -> :class:`hub.chakra.Algorithm` (collective profile).

The file is fed to expat in 1 MiB pieces; only the ``<gpu>`` being read is held as Python
objects, and it is lowered to a columnar rank graph as soon as ``</gpu>`` closes. Any DOCTYPE is
refused before its internal subset is read, so entity-expansion bombs never expand. A regular
file of at most 64 MiB is first offered whole to the fast path (:mod:`._scan`), which reads the
canonical subset of XML the writers produce without a Python call per element; anything else,
and every refusal, is read here (so this path words every error).

Lowering (see README "Step mapping"): every threadblock is a chain in program order, and a
cross-tb dependency (``depid``/``deps``, including those carried by a preceding nop run) becomes
a dependency on the last node of the named step.
"""

from __future__ import annotations

import codecs
import itertools
import operator
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from xml.parsers import expat

from hub.chakra import Algorithm, AlgorithmMeta, Collective, RankGraph
from hub.errors import HubError, ImportFormatError

from . import _source
from ._ir import INT_MAX, INT_MIN, INT_RE as _INT_RE
from ._lower import lower_gpus
from ._scan import MAX_FAST_BYTES, scan

__all__ = ["DEFAULT_MAX_BYTES", "read_msccl_ir"]

DEFAULT_MAX_BYTES = 512 * 1024 * 1024
NAMES_AUTO_BYTES = 512 * 1024
MAX_TOKEN_BYTES = 1 << 20  # the longest tag, comment or PI accepted (MSCCL-IR's tags are < 1 KiB)

_EXPAT_ENCODINGS = frozenset({"utf-8", "utf8", "us-ascii", "ascii", "iso-8859-1", "latin-1", "latin1", "utf-16"})
_FORMAT_HINT = "MSCCL-IR is the XML msccl-tools' ncclize writes; see plugins/mscclang/README.md for what is read"
_ENCODING_HINT = "MSCCL-IR files are UTF-8 (or ASCII, ISO-8859-1, UTF-16, or a one-byte ASCII-compatible codepage)"

_STEP_ATTRS = ("s", "type", "srcbuf", "srcoff", "dstbuf", "dstoff", "cnt", "depid", "deps", "hasdep")
_ALGO_ATTRS = ("ngpus", "coll", "nchunksperloop", "nchannels", "proto", "inplace")

_GET_STEP = operator.itemgetter(*_STEP_ATTRS)


class _Tb:
    __slots__ = ("id", "send", "recv", "chan", "line", "start", "n")

    def __init__(self, tid: int, send: int, recv: int, chan: int, line: int, start: int) -> None:
        self.id, self.send, self.recv, self.chan, self.line = tid, send, recv, chan, line
        self.start = start  # index of the tb's first step in its gpu's step rows
        self.n = 0


class _Gpu:
    __slots__ = (
        *("id", "i_chunks", "o_chunks", "s_chunks", "line", "tbs", "copies", "rows", "lines"),
        *("spans", "marks"),
    )

    def __init__(self, gid: int, i: int, o: int, s: int, line: int) -> None:
        self.id, self.i_chunks, self.o_chunks, self.s_chunks, self.line = gid, i, o, s, line
        self.tbs: list[_Tb] = []
        self.copies: list[tuple[int, int, int]] = []  # (i_off, o_off, line)
        # one row of raw attribute strings per step (see _GET_STEP), and its line
        self.rows: list[tuple[str, ...]] = []
        self.lines: list[Any] = []  # general path: ints; fast path: one array per tb, then one array
        self.spans: list[tuple[int, int]] = []  # fast path (_scan): each tb's step text
        self.marks: list[Any] = []  # and the position of each of its steps' '<'


class _Reader:
    """One parse of one file. Call :meth:`run`."""

    def __init__(self, path: Path, *, max_bytes: int, names: bool) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.want_names = names
        self.p = expat.ParserCreate()
        p = self.p
        p.StartElementHandler = self._start
        p.EndElementHandler = self._end
        p.StartDoctypeDeclHandler = self._doctype
        p.EntityDeclHandler = self._entity
        p.XmlDeclHandler = self._xml_decl
        p.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
        self.stack: list[str] = []
        self.algo: dict[str, str] | None = None
        self.gpu: _Gpu | None = None
        self.tb: _Tb | None = None
        self.graphs: dict[int, RankGraph] = {}
        self.scratch = 0
        self.custom_in = 0
        self.custom_out = 0
        self.name: str | None = None
        self.inplace_choice: bool | None = None
        self.root_choice: int | None = None
        self.sends: dict[tuple[int, int, int], tuple[_Tb, list[int], list[int]]] = {}
        self.recvs: dict[tuple[int, int, int], tuple[_Tb, list[int], list[int]]] = {}
        self.has_recv: set[int] = set()
        self.has_send: set[int] = set()
        self.tdepth = 0
        self.at_line: int | None = None  # the fast path's current line (expat's otherwise)

    # -- errors ---------------------------------------------------------------------------------
    def fail(self, msg: str, line: int | None = None, hint: str | None = None) -> ImportFormatError:
        if line is None:
            line = self._line()
        return ImportFormatError(msg, path=str(self.path), line=line, hint=hint)

    def _line(self) -> int:
        return self.p.CurrentLineNumber if self.at_line is None else self.at_line

    def _doctype(self, name: str, *_: Any) -> None:
        raise self.fail(
            f"DOCTYPE declaration <!DOCTYPE {name} ...> is not allowed in MSCCL-IR",
            hint="MSCCL-IR never uses DTDs or entities; refused to rule out entity-expansion attacks",
        )

    def _entity(self, name: str, *_: Any) -> None:
        raise self.fail(f"ENTITY declaration {name!r} is not allowed in MSCCL-IR")

    def _int(self, a: dict[str, str], key: str, elem: str) -> int:
        try:
            v = a[key]
        except KeyError:
            raise self.fail(f"attribute {key!r} of <{elem}> not found") from None
        if not _INT_RE.fullmatch(v):  # int() would also take '1_0', '٣' and the like
            raise self.fail(f"attribute {key}={v!r} of <{elem}> is not an integer")
        i = int(v)
        if not INT_MIN <= i <= INT_MAX:
            raise self.fail(
                f"attribute {key}={v} of <{elem}> is out of range",
                hint="MSCCL-IR integers are 32-bit (ids, offsets, counts, sizes in chunks)",
            )
        return i

    # -- element handlers ---------------------------------------------------------------------
    def _start(self, name: str, a: dict[str, str]) -> None:
        parent = self.stack[-1] if self.stack else None
        self.stack.append(name)
        if name == "step":
            raise self.fail("<step> outside a <tb>")
        elif name == "tb":
            if parent != "gpu":
                raise self.fail("<tb> outside a <gpu>")
            self._tb(a)
        elif name == "gpu":
            if parent != "algo":
                raise self.fail("<gpu> outside <algo>")
            self._gpu(a)
        elif name == "copy":
            if parent != "gpu":
                raise self.fail("<copy> outside a <gpu>")
            self._copy(a)
        elif name == "algo":
            if parent is not None:
                raise self.fail("<algo> must be the document element")
            self._algo(a)
        elif name == "op" and parent == "tb":
            raise self.fail(
                "'new format' <op> elements are not MSCCL-IR that any runtime loads",
                hint="regenerate with ncclize old_format=True (steps as <step s= type= srcbuf= ...>)",
            )
        elif parent is None:
            raise self.fail(f"document element is <{name}>, expected <algo>")
        # other unknown elements are skipped, as the runtimes do

    def _end(self, name: str) -> None:
        self.stack.pop()
        if name == "gpu" and self.gpu is not None:
            self._finish_gpu(self.gpu)
            self.gpu = None

    # Inside a <tb> (where almost all elements are) a leaner pair of handlers runs.
    def _start_tb(self, name: str, a: dict[str, str]) -> None:
        if name == "step" and not self.tdepth:
            # the hot path: keep the raw strings; the gpu's steps are converted in bulk later
            self.tdepth = 1
            try:
                self.rows_append(_GET_STEP(a))
            except KeyError:
                self._missing(a)
            self.lines_append(self.p.CurrentLineNumber)
            self.tb.n += 1  # type: ignore[union-attr]
            return
        if name == "step":
            raise self.fail("<step> nested inside another element of a <tb>")
        if name == "op" and not self.tdepth:
            raise self.fail(
                "'new format' <op> elements are not MSCCL-IR that any runtime loads",
                hint="regenerate with ncclize old_format=True (steps as <step s= type= srcbuf= ...>)",
            )
        if name in ("tb", "gpu", "algo", "copy"):
            raise self.fail(f"<{name}> inside a <tb>")
        self.tdepth += 1  # unknown elements are skipped, as the runtimes do

    def _end_tb(self, name: str) -> None:
        if self.tdepth:
            self.tdepth -= 1
            return
        self.stack.pop()  # </tb>
        self.tb = None
        self.p.StartElementHandler = self._start
        self.p.EndElementHandler = self._end

    def _algo(self, a: dict[str, str]) -> None:
        for k in _ALGO_ATTRS:
            if k not in a:
                raise self.fail(f"attribute {k!r} of <algo> not found")
        self.algo = a
        self.n = self._int(a, "ngpus", "algo")
        self.nchunks = self._int(a, "nchunksperloop", "algo")
        if self.n < 1:
            raise self.fail(f"ngpus={self.n} must be >= 1")
        if self.nchunks < 1:
            raise self.fail(f"nchunksperloop={self.nchunks} must be >= 1")
        try:
            self.coll = Collective.parse(a["coll"])
        except HubError:
            raise self.fail(
                f"unknown collective coll={a['coll']!r}",
                hint="allreduce, allgather, reducescatter/reduce_scatter, alltoall, broadcast, reduce, custom",
            ) from None
        self._int(a, "nchannels", "algo")  # kept in meta.extra as an int
        for k in ("inplace", "outofplace"):
            if k in a and a[k] not in ("0", "1"):
                raise self.fail(f"attribute {k}={a[k]!r} of <algo> must be 0 or 1")
        self.in_chunks, self.out_chunks = self._sizes()

    def _sizes(self) -> tuple[int, int]:
        n, N, c = self.n, self.nchunks, self.coll
        if c in (Collective.ALLGATHER, Collective.GATHER):
            if N % n:
                raise self.fail(f"{c.value}: nchunksperloop={N} is not a multiple of ngpus={n}")
            return N // n, N
        if c in (Collective.REDUCESCATTER, Collective.SCATTER):
            if N % n:
                raise self.fail(f"{c.value}: nchunksperloop={N} is not a multiple of ngpus={n}")
            return N, N // n
        if c is Collective.CUSTOM:
            return -1, -1  # decided from the gpus' i_chunks/o_chunks at the end
        return N, N

    def _gpu(self, a: dict[str, str]) -> None:
        gid = self._int(a, "id", "gpu")
        if not 0 <= gid < self.n:
            raise self.fail(f"gpu id={gid} out of range 0..{self.n - 1}")
        if gid in self.graphs:
            raise self.fail(f"gpu id={gid} appears twice")
        vals = [self._int(a, k, "gpu") for k in ("i_chunks", "o_chunks", "s_chunks")]
        if min(vals) < 0:
            raise self.fail(f"gpu {gid}: negative buffer size")
        i_chunks, o_chunks, s_chunks = vals
        self.gpu = _Gpu(gid, i_chunks, o_chunks, s_chunks, self._line())

    def _copy(self, a: dict[str, str]) -> None:
        assert self.gpu is not None
        self.gpu.copies.append((self._int(a, "i_off", "copy"), self._int(a, "o_off", "copy"), self._line()))

    def _tb(self, a: dict[str, str]) -> None:
        g = self.gpu
        assert g is not None
        tid, send, recv, chan = (self._int(a, k, "tb") for k in ("id", "send", "recv", "chan"))
        if tid != len(g.tbs):
            raise self.fail(f"gpu {g.id}: tb id={tid} but {len(g.tbs)} expected (ids must be dense 0..n-1 in order)")
        for what, peer in (("send", send), ("recv", recv)):
            if peer != -1 and not (0 <= peer < self.n) or peer == g.id:
                raise self.fail(f"gpu {g.id} tb {tid}: {what}={peer} is not -1 or another rank in 0..{self.n - 1}")
        if chan < 0:
            raise self.fail(f"gpu {g.id} tb {tid}: chan={chan} must be >= 0")
        self.tb = _Tb(tid, send, recv, chan, self._line(), len(g.rows))
        self.rows_append = g.rows.append
        self.lines_append = g.lines.append
        g.tbs.append(self.tb)
        self.tdepth = 0
        self.p.StartElementHandler = self._start_tb
        self.p.EndElementHandler = self._end_tb

    def _missing(self, a: dict[str, str]) -> None:
        tb = self.tb
        assert tb is not None and self.gpu is not None
        for k in _STEP_ATTRS:
            if k not in a:
                raise self.fail(f"gpu {self.gpu.id} tb {tb.id} step {tb.n}: attribute {k!r} of <step> not found")

    # -- lowering -----------------------------------------------------------------------------
    def _finish_gpu(self, g: _Gpu) -> None:
        self.finish_gpus([g])

    def finish_gpus(self, gpus: list[_Gpu], cols: Any = None) -> None:
        """Lower a batch of gpus (``cols``: their step columns, as the fast path read them)."""
        for g, (graph, temp_end) in zip(gpus, lower_gpus(self, gpus, cols), strict=True):
            self.graphs[g.id] = graph
            self.scratch = max(self.scratch, temp_end)
            self.custom_in = max(self.custom_in, g.i_chunks)
            self.custom_out = max(self.custom_out, g.o_chunks)
            g.rows, g.lines, g.spans, g.marks = [], [], [], []

    def run(self, pieces: Iterator[bytes]) -> Algorithm:
        """Parse the file from its ``pieces`` (of at most _source.PIECE bytes each)."""
        p = self.p
        try:
            fed = 0
            for piece in pieces:
                p.Parse(piece, False)
                fed += len(piece)
                # expat rescans an unfinished token from its start on every call, and its own
                # cost per token grows faster than the token: a token longer than any MSCCL-IR
                # needs is refused here, which keeps the parse linear in the input size
                if fed - max(p.CurrentByteIndex, 0) > MAX_TOKEN_BYTES:
                    raise self.fail(
                        f"one tag (with its attributes), comment or processing instruction is longer than "
                        f"{MAX_TOKEN_BYTES} bytes",
                        hint="MSCCL-IR holds short tags only; is this the right file?",
                    )
            p.Parse(b"", True)
        except expat.ExpatError as e:
            raise ImportFormatError(
                f"malformed XML: {expat.ErrorString(e.code)} (column {e.offset})", path=str(self.path), line=e.lineno
            ) from None
        except RecursionError:
            raise self.fail("elements nested too deeply") from None
        except (LookupError, ValueError) as e:
            if isinstance(e, HubError) or not (isinstance(e, LookupError) or "encoding" in str(e)):
                raise
            # pyexpat's handler for encodings expat lacks (the declaration was checked, but keep
            # any codec failure a format error)
            raise self.fail(f"cannot decode the input: {e}", hint=_ENCODING_HINT) from None
        return self._finish()

    def _xml_decl(self, version: str | None, encoding: str | None, standalone: int) -> None:
        if encoding is None or encoding.lower().replace("_", "-") in _EXPAT_ENCODINGS:
            return
        try:
            name = codecs.lookup(encoding).name
        except LookupError:
            raise self.fail(f"unknown encoding {encoding!r} in the XML declaration", hint=_ENCODING_HINT) from None
        probe = '<?xml version="1.0"?><algo a="1"/>'
        try:
            ascii_ok = probe.encode(name) == probe.encode("ascii")
            single = len(bytes(range(256)).decode(name, "replace")) == 256
        except (UnicodeError, LookupError, TypeError):
            ascii_ok = single = False
        if not (ascii_ok and single):
            raise self.fail(f"unsupported encoding {encoding!r} in the XML declaration", hint=_ENCODING_HINT)

    def _finish(self) -> Algorithm:
        if self.algo is None:
            raise ImportFormatError("no <algo> element", path=str(self.path))
        if len(self.graphs) != self.n:
            # lazily: a corrupt ngpus (say 2e9) must not build a list of every missing rank
            missing = list(itertools.islice((g for g in range(self.n) if g not in self.graphs), 8))
            raise ImportFormatError(
                f"no <gpu> for rank(s) {missing}",
                path=str(self.path),
                hint=f"ngpus={self.n} requires gpu ids 0..{self.n - 1}",
            )
        self._check_connections()
        a = self.algo
        inplace_attr = a.get("inplace") == "1"
        outofplace = a.get("outofplace", "0" if inplace_attr else "1") == "1"
        # a file valid both ways is modelled out-of-place (distinct buffers), the general case
        default = inplace_attr and not outofplace
        inplace = self.inplace_choice if self.inplace_choice is not None else default
        if inplace and not inplace_attr or not inplace and not outofplace:
            raise ImportFormatError(
                f"the file is not valid {'in-place' if inplace else 'out-of-place'} "
                f"(inplace={a.get('inplace')} outofplace={a.get('outofplace', '-')})",
                path=str(self.path),
            )
        root = self.root_choice
        if root is None:
            root = 0
            if self.coll is Collective.BROADCAST:
                cands = [r for r in range(self.n) if r not in self.has_recv]
                root = cands[0] if len(cands) == 1 else 0
            elif self.coll is Collective.REDUCE:
                cands = [r for r in range(self.n) if r not in self.has_send]
                root = cands[0] if len(cands) == 1 else 0
        extra: list[tuple[str, str | int | float | bool]] = [
            ("msccl.coll", a["coll"]),
            ("msccl.proto", a["proto"]),
            ("msccl.nchannels", int(a["nchannels"])),
            ("msccl.nchunksperloop", self.nchunks),
            ("msccl.inplace", inplace_attr),
            ("msccl.outofplace", outofplace),
        ]
        for k in ("minBytes", "maxBytes", "redop"):
            if k in a:
                extra.append((f"msccl.{k}", a[k]))
        if self.coll is Collective.CUSTOM:
            self.in_chunks, self.out_chunks = self.custom_in, self.custom_out
        meta = AlgorithmMeta(
            collective=self.coll,
            ranks=self.n,
            in_chunks=self.in_chunks,
            out_chunks=self.out_chunks,
            scratch_chunks=self.scratch,
            inplace=inplace,
            root=root,
            name=self.name or a.get("name", "") or self.path.stem,
            producer="mscclang.ir",
            extra=tuple(extra),
        )
        return Algorithm(meta, tuple(self.graphs[r] for r in range(self.n)))

    def _check_connections(self) -> None:
        for key, (stb, scnt, slines) in self.sends.items():
            src, dst, chan = key
            rec = self.recvs.get(key)
            if rec is None:
                raise ImportFormatError(
                    f"gpu {src} tb {stb.id} sends {len(scnt)} message(s) to gpu {dst} on channel {chan}, "
                    f"but gpu {dst} has no tb receiving from {src} on channel {chan}",
                    path=str(self.path),
                    line=stb.line,
                )
            rtb, rcnt, rlines = rec
            if scnt != rcnt:
                k = next(
                    (i for i, (x, y) in enumerate(zip(scnt, rcnt, strict=False)) if x != y), min(len(scnt), len(rcnt))
                )
                if k < min(len(scnt), len(rcnt)):
                    msg = (
                        f"connection {src}->{dst} channel {chan}: transfer {k} has cnt={scnt[k]} at gpu {src} tb "
                        f"{stb.id} "
                        f"(line {slines[k]}) but cnt={rcnt[k]} at gpu {dst} tb {rtb.id}"
                    )
                    line = rlines[k]
                else:
                    msg = (
                        f"connection {src}->{dst} channel {chan}: gpu {src} tb {stb.id} sends {len(scnt)} "
                        "message(s) "
                        f"but gpu {dst} tb {rtb.id} receives {len(rcnt)}"
                    )
                    line = rtb.line
                raise ImportFormatError(
                    msg,
                    path=str(self.path),
                    line=line,
                    hint="MSCCL matches sends and receives by position per (sender, receiver, channel)",
                )
        for key, (rtb, rcnt, _) in self.recvs.items():
            if key not in self.sends:
                src, dst, chan = key
                raise ImportFormatError(
                    f"gpu {dst} tb {rtb.id} receives {len(rcnt)} message(s) from gpu {src} on channel {chan}, "
                    f"but gpu {src} has no tb sending to {dst} on channel {chan}",
                    path=str(self.path),
                    line=rtb.line,
                )


def read_msccl_ir(
    path: str | os.PathLike[str],
    *,
    name: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    inplace: bool | None = None,
    root: int | None = None,
    names: bool | None = None,
) -> Algorithm:
    """Import an MSCCL-IR XML file as an :class:`~hub.chakra.Algorithm`.

    ``names``: name nodes ``tb<t>/s<s>/<type>[.role]`` (default: for files up to 512 KiB).
    ``inplace`` picks the variant when a file is valid both ways (default: the file's
    ``inplace`` flag); ``root`` overrides the inferred root of broadcast/reduce.
    Raises :class:`~hub.errors.ImportFormatError` naming the file, line, gpu, tb and step.
    """
    return _read(Path(path), name=name, max_bytes=max_bytes, inplace=inplace, root=root, names=names, fast=True)


def _read(
    p: Path, *, name: str | None, max_bytes: int, inplace: bool | None, root: int | None, names: bool | None, fast: bool
) -> Algorithm:
    """read_msccl_ir; ``fast=False`` reads with the general path only (tests compare the two)."""
    if names is None:  # names cost time and ET bytes; keep them for files a person reads
        names = _source.is_regular(p) and p.stat().st_size <= NAMES_AUTO_BYTES

    def reader() -> _Reader:
        rd = _Reader(p, max_bytes=max_bytes, names=names)
        rd.name, rd.inplace_choice, rd.root_choice = name, inplace, root
        return rd

    try:
        data = _source.whole(p, max_bytes, MAX_FAST_BYTES) if fast else None
        if data is not None:
            alg = scan(reader(), data, MAX_TOKEN_BYTES)
            if alg is not None:
                return alg
            # outside the fast path's subset, or refused: the general path says why
            return reader().run(data[k : k + _source.PIECE] for k in range(0, len(data), _source.PIECE))
        pieces = _source.pieces(p, max_bytes)
        try:
            return reader().run(pieces)
        finally:
            pieces.close()
    except ImportFormatError as exc:
        if exc.hint is None:  # every refusal tells the user where to look
            exc.hint = _FORMAT_HINT
        raise
