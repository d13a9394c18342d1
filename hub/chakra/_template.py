"""Template decoding: decode many structurally identical Node messages by fixed byte offsets.

Nodes of a collective algorithm repeat a handful of shapes (a SEND with one dependency, a
RECV with a reduction, ...). This module parses one *prototype* node in Python, records which
of its bytes are structure (keys, lengths, attribute names: must match exactly), which are
varint values (only the continuation bit must match, so every value has the same length), and
which are name characters (anything), and then accepts every other node of the same byte length
whose bytes agree under that mask. A matching node parses exactly like the prototype, so its
values are read at the prototype's offsets, vectorized. Nodes no template covers are left to
the field walker in :mod:`._decode`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ._wire import WireError, decode_varint

__all__ = ["Template", "TemplateMatch", "match_templates"]

#: give up templating a length group after this many templates that each matched one node only
_MAX_POOR = 8
#: give up templating altogether after this many prototypes that cannot be templated
_MAX_UNTEMPLATABLE = 16


@dataclass
class Template:
    """The shape of one prototype node."""

    length: int
    proto: np.ndarray  # uint8, the prototype's bytes
    cmp: np.ndarray  # uint8 mask: 0xff structure, 0x80 varint value byte, 0x00 name character
    kind: int
    #: (target, attribute column index or -1, oneof field number, offset, byte length);
    #: target is "id", "dur", "dep" or "attr"
    values: list[tuple[str, int, int, int, int]] = field(default_factory=list)
    name: tuple[int, int] | None = None  # (offset, length) of the name characters


@dataclass
class TemplateMatch:
    """The nodes (indices into the batch) one template decoded, and their raw values."""

    template: Template
    nodes: np.ndarray
    ids: np.ndarray  # uint64
    duration: np.ndarray  # uint64
    deps: np.ndarray  # (m, c) uint64 dependency ids
    attrs: list[tuple[int, int, np.ndarray]]  # (column index, oneof field, raw uint64 values)
    names: list[str] | None


def build_template(node: bytes, known: dict[bytes, int], value_key: np.ndarray) -> Template | None:
    """Describe ``node``'s byte layout, or None if the fast path cannot take nodes like it."""
    n = len(node)
    cmp = np.full(n, 0xFF, np.uint8)
    values: list[tuple[str, int, int, int, int]] = []
    kind = 0
    name = None
    pos = 0
    try:
        while pos < n:
            key, p2 = decode_varint(node, pos, n)
            fnum, wt = key >> 3, key & 7
            if wt == 0:
                v, p3 = decode_varint(node, p2, n)
                if fnum == 3:
                    kind = v  # the type is structure: one template per node type
                elif fnum in (1, 7):
                    cmp[p2:p3] = 0x80
                    values.append(("id" if fnum == 1 else "dur", -1, 0, p2, p3 - p2))
                else:
                    return None  # unpacked deps, start time, unknown fields: the walker's job
                pos = p3
            elif wt == 2:
                ln, p3 = decode_varint(node, p2, n)
                end = p3 + ln
                if end > n:
                    return None
                if fnum == 2:
                    cmp[p3:end] = 0
                    name = (p3, ln)
                elif fnum == 5:
                    q = p3
                    while q < end:
                        _v, q2 = decode_varint(node, q, end)
                        cmp[q:q2] = 0x80
                        values.append(("dep", -1, 0, q, q2 - q))
                        q = q2
                elif fnum == 10:
                    # 0a <name len> name <one-byte value key> varint, and nothing else
                    if ln < 4 or node[p3] != 0x0A or node[p3 + 1] >= 0x80:
                        return None
                    nl = node[p3 + 1]
                    col = known.get(bytes(node[p3 + 2 : p3 + 2 + nl]))
                    q = p3 + 2 + nl
                    if col is None or q >= end or value_key[node[q]] == 0:
                        return None
                    _v, q2 = decode_varint(node, q + 1, end)
                    if q2 != end:
                        return None
                    cmp[q + 1 : q2] = 0x80
                    values.append(("attr", col, int(value_key[node[q]]), q + 1, q2 - q - 1))
                else:
                    return None
                pos = end
            else:
                return None
    except WireError:
        return None
    if not 1 <= kind <= 7:
        return None
    return Template(n, np.frombuffer(node, np.uint8).copy(), cmp, kind, values, name)


def _agree(rows: np.ndarray, proto: np.ndarray, cmp: np.ndarray) -> np.ndarray:
    """Rows whose bytes equal ``proto`` under ``cmp``; rows are padded to whole uint64 words."""
    diff = np.bitwise_xor(rows.view("<u8"), proto.view("<u8"))
    np.bitwise_and(diff, cmp.view("<u8"), out=diff)
    return np.bitwise_or.reduce(diff, axis=1) == 0


