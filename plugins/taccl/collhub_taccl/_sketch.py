"""A TACCL communication sketch applied to a node profile (see :mod:`._taccl_files`)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ._problem import RelayRule

if TYPE_CHECKING:  # pragma: no cover
    from ._taccl_files import Network, _File

__all__ = ["apply_sketch", "rotation"]

_INTRA = ("none", "switch", "maxmin", "minmax")
_UC = ("uc-min", "uc-max")


def rotation(p: int, offset: int, group: int) -> tuple[int, ...]:
    """TACCL's symmetry ``[offset, group]``: rank r -> r + offset inside its group of ``group`` ranks."""
    return tuple((r // group) * group + (r % group + offset) % group for r in range(p))


def _switches(
    sk: _File, intra: dict[str, Any], g: int, betas: dict[tuple[int, int], float]
) -> tuple[list[tuple[list[int], int, str]], set[tuple[int, int]]]:
    """Distinct switch sets (members, multiplicity, strategy) and the GPU pairs they replace."""
    sets = sk.get("switches", list, src=intra, name="intranode_sketch.switches")
    strat = sk.get("switch_hyperedge_strategy", list, src=intra, name="intranode_sketch.switch_hyperedge_strategy")
    if len(strat) != len(sets):
        raise sk.err(
            "intranode_sketch.switch_hyperedge_strategy",
            f"has {len(strat)} entries for {len(sets)} switches",
            hint="give one uc-min/uc-max per switch",
        )
    out: list[tuple[list[int], int, str]] = []
    for i, (members, st) in enumerate(zip(sets, strat, strict=False)):
        key = f"intranode_sketch.switches[{i}]"
        if (
            not isinstance(members, list)
            or len(members) < 2
            or any(isinstance(m, bool) or not isinstance(m, int) or not 0 <= m < g for m in members)
        ):
            raise sk.err(key, f"expected a list of >= 2 GPU ids in 0..{g - 1}, got {json.dumps(members)}")
        if len(set(members)) != len(members):
            raise sk.err(key, "lists a GPU twice")
        if st not in _UC:
            raise sk.err(
                f"intranode_sketch.switch_hyperedge_strategy[{i}]", f"unknown strategy {st!r}", hint="uc-min or uc-max"
            )
        for j, (prev, mult, _s) in enumerate(out):
            common = set(prev) & set(members)
            if common and set(prev) != set(members):
                raise sk.err(
                    key,
                    f"overlaps switch {j} without being equal to it",
                    hint="TACCL needs switch sets that are disjoint or identical",
                )
            if set(prev) == set(members):
                out[j] = (prev, mult + 1, _s)
                break
        else:
            out.append((sorted(members), 1, st))
    replaced: set[tuple[int, int]] = set()
    for i, (members, _m, _s) in enumerate(out):
        vals = {betas.get((a, b)) for a in members for b in members if a != b}
        if None in vals:
            raise sk.err(
                f"intranode_sketch.switches[{i}]",
                "joins GPUs the topology does not link",
                hint="a switch may only group GPUs that are all connected to each other",
            )
        if len(vals) > 1:
            raise sk.err(
                f"intranode_sketch.switches[{i}]",
                "joins links of different classes",
                hint="TACCL needs one beta for all links of a switch",
            )
        replaced |= {(a, b) for a in members for b in members if a != b}
    return out, replaced


def _conn(sk: _File, inter: dict[str, Any], g: int) -> dict[int, list[int]]:
    raw = sk.get("internode_conn", (dict, str), src=inter, name="internode_sketch.internode_conn")
    if isinstance(raw, str):
        if raw == "fully-connected":
            return {i: list(range(g)) for i in range(g)}
        if raw == "direct-map":
            return {i: [i] for i in range(g)}
        raise sk.err(
            "internode_sketch.internode_conn",
            f"unknown strategy {raw!r}",
            hint='"direct-map", "fully-connected" or {"src": [dst, ...]}',
        )
    conn: dict[int, list[int]] = {}
    for s, dsts in raw.items():
        key = f"internode_sketch.internode_conn[{json.dumps(s)}]"
        if not s.isdigit() or not 0 <= int(s) < g:
            raise sk.err(key, f"sender must be a GPU id in 0..{g - 1}")
        if (
            not isinstance(dsts, list)
            or not dsts
            or any(isinstance(d, bool) or not isinstance(d, int) or not 0 <= d < g for d in dsts)
        ):
            raise sk.err(key, f"expected a non-empty list of GPU ids in 0..{g - 1}, got {json.dumps(dsts)}")
        conn[int(s)] = sorted(set(dsts))
    if not conn:
        raise sk.err("internode_sketch.internode_conn", "is empty", hint="name at least one sender GPU")
    fan = {len(v) for v in conn.values()}
    if len(fan) > 1:
        raise sk.err(
            "internode_sketch.internode_conn",
            f"senders have different fan-outs {sorted(fan)}",
            hint="TACCL requires the same number of remote receivers for every sender",
        )
    return conn


def _rev_map(sk: _File, inter: dict[str, Any], g: int, conn: dict[int, list[int]]) -> dict[int, frozenset[int]] | None:
    raw = sk.get(
        "gpus_to_sender_rev_map", dict, src=inter, required=False, name="internode_sketch.gpus_to_sender_rev_map"
    )
    if raw is None:
        return None
    out: dict[int, frozenset[int]] = {}
    for s, gpus in raw.items():
        key = f"internode_sketch.gpus_to_sender_rev_map[{json.dumps(s)}]"
        if not s.isdigit() or int(s) not in conn:
            raise sk.err(key, "is not a sender of internode_conn", hint=f"senders: {sorted(conn)}")
        if not isinstance(gpus, list) or any(
            isinstance(x, bool) or not isinstance(x, int) or not 0 <= x < g for x in gpus
        ):
            raise sk.err(key, f"expected a list of GPU ids in 0..{g - 1}")
        out[int(s)] = frozenset(gpus)
    covered = set().union(*out.values()) if out else set()
    if covered != set(range(g)):
        missing = sorted(set(range(g)) - covered)
        raise sk.err(
            "internode_sketch.gpus_to_sender_rev_map",
            f"no sender relays the chunks of GPU(s) {missing}",
            hint="every GPU's data must leave the node through some sender",
        )
    return out


def apply_sketch(
    topo: _File,
    sk: _File,
    kind: str,
    g: int,
    intra_betas: dict[tuple[int, int], float],
    alpha: float,
    chunk: int,
    nnodes: int,
) -> Network:
    from ._taccl_files import Network, _bw, make_graph

    p = g * nnodes
    intra = sk.get("intranode_sketch", dict)
    strategy = sk.get("strategy", str, src=intra, name="intranode_sketch.strategy")
    if strategy not in _INTRA:
        raise sk.err("intranode_sketch.strategy", f"unknown strategy {strategy!r}", hint="one of: " + ", ".join(_INTRA))
    switches: list[tuple[list[int], int, str]] = []
    replaced: set[tuple[int, int]] = set()
    if strategy == "switch":
        switches, replaced = _switches(sk, intra, g, intra_betas)
    lat = alpha * 1000.0
    links: dict[tuple[int, int], tuple[float, float]] = {}
    for n in range(nnodes):
        for (s, d), beta in intra_betas.items():
            if (s, d) not in replaced:
                links[(s + n * g, d + n * g)] = (_bw(chunk, beta), lat)
    sw_devs = []
    switch_terms: list[tuple[str, list[tuple[int, int]]]] = []
    for n in range(nnodes):
        for members, mult, st in switches:
            beta = intra_betas[(members[0], members[1])]
            gm = [m + n * g for m in members]
            sw_devs.append((gm, _bw(chunk, beta) * mult, lat))
            switch_terms.append((st, [(a, b) for a in gm for b in gm if a != b]))
    relay = None
    extra_ports: list[tuple[str, list[tuple[int, int]]]] = []
    if nnodes > 1:
        inter = sk.get("internode_sketch", dict)
        if sk.get("strategy", str, src=inter, name="internode_sketch.strategy") != "relay":
            raise sk.err(
                "internode_sketch.strategy",
                f"unknown strategy {inter.get('strategy')!r}",
                hint='TACCL implements "relay" only',
            )
        conn = _conn(sk, inter, g)
        nics = (
            topo.number("nics_per_node", positive=True)
            if kind in ("custom", "HubAndSpoke")
            else (1.0 if kind == "NDv2" else 8.0)
        )
        r_alpha = topo.number("remote_alpha")
        r_beta = topo.number("remote_beta", positive=True)
        topo.number("remote_invbw")
        nlinks = sum(len(v) for v in conn.values())
        beta = float(int(r_beta * nlinks / nics)) or r_beta * nlinks / nics  # TACCL truncates to an integer
        for i in range(nnodes):
            for j in range(nnodes):
                if i != j:
                    for s, dsts in conn.items():
                        for d in dsts:
                            links[(s + i * g, d + j * g)] = (_bw(chunk, beta), r_alpha * 1000.0)
        enforce = sk.get(
            "enforce_ordering", bool, src=inter, required=False, default=False, name="internode_sketch.enforce_ordering"
        )
        relay = RelayRule(g, _rev_map(sk, inter, g, conn), enforce)
        if nnodes > 2:  # TACCL's remote switches: a GPU's remote links share one port each way
            remote = [pair for pair in links if pair[0] // g != pair[1] // g]
            for r in range(p):
                extra_ports.append((f"{r}:remote-out", [x for x in remote if x[0] == r]))
                extra_ports.append((f"{r}:remote-in", [x for x in remote if x[1] == r]))
    elif "internode_sketch" in sk.data and not isinstance(sk.data["internode_sketch"], dict):
        raise sk.err("internode_sketch", "expected an object")
    label = f"{topo.data.get('name', kind)} x{nnodes} ({sk.path})"
    graph = make_graph(p, links, sw_devs, label)
    net = Network(
        graph,
        label,
        node_size=g if nnodes > 1 else None,
        relay=relay,
        extra_ports=extra_ports,
        switch_terms=switch_terms,
        profile_chunk=chunk,
        sketch=sk.data,
    )
    syms = _symmetries(sk, p)
    net.symmetries = [perm for _key, perm in syms]
    net.symmetry_keys = [key for key, _perm in syms]
    hyper = sk.get("hyperparameters", dict, required=False, default={})
    up = sk.get("input_chunkup", int, src=hyper, required=False, default=1, name="hyperparameters.input_chunkup")
    if up < 1:
        raise sk.err("hyperparameters.input_chunkup", f"must be >= 1, got {up}")
    net.chunkup = up
    if kind == "NDv2" and nnodes == 1 and strategy != "switch":
        per_link = _bw(chunk, max(intra_betas.values()))
        net.network_string = f"dgx1@bw={per_link!r},lat={lat!r}"
    return net


def _symmetries(sk: _File, p: int) -> list[tuple[str, tuple[int, ...]]]:
    raw = sk.get("symmetry_offsets", list, required=False, default=[])
    out = []
    for i, item in enumerate(raw):
        key = f"symmetry_offsets[{i}]"
        if (
            not isinstance(item, list)
            or len(item) != 2
            or any(isinstance(v, bool) or not isinstance(v, int) for v in item)
        ):
            raise sk.err(key, f"expected [offset, group_size], got {json.dumps(item)}")
        off, grp = item
        if not 1 <= grp <= p or p % grp:
            raise sk.err(key, f"group size {grp} does not divide the {p} ranks")
        if not 0 <= off < grp:
            raise sk.err(key, f"offset {off} is not in 0..{grp - 1}")
        if off:
            out.append((key, rotation(p, off, grp)))
    return out
