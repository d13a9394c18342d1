"""The reader's fast path: a whole file in memory, in a canonical subset of XML, read with a few
C-level scans (``bytes.translate``, regexes for the few hundred non-step tags, numpy over the
steps of many gpus at once) instead of one expat callback per element.

The subset is what msccl-tools and ``mscclang.export`` write: ASCII, an optional plain XML
declaration, comments only before the root, double-quoted attributes without ``&``, tabs or
newlines in values, and steps in the writers' attribute order with single spaces, integer
values, a known step type and buffers ``i``/``o``/``s``. Inside it, every ``<`` starts a tag:
the non-step tags are matched by the regexes below, and the steps' text is proven against
``_STEP_TEXT`` around their quotes (:func:`_check_step_text`, numpy); the counts prove that
nothing was skipped, so the scan reads exactly what expat would. Anything else (and any refusal)
makes :func:`scan` return None, and the caller reads the file with the general expat path,
which alone reports errors: messages and their order are the same on both paths.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from hub.errors import ImportFormatError

from ._ir import INT_MAX, INT_MIN
from ._stepcols import TYPE_CODE

if TYPE_CHECKING:
    from hub.chakra import Algorithm

    from ._reader import _Gpu, _Reader

__all__ = ["MAX_FAST_BYTES", "scan"]

MAX_FAST_BYTES = 64 << 20  # above this the streaming path keeps memory at one <gpu>
_BATCH_STEPS = 1 << 14  # steps whose columns are read at once (bounds the temporaries to a few MB)

# bytes that may appear anywhere in the subset: printable ASCII but '&', and tab/newline ('\r'
# changes expat's line count, '&' starts a reference)
_ALLOWED = bytes([9, 10, *(c for c in range(0x20, 0x7F) if c != 0x26)])
_DECL = re.compile(
    rb'<\?xml version="1\.0"(?: encoding="(?i:utf-8|utf8|us-ascii|ascii|iso-8859-1|latin-1|latin1)")?'
    rb'(?: standalone="(?:yes|no)")?[ \t\n]*\?>'
)
# possessive quantifiers throughout: the subset never needs backtracking (so no input makes a
# match slow), and the step match is ~2x faster without
_PROLOG_COMMENTS = re.compile(rb"(?:[ \t\n]*+<!--(?:[^-]|-[^-])*+-->)*+[ \t\n]*+")
_NAME = rb"[A-Za-z_][A-Za-z0-9_.-]*+"
# any tag but a step's: the start (or empty-element) tag with its attributes, or an end tag
_TAG = re.compile(
    rb"<(?!step[ \t\n/>])(/?)(" + _NAME + rb")((?:[ \t\n]++" + _NAME + rb'="[^"<>\t\n]*+")*+)[ \t\n]*+(/?)>'
)
_ATTR = re.compile(rb"(" + _NAME + rb')="([^"]*)"')
#: a step of the subset, around its 10 quoted values (in this order, values without blanks):
#: the text before the first quote, between a value's closing quote and the next opening one,
#: and after the last (see _check_step_text)
_STEP_TEXT = (
    b"<step s=",
    *(b" %s=" % a for a in (b"type", b"srcbuf", b"srcoff", b"dstbuf", b"dstoff", b"cnt", b"depid", b"deps", b"hasdep")),
    b"/>",
)
_BLANKS = b" \t\n"
_NOT_BLANKS = bytes(c for c in range(256) if c not in _BLANKS)
#: the numbers of a step, in document order (the columns of _lower's integer attributes), and
#: their places among the step's 10 values
_NUMBERS = ("s", "srcoff", "dstoff", "cnt", "depid", "deps", "hasdep")
_NUMBER_SLOTS = [0, 3, 5, 6, 7, 8, 9]


class _Doc(NamedTuple):
    data: bytes
    buf: np.ndarray  # the file's bytes, as an array
    eights: np.ndarray  # the 8 bytes from each position, as one little-endian uint64


def _eights(data: bytes) -> np.ndarray:
    """A view of ``data``: element k is bytes k..k+7 as a little-endian uint64 (one gather reads
    8 bytes of many steps at once)."""
    return np.ndarray((max(len(data) - 7, 0),), dtype="<u8", buffer=data, strides=(1,))


class _Outside(Exception):
    """The file is outside the subset: read it with the general path."""


def scan(rd: _Reader, data: bytes, max_token: int) -> Algorithm | None:
    """The algorithm in ``data``, read into ``rd``. None: not read, use the general path with a
    fresh reader (``rd`` is then in an undefined state)."""
    try:
        _scan(rd, data, max_token)
        return rd._finish()
    except (_Outside, ImportFormatError):
        return None


def _scan(rd: _Reader, data: bytes, max_token: int) -> None:
    if data.translate(None, _ALLOWED) or (b"]" in data and b"]]>" in data):  # (one byte: memchr)
        raise _Outside
    pos = 0
    if data.startswith(b"<?"):
        m = _DECL.match(data)
        if m is None:
            raise _Outside
        pos = m.end()
    m = _PROLOG_COMMENTS.match(data, pos)
    assert m is not None  # it matches the empty string
    if m.end() - pos > max_token:
        raise _Outside  # (a long comment would be refused by the general path)
    body = m.end()
    buf = np.frombuffer(data, dtype=np.uint8)
    lt = np.flatnonzero(buf[body:] == 0x3C) + body  # every '<' of the body starts a tag
    after = buf[np.minimum(lt + 1, len(buf) - 1)]
    if np.any((after == 0x21) | (after == 0x3F)):
        raise _Outside  # a comment, CDATA section, DOCTYPE or processing instruction in the body
    newlines = np.flatnonzero(buf == 0x0A)
    line_of_lt = np.searchsorted(newlines, lt) + 1
    eights = _eights(data)
    tag_k = np.flatnonzero(~_starts_step(data, eights, lt)).tolist()  # each tag's '<' among all of them
    tags = []
    for at in lt[tag_k].tolist():
        m = _TAG.match(data, at)
        if m is None:
            raise _Outside  # (a '<' no regex reads)
        tags.append((m.start(), m.end(), m.groups()))
    if not tags or tags[0][0] != body or data[tags[-1][1] :].strip(b" \t\n"):
        raise _Outside  # text before or after the root element
    if any(b - a > max_token for a, b, _ in tags):
        raise _Outside
    doc = _Doc(data, buf, eights)
    _walk(rd, data, doc, tags, tag_k, lt, line_of_lt)


_STEP_WORD = np.uint64(int.from_bytes(b"step", "little"))
_AFTER_STEP = np.zeros(256, bool)
_AFTER_STEP[list(b" \t\n/>")] = True


def _starts_step(data: bytes, eights: np.ndarray, lt: np.ndarray) -> np.ndarray:
    """Whether each '<' at ``lt`` is followed by ``step`` and a blank, '/' or '>': what _TAG never
    matches (so it is matched only at the others, a few hundred, not searched through the steps)."""
    is_step = np.zeros(len(lt), bool)
    inside = lt + 1 < len(eights)  # (the view ends 7 bytes before the data)
    head = eights[lt[inside] + 1]
    after = ((head >> np.uint64(32)) & np.uint64(0xFF)).astype(np.intp)
    is_step[inside] = ((head & np.uint64(0xFFFFFFFF)) == _STEP_WORD) & _AFTER_STEP[after]
    for k in np.flatnonzero(~inside).tolist():
        at = int(lt[k])
        is_step[k] = data[at + 1 : at + 5] == b"step" and data[at + 5 : at + 6] in (b" ", b"\t", b"\n", b"/", b">")
    return is_step


def _attrs(raw: bytes) -> dict[str, str]:
    pairs = _ATTR.findall(raw)
    a = {k.decode(): v.decode() for k, v in pairs}
    if len(a) != len(pairs):
        raise _Outside  # a repeated attribute: malformed, expat says where
    return a


def _walk(
    rd: _Reader,
    data: bytes,
    doc: _Doc,
    tags: list[tuple[int, int, tuple[bytes, ...]]],
    tag_k: list[int],
    lt,
    line_of_lt,
) -> None:
    """The element structure: algo > gpu > (tb > step*, copy); anything else is outside."""
    depth = 0  # 0 before algo, 1 in algo, 2 in a gpu, 3 in a tb
    steps_seen = g_steps = pending_steps = 0
    pending: list[_Gpu] = []  # closed gpus not lowered yet (their columns are read in batches)
    seen: set[int] = set()
    n = len(tags)
    i = 0
    done = False
    while i < n:
        start, end, (close, name, raw, empty) = tags[i]
        line = int(line_of_lt[tag_k[i]])
        rd.at_line = line
        if done:
            raise _Outside  # a second root element
        if close:
            expect = {1: b"algo", 2: b"gpu"}.get(depth)
            if name != expect or empty:
                raise _Outside
            depth -= 1
            if depth == 1:
                g = rd.gpu
                assert g is not None
                pending.append(g)
                pending_steps += g_steps
                rd.gpu = None
                if pending_steps >= _BATCH_STEPS:
                    _lower_batch(rd, pending, doc)
                    pending.clear()
                    pending_steps = 0
            elif depth == 0:
                done = True
        elif depth == 0 and name == b"algo" and not empty:
            rd._algo(_attrs(raw))
            depth = 1
        elif depth == 1 and name == b"gpu" and not empty:
            rd._gpu(_attrs(raw))
            assert rd.gpu is not None
            if rd.gpu.id in seen:
                raise _Outside  # a repeated gpu id (caught when lowering on the general path)
            seen.add(rd.gpu.id)
            g_steps = 0
            depth = 2
        elif depth == 2 and name == b"copy" and empty:
            rd._copy(_attrs(raw))
        elif depth == 2 and name == b"tb":
            g = rd.gpu
            assert g is not None
            rd._tb(_attrs(raw))
            tb = g.tbs[-1]
            count = 0
            if not empty:
                # the tb's content: steps only, up to its end tag (the next non-step tag)
                if i + 1 >= n or tags[i + 1][2][:2] != (b"/", b"tb") or tags[i + 1][2][3]:
                    raise _Outside
                hi = tags[i + 1][0]
                k0 = tag_k[i] + 1
                count = tag_k[i + 1] - k0  # its '<'s: each must start a step (_check_step_text)
                g.spans.append((end, hi))
                g.marks.append(lt[k0 : k0 + count])
                g.lines.append(line_of_lt[k0 : k0 + count])
                i += 1
            tb.start, tb.n = g_steps, count
            g_steps += count
            steps_seen += count
        else:
            raise _Outside  # unknown, misplaced or empty-where-content-expected element
        i += 1
    if not done:
        raise _Outside
    _lower_batch(rd, pending, doc)
    if steps_seen + n != len(lt):
        raise _Outside  # a '<' that no regex read


def _lower_batch(rd: _Reader, gpus: list[_Gpu], doc: _Doc) -> None:
    """The gpus' step columns from the quotes of their steps (20 per step: each value sits
    between a known pair), read for the whole batch at once; then the shared lowering."""
    counts = [sum(t.n for t in g.tbs) for g in gpus]
    S = sum(counts)
    spans = [sp for g in gpus for sp in g.spans]
    if not S:
        if any(doc.data[a:b].strip(_BLANKS) for a, b in spans):
            raise _Outside  # text in a tb
        return _lower_each(rd, gpus, counts, np.zeros((0, len(_NUMBERS)), np.int64), [np.zeros(0, np.int64)] * 3)
    base = spans[0][0]  # the batch's quotes only: the temporaries stay within the batch's bytes
    quotes = np.flatnonzero(doc.buf[base : spans[-1][1]] == 0x22) + base
    bounds = np.searchsorted(quotes, np.array(spans, dtype=np.int64).reshape(-1))
    lo, hi = bounds[0::2], bounds[1::2]
    if np.any(hi - lo != 20 * np.array([len(m) for g in gpus for m in g.marks])):
        raise _Outside  # 20 quotes per step, tb by tb
    skip = lo - np.concatenate([[0], np.cumsum(hi - lo)[:-1]])  # ragged ranges lo..hi, concatenated
    q = quotes[np.repeat(skip, hi - lo) + np.arange(20 * S)].reshape(S, 20)
    marks = np.concatenate([m for g in gpus for m in g.marks])
    _check_step_text(doc, q, marks, spans)
    start, end = q[:, 0::2] + 1, q[:, 1::2]  # each step's 10 values, in the subset's order
    nums = _integers(doc.buf, start[:, _NUMBER_SLOTS], end[:, _NUMBER_SLOTS])
    if int(nums.min()) < INT_MIN or int(nums.max()) > INT_MAX:
        raise _Outside  # the general path names the attribute
    words = [_lookup(_word_key(doc.eights, start[:, k], end[:, k] - start[:, k]), table) for k, table in _WORD_SLOTS]
    if np.any(words[1] == 9) or np.any(words[2] == 9):
        raise _Outside  # a buffer other than i, o, s (the general path reads it the same, slowly)
    _lower_each(rd, gpus, counts, nums, words)


def _literals() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """_STEP_TEXT as 8-byte pieces: the quote each is read from (a column of a step's 20 quote
    positions), its offset from it, its bytes (little-endian) and the mask of the bytes that count."""
    col, off, want, mask = [], [], [], []
    for k, text in enumerate(_STEP_TEXT):
        # the text ends at quote 0 (the first), or starts after quote 2k-1 (a value's closing one)
        q, at = (0, -len(text)) if k == 0 else (2 * k - 1, 1)
        n = len(text)
        for o in sorted({*range(0, n - 7, 8), max(n - 8, 0)}):  # the last piece may overlap one
            piece = text[o : o + 8]
            col.append(q)
            off.append(at + o)
            want.append(int.from_bytes(piece, "little"))
            mask.append((1 << 8 * len(piece)) - 1)
    return np.array(col, np.intp), np.array(off, np.int64), np.array(want, np.uint64), np.array(mask, np.uint64)


_PIECE_COL, _PIECE_OFF, _PIECE_WANT, _PIECE_MASK = _literals()
_GAP_LEN = np.array([len(t) + 1 for t in _STEP_TEXT[1:-1]])  # quote to quote, around each gap
_STEP_BLANKS = sum(t.count(b" ") for t in _STEP_TEXT)


def _check_step_text(doc: _Doc, q: np.ndarray, marks: np.ndarray, spans: list[tuple[int, int]]) -> None:
    """Prove that the text of the batch's tbs is steps of the subset and blanks only, given each
    step's 20 quote positions ``q`` and its '<' (``marks``): the skeleton between the quotes is
    _STEP_TEXT (compared 8 bytes at a time), each step starts at its '<', and the tbs hold no
    other non-blank byte than the steps' (counted). The values are checked where they are read."""
    if np.any(q[:, 2:19:2] - q[:, 1:18:2] != _GAP_LEN) or np.any(q[:, 0] - len(_STEP_TEXT[0]) != marks):
        raise _Outside
    at = np.minimum(q[:, _PIECE_COL] + _PIECE_OFF, len(doc.eights) - 1)
    if not ((doc.eights[at] & _PIECE_MASK) == _PIECE_WANT).all():
        raise _Outside
    # the steps' text, one after the other: '<' to '/>' (ordered and disjoint, since they start
    # at their '<'); every other byte of the tbs must be a blank, and the values have none
    # (digits, known step types and buffers), so the tbs' non-blank bytes are the steps' but their blanks
    first, last = marks, q[:, 19] + len(_STEP_TEXT[-1]) + 1
    if np.any(first[1:] < last[:-1]):
        raise _Outside
    # (deleting the non-blanks keeps a short result: 2.5x faster than deleting the blanks)
    blanks = sum(len(doc.data[a:b].translate(None, _NOT_BLANKS)) for a, b in spans)
    solid = sum(b - a for a, b in spans) - blanks
    if solid != int((last - first).sum()) - _STEP_BLANKS * len(marks):
        raise _Outside


