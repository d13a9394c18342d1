"""The steps of a batch of parsed ``<gpu>`` elements as checked columns (the first half of lowering).

A batch is one or more consecutive gpus of a file; their threadblocks and steps are concatenated
in document order, so every check below is one numpy pass over the whole batch, and the first
problem found is the first in document order. The general (expat) path lowers gpus one at a
time, so its messages and their order are those of a batch of one; the fast path (``_scan``)
lowers many gpus at once and, on any refusal, hands the file to the general path.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any

import numpy as np

from hub.errors import ImportFormatError

from ._ir import INT_MAX, INT_MIN, INT_RE

if TYPE_CHECKING:
    from ._reader import _Gpu, _Reader, _Tb

__all__ = ["CODE_NAME", "TYPE_CODE", "TYPE_NAMES", "Steps", "Tbs", "check_steps", "read_steps", "register_connections"]

TYPE_NAMES = ("s", "r", "rcs", "rrc", "rrcs", "rrs", "cpy", "re", "nop")
TYPE_CODE = {t: i for i, t in enumerate(TYPE_NAMES)}
S, R, RCS, RRC, RRCS, RRS, CPY, RE, NOP = range(9)
RRC_X, RRCS_X = 9, 10  # rrc/rrcs whose source differs from the destination
NT = 11
#: the type a step was written as, for messages (the two-node rrc/rrcs forms keep their name)
CODE_NAME = (*TYPE_NAMES, "rrc", "rrcs")
# C-level look-ups for map(): unknown keys give -1 (step type) / 9 (buffer)
_TYPE_GET = defaultdict(lambda: -1, TYPE_CODE).__getitem__
_BUF_GET = defaultdict(lambda: 9, {"i": 0, "o": 1, "s": 2}).__getitem__
#: attributes of a <step>, in the order of the reader's rows (_reader._STEP_ATTRS)
_ATTR = ("s", "type", "srcbuf", "srcoff", "dstbuf", "dstoff", "cnt", "depid", "deps", "hasdep")


def _types(*codes: int) -> np.ndarray:
    t = np.zeros(NT, bool)
    t[list(codes)] = True
    return t


SEND_T = _types(S, RCS, RRCS, RRS, RRCS_X)
RECV_T = _types(R, RCS, RRC, RRCS, RRS, RRC_X, RRCS_X)
_USES_SRC = _types(S, RRC, RRCS, RRS, CPY, RE, RRC_X, RRCS_X)
_USES_DST = _types(R, RCS, RRC, RRCS, CPY, RE, RRC_X, RRCS_X)


def first(mask: np.ndarray) -> int | None:
    """The first position where ``mask`` holds, or None."""
    return int(np.argmax(mask)) if mask.any() else None


def _letter(buf: int) -> str:
    return "ios"[buf] if buf < 3 else "?"


def _isint(v: str) -> bool:
    return INT_RE.fullmatch(v) is not None and INT_MIN <= int(v) <= INT_MAX


class Tbs:
    """The ``<tb>`` elements of a batch as columns (tb by tb, gpu by gpu), and each gpu's share."""

    __slots__ = ("all", "base", "chan", "gpu", "length", "ntb", "recv", "send", "start")

    def __init__(self, gpus: list[_Gpu]) -> None:
        self.all: list[_Tb] = [t for g in gpus for t in g.tbs]
        ntb = [len(g.tbs) for g in gpus]
        self.ntb = np.array(ntb, dtype=np.int64)  # tbs of each gpu
        self.base = np.cumsum(self.ntb) - self.ntb  # its first tb
        self.gpu = np.repeat(np.arange(len(gpus)), self.ntb)  # each tb's gpu (index in the batch)
        cols = np.array([(t.n, t.send, t.recv, t.chan) for t in self.all], dtype=np.int64).reshape(-1, 4)
        self.length, self.send, self.recv, self.chan = cols.T
        # first step of each tb among the batch's steps (tb.start counts within its gpu)
        self.start = np.cumsum(self.length) - self.length