def _varint_at(rows: np.ndarray, off: int, ln: int) -> np.ndarray:
    out = (rows[:, off] & 0x7F).astype(np.uint64)
    for k in range(1, ln):
        out |= (rows[:, off + k] & 0x7F).astype(np.uint64) << np.uint64(7 * k)
    return out


def match_templates(data: bytes, buf: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                    known: dict[bytes, int], value_key: np.ndarray) -> tuple[list[TemplateMatch], np.ndarray]:
    """Decode every node some template covers; return the matches and a mask of covered nodes.

    Nodes are grouped by byte length; each group is covered by as few templates as its shapes
    need. Groups where templates keep matching single nodes, and input whose prototypes cannot be
    templated, are left to the field walker, so irregular input costs only a few prototypes.
    """
    lengths = ends - starts
    covered = np.zeros(starts.size, bool)
    matches: list[TemplateMatch] = []
    if starts.size == 0:
        return matches, covered
    order = np.argsort(lengths, kind="stable")
    bounds = np.flatnonzero(np.diff(lengths[order])) + 1
    budget = _TemplateBudget()
    for group in np.split(order, bounds):
        length = int(lengths[group[0]])
        if length == 0 or length > 4096 or budget.exhausted:
            continue
        # rows are read padded to whole 8-byte words (the buffer has zero padding at its end)
        padded = -(-length // 8) * 8
        rows_view = np.lib.stride_tricks.as_strided(buf, shape=(buf.size - padded + 1, padded), strides=(1, 1))
        _match_group(data, starts, group, rows_view[starts[group]], length, known, value_key, matches, covered,
                     budget)
    return matches, covered


class _TemplateBudget:
    """Stops templating when prototypes keep failing (input the fast path cannot take)."""

    def __init__(self) -> None:
        self.untemplatable = 0

    @property
    def exhausted(self) -> bool:
        return self.untemplatable >= _MAX_UNTEMPLATABLE


def _match_group(data: bytes, starts: np.ndarray, nodes: np.ndarray, rows: np.ndarray, tpl_length: int,
                 known: dict[bytes, int], value_key: np.ndarray, matches: list[TemplateMatch],
                 covered: np.ndarray, budget: _TemplateBudget) -> None:
    """Cover the nodes of one length group (``rows`` = their bytes) with as few templates as needed."""
    remaining = np.arange(nodes.size)
    poor = 0
    while remaining.size and poor < _MAX_POOR and not budget.exhausted:
        p = int(nodes[remaining[0]])
        tpl = build_template(data[int(starts[p]) : int(starts[p]) + tpl_length], known, value_key)
        if tpl is None:
            budget.untemplatable += 1
            return
        proto = np.zeros(rows.shape[1], np.uint8)
        cmp = np.zeros(rows.shape[1], np.uint8)  # padding bytes are not compared
        proto[:tpl_length] = tpl.proto
        cmp[:tpl_length] = tpl.cmp
        sub = rows if remaining.size == nodes.size else rows[remaining]
        ok = _agree(sub, proto, cmp)
        hit = remaining[ok]
        poor = poor + 1 if hit.size == 1 else 0
        remaining = remaining[~ok]
        try:
            matches.append(_extract(tpl, nodes[hit], rows[hit], data, starts))
        except UnicodeDecodeError:
            continue  # a bad name: the field walker reports it
        covered[nodes[hit]] = True


def _extract(tpl: Template, nodes: np.ndarray, rows: np.ndarray, data: bytes, starts: np.ndarray) -> TemplateMatch:
    m = nodes.size
    ids = np.zeros(m, np.uint64)
    duration = np.zeros(m, np.uint64)
    deps: list[np.ndarray] = []
    attrs: list[tuple[int, int, np.ndarray]] = []
    for target, col, vfield, off, ln in tpl.values:
        v = _varint_at(rows, off, ln)
        if target == "id":
            ids = v
        elif target == "dur":
            duration = v
        elif target == "dep":
            deps.append(v)
        else:
            attrs.append((col, vfield, v))
    dep_mat = np.stack(deps, axis=1) if deps else np.zeros((m, 0), np.uint64)
    names = None
    if tpl.name is not None:
        off, ln = tpl.name
        names = [data[s + off : s + off + ln].decode("utf-8", errors="strict") for s in starts[nodes].tolist()]
    return TemplateMatch(tpl, nodes, ids, duration, dep_mat, attrs, names)