def _integers(buf: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """The integers ``buf[start:end]``, each ``-?[0-9]{1,10}`` (else _Outside): one digit position
    of every value per pass, so the C calls are per digit, not per value (3x faster than
    formatting the values as text for ``np.fromstring``)."""
    neg = buf[start] == 0x2D
    first = start + neg
    length = end - first
    if np.any(length < 1) or np.any(length > 10):
        raise _Outside
    value = np.zeros(start.shape, np.int64)
    for j in range(int(length.max())):
        d = buf.take(first + j, mode="clip") - np.uint8(0x30)  # (past a value's end: unused)
        used = j < length
        if np.any(used & (d > 9)):
            raise _Outside  # not a digit
        value = np.where(used, value * 10 + d, value)
    return np.where(neg, -value, value)


def _lower_each(rd: _Reader, gpus: list[_Gpu], counts: list[int], nums: np.ndarray, words: list[np.ndarray]) -> None:
    """Lower the batch's gpus together from the batch's columns (numpy's cost is per call, and a
    gpu has only a few hundred steps), but each gpu with ``<copy>`` elements alone."""
    per_tb = [ln for g in gpus for ln in g.lines]
    lines = np.concatenate(per_tb) if per_tb else np.zeros(0, np.int64)
    groups: list[list[_Gpu]] = []
    for g in gpus:
        if g.copies or not groups or groups[-1][-1].copies:
            groups.append([g])
        else:
            groups[-1].append(g)
    at = 0
    k = 0
    for group in groups:
        c = sum(counts[k : k + len(group)])
        k += len(group)
        cols = ({name: nums[at : at + c, j] for j, name in enumerate(_NUMBERS)}, [w[at : at + c] for w in words])
        rd.at_line = group[0].line
        rd.finish_gpus(group, (*cols, lines[at : at + c]))
        at += c


def _word_key(eights: np.ndarray, start: np.ndarray, length: np.ndarray) -> np.ndarray:
    """A key per word ``buf[start:start + length]``: its first 4 bytes (zeros past its end) and
    its length; words of up to 4 bytes have distinct keys."""
    # (indexing, not take(): take is ~20x slower on this unaligned view)
    w = eights[np.minimum(start, len(eights) - 1)]
    w &= (np.uint64(1) << (np.minimum(length, 4) * 8).astype(np.uint64)) - np.uint64(1)
    return (w.astype(np.int64) << 5) | np.minimum(length, 31)


def _lookup(keys: np.ndarray, table: tuple[np.ndarray, np.ndarray, int]) -> np.ndarray:
    known, codes, default = table
    at = np.minimum(np.searchsorted(known, keys), len(known) - 1)
    return np.where(known[at] == keys, codes[at], default)


def _table(words: dict[bytes, int], default: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Sorted keys (as _word_key makes them) and codes of ``words``."""
    data = b"".join(words)
    lengths = np.array([len(w) for w in words], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    keys = _word_key(_eights(data + bytes(7)), starts, lengths)
    order = np.argsort(keys)
    return keys[order], np.array(list(words.values()), dtype=np.int64)[order], default


_TYPES = _table({t.encode(): c for t, c in TYPE_CODE.items()}, -1)
_BUFS = _table({b"i": 0, b"o": 1, b"s": 2}, 9)
_WORD_SLOTS = ((1, _TYPES), (2, _BUFS), (4, _BUFS))  # type, srcbuf, dstbuf