class Steps:
    """The steps of a batch as named columns, and where each one is (for messages)."""

    __slots__ = (
        *("path", "gid", "tbg", "tb_of", "s_of", "line", "gpu_of"),
        *("code", "src_buf", "src_off", "dst_buf", "dst_off", "cnt", "depid", "deps", "hasdep"),
    )
    # the columns, set by read_steps: step type (TYPE_CODE; RRC_X/RRCS_X once the buffers are
    # checked), buffers (0 i, 1 o, 2 s, 9 anything else), offsets, cnt, dependency attributes
    code: np.ndarray
    src_buf: np.ndarray
    src_off: np.ndarray
    dst_buf: np.ndarray
    dst_off: np.ndarray
    cnt: np.ndarray
    depid: np.ndarray
    deps: np.ndarray
    hasdep: np.ndarray

    def __init__(self, path: str, gpus: list[_Gpu], tbs: Tbs, lines: np.ndarray) -> None:
        S = int(tbs.length.sum())
        self.path = path
        self.tbg = np.repeat(np.arange(len(tbs.all)), tbs.length)  # the step's tb in the batch
        self.gpu_of = tbs.gpu[self.tbg]  # the step's gpu (index in the batch)
        self.tb_of = self.tbg - tbs.base[self.gpu_of]  # its tb id in its gpu
        self.s_of = np.arange(S) - tbs.start[self.tbg] if S else np.zeros(0, dtype=np.int64)
        self.gid = np.array([g.id for g in gpus], dtype=np.int64)
        self.line = lines

    def at(self, i: int) -> str:
        return f"gpu {int(self.gid[self.gpu_of[i]])} tb {int(self.tb_of[i])} step {int(self.s_of[i])}"

    def error(self, i: int, message: str, hint: str | None = None) -> ImportFormatError:
        """``message`` about step ``i``, prefixed with where it is and its type."""
        where = f"{self.at(i)} ({CODE_NAME[int(self.code[i])]})"
        return ImportFormatError(f"{where}: {message}", path=self.path, line=int(self.line[i]), hint=hint)

    def ints(self, name: str, values: tuple[str, ...]) -> np.ndarray:
        """Attribute ``name`` of every step as 32-bit integers (atoi's grammar, not int()'s)."""
        n = len(values)
        try:
            joined = "".join(values)  # one C-level pass rules out what int() takes but atoi does not
            if "_" in joined or not joined.isascii():
                raise ValueError
            arr = np.fromiter(map(int, values), dtype=np.int64, count=n)
            if n and (int(arr.min()) < INT_MIN or int(arr.max()) > INT_MAX):
                raise ValueError
            return arr
        except (ValueError, OverflowError):
            i = next(i for i, v in enumerate(values) if not _isint(v))
            what = "is out of range (32-bit)" if INT_RE.fullmatch(values[i]) else "is not an integer"
            raise ImportFormatError(
                f"{self.at(i)}: attribute {name}={values[i]!r} of <step> {what}", path=self.path, line=int(self.line[i])
            ) from None


def read_steps(path: str, gpus: list[_Gpu], tbs: Tbs, cols: Any) -> Steps:
    """The steps' columns: ``cols`` (``ints``, ``words``, ``lines``) as the fast path read them for
    the whole batch, or (None) parsed from the raw attribute strings of a batch of one gpu."""
    if cols is not None:
        ints, words, lines = cols
        st = Steps(path, gpus, tbs, lines)
        st.code, st.src_buf, st.dst_buf = words
        if (i := first(ints["s"] != st.s_of)) is not None or (i := first(st.code < 0)) is not None:
            raise ImportFormatError(f"{st.at(i)}: refused", path=path)  # the general path says why
    else:
        (g,) = gpus
        st = Steps(path, gpus, tbs, np.asarray(g.lines, dtype=np.int64))
        ints = _parse_rows(st, g)
    st.src_off, st.dst_off, st.cnt = ints["srcoff"], ints["dstoff"], ints["cnt"]
    st.depid, st.deps, st.hasdep = ints["depid"], ints["deps"], ints["hasdep"]
    return st


def _parse_rows(st: Steps, g: _Gpu) -> dict[str, np.ndarray]:
    """The general path's step rows (attribute strings) as columns, checked in document order."""
    S = len(st.s_of)
    path = st.path
    raw = dict(zip(_ATTR, zip(*g.rows, strict=True), strict=True)) if S else dict.fromkeys(_ATTR, ())
    s_given = st.ints("s", raw["s"])
    if (i := first(s_given != st.s_of)) is not None:
        raise ImportFormatError(
            f"gpu {g.id} tb {int(st.tb_of[i])}: step s={int(s_given[i])} but s={int(st.s_of[i])} "
            "expected (s counts the tb's steps in document order, nops included)",
            path=path,
            line=int(st.line[i]),
        )
    st.code = np.fromiter(map(_TYPE_GET, raw["type"]), dtype=np.int64, count=S)
    if (i := first(st.code < 0)) is not None:
        t = raw["type"][i]
        if t == "ra":
            raise ImportFormatError(
                f"{st.at(i)}: step type 'ra' (residual add) is not supported",
                path=path,
                line=int(st.line[i]),
                hint="'ra' is parsed by the old microsoft/msccl runtime but never executed",
            )
        raise ImportFormatError(
            f"{st.at(i)}: unknown step type {t!r}",
            path=path,
            line=int(st.line[i]),
            hint="one of: " + ", ".join(TYPE_NAMES),
        )
    st.src_buf = np.fromiter(map(_BUF_GET, raw["srcbuf"]), dtype=np.int64, count=S)
    st.dst_buf = np.fromiter(map(_BUF_GET, raw["dstbuf"]), dtype=np.int64, count=S)
    # in the order the attributes are checked (the first bad one is reported)
    names = ("srcoff", "dstoff", "cnt", "depid", "deps", "hasdep")
    return {"s": s_given, **{name: st.ints(name, raw[name]) for name in names}}


