"""The reader's fast path: a whole file in memory, in a canonical subset of XML, read with a few
C-level scans (``bytes.translate``, one regex match per threadblock, numpy) instead of one expat
callback per element.

The subset is what msccl-tools and ``mscclang.export`` write: ASCII, an optional plain XML
declaration, comments only before the root, double-quoted attributes without ``&``, tabs or
newlines in values, and steps in the writers' attribute order with single spaces. Inside it,
every ``<`` starts a tag and the tags are matched by the regexes below; the counts prove that
nothing was skipped, so the scan reads exactly what expat would. Anything else (and any refusal)
makes :func:`scan` return False, and the caller reads the file with the general expat path,
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
_INT = rb"-?+[0-9]{1,10}+"
_STEP = (
    rb'<step s="' + _INT + rb'" type="[a-z]{1,4}+" srcbuf="[A-Za-z]{0,16}+" srcoff="' + _INT + rb'" '
    rb'dstbuf="[A-Za-z]{0,16}+" dstoff="' + _INT + rb'" cnt="' + _INT + rb'" depid="' + _INT + rb'" '
    rb'deps="' + _INT + rb'" hasdep="' + _INT + rb'"/>'
)
_STEPS = re.compile(rb"(?:[ \t\n]*+" + _STEP + rb")*+[ \t\n]*+")
#: the numbers of a step, in document order (the columns of _lower's integer attributes), and
#: their places among the step's 10 values
_NUMBERS = ("s", "srcoff", "dstoff", "cnt", "depid", "deps", "hasdep")
_NUMBER_SLOTS = [0, 3, 5, 6, 7, 8, 9]


class _Doc(NamedTuple):
    data: bytes
    buf: np.ndarray  # the file's bytes, as an array
    quads: np.ndarray  # the 4 bytes from each position, as one little-endian uint32


def _quads(data: bytes) -> np.ndarray:
    """A view of ``data``: element k is bytes k..k+3 as a little-endian uint32 (one gather reads
    up to 4 letters of many words at once)."""
    return np.ndarray((max(len(data) - 3, 0),), dtype="<u4", buffer=data, strides=(1,))


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
    tags = [(m.start(), m.end(), m.groups()) for m in _TAG.finditer(data, body)]
    if not tags or tags[0][0] != body or data[tags[-1][1] :].strip(b" \t\n"):
        raise _Outside  # text before or after the root element
    if any(b - a > max_token for a, b, _ in tags):
        raise _Outside
    tag_k = np.searchsorted(lt, [t[0] for t in tags]).tolist()  # each tag's '<' among all of them
    doc = _Doc(data, buf, _quads(data))
    _walk(rd, data, doc, tags, tag_k, lt, line_of_lt)


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
    steps_seen = g_steps = 0
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
                rd.gpu = None
                if sum(sum(t.n for t in p.tbs) for p in pending) >= _BATCH_STEPS:
                    _lower_batch(rd, pending, doc)
                    pending.clear()
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
                if not _STEPS.fullmatch(data, end, hi):
                    raise _Outside
                k0 = tag_k[i] + 1
                count = tag_k[i + 1] - k0
                g.spans.append((end, hi))
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
        return _lower_each(rd, gpus, counts, np.zeros((0, len(_NUMBERS)), np.int64), [np.zeros(0, np.int64)] * 3)
    base = spans[0][0]  # the batch's quotes only: the temporaries stay within the batch's bytes
    quotes = np.flatnonzero(doc.buf[base : spans[-1][1]] == 0x22) + base
    bounds = np.searchsorted(quotes, np.array(spans, dtype=np.int64).reshape(-1))
    lo, hi = bounds[0::2], bounds[1::2]
    if int((hi - lo).sum()) != 20 * S:
        raise _Outside
    skip = lo - np.concatenate([[0], np.cumsum(hi - lo)[:-1]])  # ragged ranges lo..hi, concatenated
    q = quotes[np.repeat(skip, hi - lo) + np.arange(20 * S)].reshape(S, 20)
    start, end = q[:, 0::2] + 1, q[:, 1::2]  # each step's 10 values, in the subset's order
    nums = _integers(doc.buf, start[:, _NUMBER_SLOTS], end[:, _NUMBER_SLOTS])
    if int(nums.min()) < INT_MIN or int(nums.max()) > INT_MAX:
        raise _Outside  # the general path names the attribute
    words = [_lookup(_word_key(doc.quads, start[:, k], end[:, k] - start[:, k]), table) for k, table in _WORD_SLOTS]
    _lower_each(rd, gpus, counts, nums, words)


def _integers(buf: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """The integers ``buf[start:end]``, each ``-?[0-9]{1,10}`` (the step regex proved it): one
    digit position of every value per pass, so the C calls are per digit, not per value (3x
    faster than formatting the values as text for ``np.fromstring``)."""
    neg = buf[start] == 0x2D
    first = start + neg
    length = end - first
    value = np.zeros(start.shape, np.int64)
    for j in range(int(length.max())):
        d = buf.take(first + j, mode="clip") - np.uint8(0x30)  # (past a value's end: unused)
        value = np.where(j < length, value * 10 + d, value)
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


def _word_key(quads: np.ndarray, start: np.ndarray, length: np.ndarray) -> np.ndarray:
    """A key per word ``buf[start:start + length]``: its first 4 bytes (zeros past its end) and
    its length; words of up to 4 bytes have distinct keys."""
    # (indexing, not take(): take is ~20x slower on this unaligned view)
    w = quads[np.minimum(start, len(quads) - 1)].astype(np.int64)
    w &= (1 << np.minimum(length, 4) * 8) - 1
    return (w << 5) | np.minimum(length, 31)


def _lookup(keys: np.ndarray, table: tuple[np.ndarray, np.ndarray, int]) -> np.ndarray:
    known, codes, default = table
    at = np.minimum(np.searchsorted(known, keys), len(known) - 1)
    return np.where(known[at] == keys, codes[at], default)


def _table(words: dict[bytes, int], default: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Sorted keys (as _word_key makes them) and codes of ``words``."""
    data = b"".join(words)
    lengths = np.array([len(w) for w in words], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    keys = _word_key(_quads(data + b"\0\0\0"), starts, lengths)
    order = np.argsort(keys)
    return keys[order], np.array(list(words.values()), dtype=np.int64)[order], default


_TYPES = _table({t.encode(): c for t, c in TYPE_CODE.items()}, -1)
_BUFS = _table({b"i": 0, b"o": 1, b"s": 2}, 9)
_WORD_SLOTS = ((1, _TYPES), (2, _BUFS), (4, _BUFS))  # type, srcbuf, dstbuf
