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
from ._lower import TYPE_CODE

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
#: the numbers of a step, in document order (the columns of _lower's integer attributes)
_NUMBERS = ("s", "srcoff", "dstoff", "cnt", "depid", "deps", "hasdep")


class _Doc(NamedTuple):
    data: bytes
    buf: np.ndarray  # the file's bytes, as an array


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
    if data.translate(None, _ALLOWED) or b"]]>" in data:
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
    doc = _Doc(data, buf)
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
    between a known pair), read for the whole batch at once; then the shared lowering, gpu by gpu."""
    counts = [sum(t.n for t in g.tbs) for g in gpus]
    S = sum(counts)
    spans = [sp for g in gpus for sp in g.spans]
    if not S:  # (fromstring reads blanks alone as [0])
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
    # the integers: the only digits and '-' of the steps' text, 7 per step, each '-?[0-9]{1,10}'
    # between blanks (fromstring parses in C; a numpy digit-by-digit parse was 2x slower)
    text = b" ".join(doc.data[a:b] for a, b in spans).translate(_DIGITS)
    nums = np.fromstring(text, dtype=np.int64, sep=" ")
    if nums.size != S * len(_NUMBERS):
        raise _Outside
    if S and (int(nums.min()) < INT_MIN or int(nums.max()) > INT_MAX):
        raise _Outside  # the general path names the attribute
    nums = nums.reshape(S, len(_NUMBERS))
    words = [_word_codes(doc.buf, start[:, k], end[:, k], table) for k, table in _WORD_SLOTS]
    _lower_each(rd, gpus, counts, nums, words)


def _lower_each(rd: _Reader, gpus: list[_Gpu], counts: list[int], nums: np.ndarray, words: list[np.ndarray]) -> None:
    """Hand each gpu its rows of the batch's columns, and lower it."""
    at = 0
    for g, c in zip(gpus, counts, strict=True):
        g.cols = {name: nums[at : at + c, k] for k, name in enumerate(_NUMBERS)}
        g.words = tuple(w[at : at + c] for w in words)
        g.lines = np.concatenate(g.lines) if g.lines else np.zeros(0, np.int64)  # type: ignore[assignment]
        at += c
        rd.at_line = g.line
        rd._finish_gpu(g)


def _word_codes(buf: np.ndarray, start: np.ndarray, end: np.ndarray, table: tuple[np.ndarray, np.ndarray, int]):
    """The code of each word ``buf[start:end]`` (at most 16 letters) in ``table``, else its default."""
    return _lookup(_word_key(buf, start, end - start), table)


def _word_key(buf: np.ndarray, start: np.ndarray, length: np.ndarray) -> np.ndarray:
    j = np.arange(4)
    chars = buf[np.minimum(start[:, None] + j, len(buf) - 1)].astype(np.int64)
    chars = np.where(j < length[:, None], chars, 0)
    return ((chars[:, 0] << 24 | chars[:, 1] << 16 | chars[:, 2] << 8 | chars[:, 3]) << 5) | np.minimum(length, 31)


def _lookup(keys: np.ndarray, table: tuple[np.ndarray, np.ndarray, int]) -> np.ndarray:
    known, codes, default = table
    at = np.minimum(np.searchsorted(known, keys), len(known) - 1)
    return np.where(known[at] == keys, codes[at], default)


def _table(words: dict[bytes, int], default: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Sorted keys (as _word_key makes them) and codes of ``words``."""
    data = b"".join(words)
    buf = np.frombuffer(data, dtype=np.uint8)
    lengths = np.array([len(w) for w in words], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    keys = _word_key(buf, starts, lengths)
    order = np.argsort(keys)
    return keys[order], np.array(list(words.values()), dtype=np.int64)[order], default


# translate table: digits and '-' stay, everything else becomes a blank
_DIGITS = bytes(c if c in b"0123456789-" else 0x20 for c in range(256))
_TYPES = _table({t.encode(): c for t, c in TYPE_CODE.items()}, -1)
_BUFS = _table({b"i": 0, b"o": 1, b"s": 2}, 9)
_WORD_SLOTS = ((1, _TYPES), (2, _BUFS), (4, _BUFS))  # type, srcbuf, dstbuf