def check_steps(st: Steps, tbs: Tbs, limits: np.ndarray) -> None:
    """Refuse what MSCCL cannot run; rrc/rrcs with a distinct source take their two-node form.
    ``limits``: each gpu's (i, o, s) buffer sizes in chunks."""
    code, cnt = st.code, st.cnt
    nop = code == NOP
    if (i := first(nop & (st.depid < 0))) is not None:
        raise st.error(
            i, "nop without a dependency", hint="a nop exists only to carry one extra dependency (msccl-ir.md §6)"
        )
    if (i := first(~nop & (cnt < 1))) is not None:
        raise st.error(i, f"cnt={cnt[i]} must be >= 1")
    if (i := first(SEND_T[code] & (tbs.send[st.tbg] < 0))) is not None:
        raise st.error(i, "send-type step in a tb with send=-1")
    if (i := first(RECV_T[code] & (tbs.recv[st.tbg] < 0))) is not None:
        raise st.error(i, "receive-type step in a tb with recv=-1")
    # each gpu's row: its i, o, s sizes, then 0 for the codes of bad buffer names (up to 9)
    table = np.zeros((len(limits), 10), dtype=np.int64)
    table[:, :3] = limits
    for uses, b, off, nm in ((_USES_SRC, st.src_buf, st.src_off, "src"), (_USES_DST, st.dst_buf, st.dst_off, "dst")):
        used = uses[code]
        if (i := first(used & (b > 2))) is not None:
            raise st.error(i, f"{nm}buf={_letter(b[i])} is not i, o or s")
        if (i := first(used & ((off < 0) | (off + cnt > table[st.gpu_of, b])))) is not None:
            in_c, out_c, s_chunks = (int(x) for x in limits[st.gpu_of[i]])
            raise st.error(
                i,
                f"{nm}off={off[i]} cnt={cnt[i]} out of range for buffer '{_letter(b[i])}' "
                f"(i: {in_c}, o: {out_c}, s: {s_chunks} chunks)",
            )
    # rrc/rrcs with a distinct source get the two-node form; partial overlap has no clear meaning
    sb, so, db, do = st.src_buf, st.src_off, st.dst_buf, st.dst_off
    fused = (code == RRC) | (code == RRCS)
    differ = fused & ((sb != db) | (so != do))
    if (i := first(differ & (sb == db) & (np.abs(so - do) < cnt))) is not None:
        raise st.error(i, "source and destination overlap partially")
    st.code = np.where(differ, np.where(code == RRC, RRC_X, RRCS_X), code)


def register_connections(rd: _Reader, st: Steps, tbs: Tbs) -> None:
    """Record each tb's send and receive connection, tb by tb in document order (checked across
    gpus once all are read): its peer, channel, and the cnt and line of each of its transfers."""
    sides = []
    for table in (SEND_T, RECV_T):
        idx = np.flatnonzero(table[st.code])  # the batch's send (recv) steps, tb by tb
        lo = np.searchsorted(idx, tbs.start).tolist()
        hi = np.searchsorted(idx, tbs.start + tbs.length).tolist()
        sides.append((lo, hi, st.cnt[idx].tolist(), st.line[idx].tolist()))
    (slo, shi, scnt, sline), (rlo, rhi, rcnt, rline) = sides
    gids = st.gid[tbs.gpu].tolist()
    for k, tb in enumerate(tbs.all):
        gid = gids[k]
        for lo, hi, cnts, lines, peer, store, key in (
            (slo[k], shi[k], scnt, sline, tb.send, rd.sends, (gid, tb.send, tb.chan)),
            (rlo[k], rhi[k], rcnt, rline, tb.recv, rd.recvs, (tb.recv, gid, tb.chan)),
        ):
            if lo == hi:
                continue
            if key in store:
                other = store[key][0].id
                what = f"send to gpu {peer}" if store is rd.sends else f"receive from gpu {peer}"
                raise ImportFormatError(
                    f"gpu {gid}: tb {other} and tb {tb.id} both {what} on channel {tb.chan}",
                    path=st.path,
                    line=tb.line,
                    hint="one tb per (peer, channel, direction): MSCCL opens one connection each",
                )
            store[key] = (tb, cnts[lo:hi], lines[lo:hi])
            (rd.has_send if store is rd.sends else rd.has_recv).add(gid)
