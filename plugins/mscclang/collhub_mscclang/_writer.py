"""MSCCL-IR writer: :class:`hub.chakra.Algorithm` -> XML for one target runtime.

Per rank: threadblocks come from :mod:`._threadblocks`; each tb's nodes (in program order) are
turned into steps, fusing RECV[+COMP]+SEND runs into ``rcs``/``rrcs``/``rrs`` and
RECV(REDUCE)+COMP into ``rrc`` when the nodes are consecutive in the tb and chained only to each
other (see README "Fusion"). Cross-tb dependencies are reduced to the latest step per other tb;
the first goes on the step, the others on ``nop`` steps just before it; every depended-on step
gets ``hasdep=1``. Runtime limits of the target are enforced (ExportError) unless disabled.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hub.atomic import write_file
from hub.chakra import ONESIDED, Algorithm, Collective
from hub.errors import ExportError

from ._ir import BUF_CODE, TARGETS, TargetRules
from ._lanes import split_lanes
from ._spread import spread_channels
from ._steps import Step, form_steps, topo_rank
from ._threadblocks import Tb, assign, channel_map

__all__ = ["ExportStats", "write_msccl_ir"]

_ALIAS_OUT = (Collective.ALLREDUCE, Collective.ALLTOALL, Collective.BROADCAST, Collective.REDUCE)
_CNT_LIMIT = 72
_OFF_LIMIT = 32768


@dataclass
class ExportStats:
    """What was written."""

    gpus: int = 0
    tbs: int = 0
    steps: int = 0
    nops: int = 0
    max_steps_per_tb: int = 0
    max_tbs_per_gpu: int = 0
    nchannels: int = 0
    fused: int = 0
    bytes: int = 0

    def as_metrics(self) -> dict[str, int]:
        return dict(self.__dict__)


def _step_deps(
    g: Any, r: int, steps_of: list[list[Step]], where: dict[int, tuple[int, int]], dropped: dict[int, list[int]]
) -> list[list[list[tuple[int, int]]]]:
    """Cross-tb dependencies of every step as sorted (tb, latest step) pairs, one per other tb
    (a tb runs in order, so waiting for its latest needed step covers the earlier ones)."""
    ptr = g.dep_ptr.tolist()
    dpos = g.dep_pos.tolist()

    memo: dict[int, set[tuple[int, int]]] = {}

    def targets(p: int) -> set[tuple[int, int]]:
        # the steps a node stands for: itself, or what a dropped node waited for
        if p in where:
            return {where[p]}
        got = memo.get(p)
        if got is None:
            got = set()
            stack = list(dropped.get(p, []))
            seen: set[int] = set()
            while stack:
                q = stack.pop()
                if q in seen:
                    continue
                seen.add(q)
                if q in where:
                    got.add(where[q])
                else:
                    stack.extend(dropped.get(q, []))
            memo[p] = got
        return got

    # dependencies per step, as {other tb: latest step}
    deps_of: list[list[list[tuple[int, int]]]] = []
    for ti, steps in enumerate(steps_of):
        per_tb: list[list[tuple[int, int]]] = []
        for si, st in enumerate(steps):
            inside = set(st.nodes)
            best: dict[int, int] = {}
            for p in st.nodes:
                for d in dpos[ptr[p] : ptr[p + 1]]:
                    if d in inside:
                        continue
                    w = where.get(d)
                    for dt, ds in (w,) if w is not None else targets(d):
                        if dt == ti:
                            if ds >= si:
                                raise ExportError(
                                    f"rank {r}: node {p} depends on a later node of its threadblock",
                                    hint="the tb's program order contradicts the dependencies; use threadblocks=auto",
                                )
                            continue
                        if best.get(dt, -1) < ds:
                            best[dt] = ds
            per_tb.append(sorted(best.items()))
        deps_of.append(per_tb)
    return deps_of


def _emit_gpu(
    body: list[str],
    r: int,
    tbs: list[Tb],
    steps_of: list[list[Step]],
    deps_of: list[list[list[tuple[int, int]]]],
    scratch: int,
    copies: list[tuple[int, int]],
    gpu_chunks: tuple[int, int],
    n: int,
    rules: TargetRules,
    enforce_limits: bool,
    stats: ExportStats,
) -> int:
    """Append one ``<gpu>`` element's lines; nops carry the extra dependencies. Returns the
    number of channels it uses."""
    target = rules.name
    nchannels = 1
    # final step indices once nops are inserted, and hasdep flags
    final: list[list[int]] = []
    for ti, steps in enumerate(steps_of):
        idx: list[int] = []
        k = 0
        for si in range(len(steps)):
            k += max(len(deps_of[ti][si]) - 1, 0)
            idx.append(k)
            k += 1
        final.append(idx)
    hasdep: set[tuple[int, int]] = {(dt, ds) for per_tb in deps_of for dl in per_tb for dt, ds in dl}
    # emit
    total_steps = sum(len(s) + sum(max(len(d) - 1, 0) for d in deps_of[ti]) for ti, s in enumerate(steps_of))
    scratch = max(scratch, 0)
    body.append(f'  <gpu id="{r}" i_chunks="{gpu_chunks[0]}" o_chunks="{gpu_chunks[1]}" s_chunks="{scratch}">')
    for i_off, o_off in copies:
        body.append(f'    <copy i_off="{i_off}" o_off="{o_off}"/>')
    if enforce_limits:
        if len(tbs) > rules.max_tbs:
            raise ExportError(
                f"rank {r} needs {len(tbs)} threadblocks; {target} allows {rules.max_tbs}",
                hint="use fewer channels/peers, or enforce_limits=false for a parser fixture",
            )
        if 2 + n + len(tbs) + total_steps > 4096:
            raise ExportError(f"rank {r} needs {2 + n + len(tbs) + total_steps} XML nodes; runtimes parse at most 4096")
    stats.max_tbs_per_gpu = max(stats.max_tbs_per_gpu, len(tbs))
    for ti, (t, steps) in enumerate(zip(tbs, steps_of, strict=False)):
        nchannels = max(nchannels, t.chan + 1)
        body.append(f'    <tb id="{ti}" send="{t.send}" recv="{t.recv}" chan="{t.chan}">')
        s = 0
        for si, st in enumerate(steps):
            dl = deps_of[ti][si]
            for dt, ds in dl[:-1]:
                body.append(
                    f'      <step s="{s}" type="nop" srcbuf="i" srcoff="-1" dstbuf="o" dstoff="-1" cnt="0" '
                    f'depid="{dt}" deps="{final[dt][ds]}" hasdep="0"/>'
                )
                s += 1
                stats.nops += 1
            dt, ds = (dl[-1][0], final[dl[-1][0]][dl[-1][1]]) if dl else (-1, -1)
            typ, b1, o1, b2, o2, cnt = st.type, st.src_buf, st.src_off, st.dst_buf, st.dst_off, st.cnt
            if cnt < 1:
                raise ExportError(
                    f"rank {r}: node {st.nodes[0]} moves {cnt} chunks; MSCCL steps move at least one",
                    hint="drop empty transfers before exporting",
                )
            if enforce_limits and (cnt >= _CNT_LIMIT or max(o1, o2) >= _OFF_LIMIT or dt >= 128):
                raise ExportError(
                    f"rank {r} tb {ti} step {s}: cnt={cnt}, offsets {o1}/{o2}, depid={dt} exceed the runtime "
                    f"limits (cnt < {_CNT_LIMIT}, offsets < {_OFF_LIMIT}, depid < 128)"
                )
            body.append(
                f'      <step s="{s}" type="{typ}" srcbuf="{BUF_CODE.get(b1, "i")}" srcoff="{o1}" '
                f'dstbuf="{BUF_CODE.get(b2, "i")}" dstoff="{o2}" cnt="{cnt}" depid="{dt}" deps="{ds}" '
                f'hasdep="{1 if (ti, si) in hasdep else 0}"/>'
            )
            s += 1
        if enforce_limits and s > rules.max_steps:
            raise ExportError(
                f"rank {r} tb {ti} has {s} steps; {target} allows {rules.max_steps} per threadblock",
                hint="spread the algorithm over more channels (e.g. hub.instances / a channels option of "
                "the producer), target msccl-legacy (256), or enforce_limits=false for a parser fixture",
            )
        stats.max_steps_per_tb = max(stats.max_steps_per_tb, s)
        stats.steps += s
        body.append("    </tb>")
    stats.tbs += len(tbs)
    body.append("  </gpu>")
    return nchannels


def write_msccl_ir(
    alg: Algorithm,
    out: str | os.PathLike[str],
    *,
    target: str = "msccl-executor-nccl",
    proto: str | None = None,
    min_bytes: int = 0,
    max_bytes: int | None = None,
    name: str | None = None,
    fuse: bool = True,
    threadblocks: str = "keep-or-auto",
    enforce_limits: bool = True,
    verify: bool = False,
) -> ExportStats:
    """Write ``alg`` as MSCCL-IR for ``target`` (atomically) and return what was written.

    ``min_bytes``/``max_bytes`` are inclusive call-size bounds (None = unlimited), translated to
    the target's own convention. Raises :class:`~hub.errors.ExportError` when the target cannot
    express the algorithm. With ``verify``, the XML is read back and checked with
    :func:`hub.verify.check` before it replaces ``out`` (an ExportError names the problems).
    """
    rules = TARGETS.get(target)
    if rules is None:
        raise ExportError(f"unknown target {target!r}", hint="one of: " + ", ".join(TARGETS))
    m = alg.meta
    coll = m.collective
    if coll not in rules.accepted:
        raise ExportError(
            f"{target} does not load coll={coll.value!r} algorithms",
            hint="msccl-legacy accepts 'custom'; the executor/RCCL reject it",
        )
    _refuse_switch(alg)
    extra = dict(m.extra)
    proto = proto or str(extra.get("msccl.proto", "Simple"))
    if proto not in ("Simple", "LL", "LL128"):
        raise ExportError(f"proto={proto!r} is not Simple, LL or LL128")
    if min_bytes < 0 or (max_bytes is not None and max_bytes < min_bytes):
        raise ExportError(f"invalid size window min_bytes={min_bytes} max_bytes={max_bytes}")
    alias_out = m.inplace and coll in _ALIAS_OUT
    chan_of = channel_map(alg)
    skip, copies = _identity_copies(alg)
    body_of = _Body(
        alg,
        target,
        rules,
        fuse,
        threadblocks,
        enforce_limits,
        skip,
        copies,
        alias_out,
        [topo_rank(g) for g in alg.graphs],
    )
    # concurrent tags of a connection first get channels of their own (keeps the profile's
    # concurrency); if the target's limits cannot take the extra tbs/channels, share them
    lanes = split_lanes(alg, chan_of) if threadblocks != "keep" else None
    try:
        body, stats = body_of.build(lanes if lanes is not None else chan_of)
    except ExportError as first:
        if not enforce_limits or threadblocks == "keep":
            raise
        body, stats = _within_limits(alg, body_of, chan_of, lanes is not None, first)
    attrs = _algo_attrs(alg, rules, name, proto, stats.nchannels, min_bytes, max_bytes)
    lines = ["<algo " + " ".join(f'{k}="{_esc(str(v))}"' for k, v in attrs) + ">", *body, "</algo>\n"]
    data = "\n".join(lines).encode()
    stats.bytes = len(data)
    _atomic_write(Path(out), data, check=_reverify(alg) if verify else None)
    return stats


def _refuse_switch(alg: Algorithm) -> None:
    """MSCCL-IR has sends, receives and copies only: a node standing for an NVSwitch load-reduce or
    multicast (profile section 10.3) would export as point-to-point traffic NCCL never sends."""
    switch = (ONESIDED.SWITCH_REDUCE, ONESIDED.SWITCH_MULTICAST)
    for r, g in enumerate(alg.graphs):
        for pos, attrs in g.extra.items():
            mapping = next((getattr(v, "value", v) for k, v in attrs if k == ONESIDED.MAPPING), None)
            if mapping in switch:  # read from a file, the value is a TypedValue
                name = g.names[pos] if g.names and g.names[pos] else f"node {int(g.ids[pos])}"
                raise ExportError(
                    f"rank {r} {name}: an NVSwitch {mapping} node; MSCCL-IR has no multicast or switch reduction",
                    hint="export it as an MSCCL++ plan (mscclpp.export), or export a ring/tree schedule",
                )


def _within_limits(
    alg: Algorithm, body_of: _Body, chan_of: list[list[int]], tried_lanes: bool, first: ExportError
) -> tuple[list[str], ExportStats]:
    """The fallbacks when the first channel assignment broke a limit: the nodes' own channels
    (when lanes were tried first), then long connections dealt over more channels (fewer
    messages per channel second: a forwarding tb holds two connections). Raises the error of
    the nodes' own channels when nothing fits."""
    err = first
    if tried_lanes:
        try:
            return body_of.build(chan_of)
        except ExportError as e:
            err = e
    rules = body_of.rules
    for per in (rules.max_steps * 3 // 8, rules.max_steps // 4):
        chans = spread_channels(alg, chan_of, per, rules.max_channels)
        if chans is None:
            continue
        try:
            return body_of.build(chans)
        except ExportError:
            continue
    raise err


def _identity_copies(alg: Algorithm) -> tuple[list[set[int]], list[list[tuple[int, int]]]]:
    """Per rank the COMP copies written back as ``<copy>`` children (not as steps) and their
    (input offset, output offset) pairs in output order.

    TACCL/TE-CCL's imported pre-copies that are identities under in-place all-gather aliasing
    are ``<copy>``; any other copy becomes a cpy step."""
    m = alg.meta
    skip: list[set[int]] = []
    copies: list[list[tuple[int, int]]] = []
    for r, g in enumerate(alg.graphs):
        sk: set[int] = set()
        cl: list[tuple[int, int]] = []
        for p, node_attrs in g.extra.items():
            if dict(node_attrs).get("msccl.copy") and m.inplace and m.collective is Collective.ALLGATHER:
                i_off, o_off = int(g.src_off[p]), int(g.dst_off[p])
                if int(g.dst_off[p]) == r * m.in_chunks + i_off and int(g.count[p]) == 1:
                    sk.add(p)
                    cl.append((i_off, o_off))
        skip.append(sk)
        copies.append(sorted(cl, key=lambda x: x[1]))
    return skip, copies


@dataclass(frozen=True)
class _Body:
    """What the ``<gpu>`` elements of one export are made from, for any channel assignment."""

    alg: Algorithm
    target: str
    rules: TargetRules
    fuse: bool
    threadblocks: str
    enforce_limits: bool
    skip: list[set[int]]
    copies: list[list[tuple[int, int]]]
    alias_out: bool
    topo_keys: list[Any]

    def build(self, chans: list[list[int]]) -> tuple[list[str], ExportStats]:
        """The ``<gpu>`` lines of every rank with channels ``chans``, and the stats (the target's
        channel limit enforced unless disabled)."""
        alg, m = self.alg, self.alg.meta
        n = m.ranks
        gpu_chunks = (m.in_chunks, 0 if self.alias_out else m.out_chunks)
        stats = ExportStats(gpus=n)
        all_tbs = assign(alg, chans, mode=self.threadblocks, fuse=self.fuse, skip=self.skip)
        body: list[str] = []
        nchannels = 1
        for r, tbs in enumerate(all_tbs):
            g = alg.graphs[r]
            key = self.topo_keys[r]
            if key is not None:
                for t in tbs:
                    t.nodes.sort(key=lambda p: key[p])
            steps_of, where, dropped, scratch = form_steps(alg, r, tbs, self.fuse, self.skip[r], self.alias_out, stats)
            deps = _step_deps(g, r, steps_of, where, dropped)
            nchannels = max(
                nchannels,
                _emit_gpu(
                    body,
                    r,
                    tbs,
                    steps_of,
                    deps,
                    scratch,
                    self.copies[r],
                    gpu_chunks,
                    n,
                    self.rules,
                    self.enforce_limits,
                    stats,
                ),
            )
        if self.enforce_limits and nchannels > self.rules.max_channels:
            raise ExportError(f"{nchannels} channels needed; {self.target} allows {self.rules.max_channels}")
        stats.nchannels = nchannels
        return body, stats


def _algo_attrs(
    alg: Algorithm,
    rules: TargetRules,
    name: str | None,
    proto: str,
    nchannels: int,
    min_bytes: int,
    max_bytes: int | None,
) -> list[tuple[str, object]]:
    """The ``<algo>`` element's attributes, in the target's conventions (size window, inplace)."""
    m = alg.meta
    extra = dict(m.extra)
    attrs: list[tuple[str, object]] = [
        ("name", name or m.name or "collhub"),
        ("proto", proto),
        ("nchannels", nchannels),
        ("nchunksperloop", max(m.in_chunks, m.out_chunks, 1)),
        ("ngpus", m.ranks),
        ("coll", rules.coll_name(m.collective)),
        ("inplace", int(m.inplace)),
    ]
    if rules.outofplace_attr:
        attrs.append(("outofplace", int(not m.inplace)))
    if rules.max_exclusive:  # old runtime: min <= size < max; absent max = 128 MiB, so always write it
        attrs += [("minBytes", min_bytes), ("maxBytes", (1 << 62) if max_bytes is None else max_bytes + 1)]
    else:  # executor/RCCL: inclusive, 0 = unlimited
        if max_bytes == 0:
            raise ExportError("max_bytes=0 cannot be expressed: the executor reads maxBytes=0 as unlimited")
        attrs += [("minBytes", min_bytes), ("maxBytes", 0 if max_bytes is None else max_bytes)]
    if "msccl.redop" in extra:
        attrs.append(("redop", extra["msccl.redop"]))
    return attrs


def _reverify(alg: Algorithm) -> Any:
    def check(tmp: Path) -> None:
        from hub.errors import HubError
        from hub.verify import verify as run_verify

        from ._reader import read_msccl_ir

        try:
            back = read_msccl_ir(tmp, inplace=alg.meta.inplace, root=alg.meta.root, names=True)
        except HubError as e:
            raise ExportError(f"the written XML does not read back: {e.message}") from None
        rep = run_verify(back)
        if not rep.ok:
            raise ExportError(
                "the written XML fails verification: " + "; ".join(str(p) for p in rep.problems[:3]),
                hint="the threadblock order may contradict the algorithm; try threadblocks=auto or fuse=false",
            )

    return check


def _esc(v: str) -> str:
    return v.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")


def _atomic_write(path: Path, data: bytes, check: Any = None) -> None:
    write_file(path, data, check=check)  # 0666 minus the umask, like open(); never half-written
