"""TACCL's own input files, read as they are: a topology profile and a communication sketch.

Both become a :class:`Network`: one :class:`~hub.topology.LinkGraph` (the same graph the model
uses and ``hub.simulate`` runs on) plus the sketch's rules. Conventions kept from TACCL:

* ``links``/``betas``/``invbws`` matrices are indexed ``[dst][src]``; NDv2 is the DGX-1 hybrid
  cube-mesh whose double NVLinks have the first ``node_betas_list`` class; DGX-2 and
  HubAndSpoke are full meshes of one class;
* costs are microseconds for one chunk of the size the profile is for (``profile_chunk``,
  default: the ``_1MB``/``_32KB`` suffix of its ``name``), so a link's bandwidth is that size
  over ``beta`` and its latency is ``alpha``;
* a ``switch`` sketch turns each listed GPU set into one switch device per node (a set listed
  k times gets k times the port bandwidth); GPUs of a set must share one link class;
* the ``relay`` sketch keeps only the ``internode_conn`` links between nodes, with the remote
  beta scaled by (logical links / ``nics_per_node``) as TACCL does; with more than two nodes
  each GPU's remote links also share one in-port and one out-port.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hub.errors import ImportFormatError
from hub.topology import Link, LinkGraph, ShortestPathRouter, dgx1

from ._problem import RelayRule

__all__ = ["KINDS", "Network", "load_taccl"]

KINDS = ("NDv2", "DGX1", "DGX2", "HubAndSpoke", "custom")
_SIZE = re.compile(r"_(\d+)(KB|MB|GB)$", re.IGNORECASE)
_UNIT = {"kb": 10**3, "mb": 10**6, "gb": 10**9}


@dataclass
class Network:
    """A network to synthesize on, and the rules a sketch adds to it."""

    graph: LinkGraph
    label: str
    node_size: int | None = None
    relay: RelayRule | None = None
    symmetries: list[tuple[int, ...]] = field(default_factory=list)
    symmetry_keys: list[str] = field(default_factory=list)  # where each symmetry was given
    path: str | None = None  # the sketch file (errors name it)
    topology_path: str | None = None
    extra_ports: list[tuple[str, list[tuple[int, int]]]] = field(default_factory=list)
    switch_terms: list[tuple[str, list[tuple[int, int]]]] = field(default_factory=list)
    chunkup: int = 1
    profile_chunk: int | None = None
    sketch: dict[str, Any] = field(default_factory=dict)
    network_string: str | None = None  # a collhub topology string for the same graph, if one exists


class _File:
    """One JSON file and the errors that name it."""

    def __init__(self, path: str | Path, what: str) -> None:
        self.path = str(path)
        p = Path(path)
        if not p.is_file():
            raise ImportFormatError(
                f"{what} file not found", path=self.path, hint=f"give the path of a TACCL {what} JSON file"
            )
        try:
            self.data = json.loads(p.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ImportFormatError(
                f"malformed JSON: {exc.msg} (column {exc.colno})",
                path=self.path,
                line=exc.lineno,
                hint=f"a TACCL {what} is one JSON object",
            ) from None
        except UnicodeDecodeError:
            raise ImportFormatError("not a UTF-8 text file", path=self.path, hint=f"a TACCL {what} is JSON") from None
        if not isinstance(self.data, dict):
            raise ImportFormatError(f"expected a JSON object, got {type(self.data).__name__}", path=self.path)

    def err(self, key: str, msg: str, hint: str | None = None) -> ImportFormatError:
        return ImportFormatError(f"{key}: {msg}", path=self.path, hint=hint)

    def get(
        self,
        key: str,
        kind: type | tuple[type, ...],
        *,
        required: bool = True,
        default: Any = None,
        src: dict[str, Any] | None = None,
        name: str | None = None,
    ) -> Any:
        data = self.data if src is None else src
        name = name or key
        if key not in data:
            if required:
                raise self.err(name, "missing", hint=f'add "{key}" (see TACCL\'s INPUT_GUIDE.md)')
            return default
        value = data[key]
        if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
            raise self.err(name, f"expected {_tname(kind)}, got {value!r}")
        if not isinstance(value, kind):
            raise self.err(name, f"expected {_tname(kind)}, got {json.dumps(value)[:40]}")
        return value

    def number(
        self,
        key: str,
        *,
        positive: bool = False,
        src: dict[str, Any] | None = None,
        name: str | None = None,
        required: bool = True,
    ) -> float:
        v = self.get(key, (int, float), src=src, name=name, required=required, default=None)
        if v is None:
            return -1.0
        if positive and not v > 0:
            raise self.err(name or key, f"must be > 0, got {v}")
        if v < 0:
            raise self.err(name or key, f"must be >= 0, got {v}")
        return float(v)


def _tname(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "an object",
        bool: "true/false",
    }
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def _kind(topo: _File, kind: str | None) -> str:
    if kind is not None:
        if kind not in KINDS:
            raise topo.err("topology kind", f"unknown kind {kind!r}", hint="one of: " + ", ".join(KINDS))
        return "NDv2" if kind == "DGX1" else kind
    if "links" in topo.data:
        return "custom"
    name = str(topo.data.get("name", ""))
    for k in ("NDv2", "DGX1", "DGX2", "HubAndSpoke"):
        if name.lower().startswith(k.lower()):
            return "NDv2" if k == "DGX1" else k
    raise topo.err(
        "name",
        f"cannot tell the topology kind from name {name!r}",
        hint="pass topology_kind=NDv2|DGX2|HubAndSpoke|custom (TACCL's <topo> argument)",
    )


def _matrix(topo: _File, key: str, g: int) -> list[list[float]]:
    m = topo.get(key, list)
    if len(m) != g or any(not isinstance(row, list) or len(row) != g for row in m):
        raise topo.err(key, f"must be a {g}x{g} matrix (gpus_per_node = {g})")
    for i, row in enumerate(m):
        for j, v in enumerate(row):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
                raise topo.err(f"{key}[{i}][{j}]", f"expected a number >= 0, got {json.dumps(v)}")
    return [[float(v) for v in row] for row in m]


def _intranode(topo: _File, kind: str) -> tuple[int, dict[tuple[int, int], float]]:
    """GPUs per node and the beta of every intra-node link (src, dst) -> us per chunk."""
    if kind == "custom":
        g = int(topo.number("gpus_per_node", positive=True))
        links = _matrix(topo, "links", g)
        betas = _matrix(topo, "betas", g)
        _matrix(topo, "invbws", g)
        out = {}
        for d in range(g):
            for s in range(g):
                if s != d and links[d][s] > 0:
                    if not betas[d][s] > 0:
                        raise topo.err(f"betas[{d}][{s}]", "a link needs a beta > 0")
                    out[(s, d)] = betas[d][s] / links[d][s]  # k parallel links: k times the bandwidth
        return g, out
    betas = topo.get("node_betas_list", list)
    topo.get("node_invbws_list", list)
    want = 2 if kind == "NDv2" else 1
    if len(betas) != want or any(isinstance(b, bool) or not isinstance(b, (int, float)) or not b > 0 for b in betas):
        raise topo.err("node_betas_list", f"{kind} needs {want} positive beta(s), got {json.dumps(betas)}")
    if kind == "NDv2":
        # DGX-1 NVLink counts: double links are the first (faster) class
        out = {(ln.src, ln.dst): float(betas[0] if ln.bandwidth > 1 else betas[1]) for ln in dgx1(1.0, 0.0).links}
        return 8, out
    g = 16 if kind == "DGX2" else int(topo.number("gpus_per_node", positive=True))
    return g, {(s, d): float(betas[0]) for s in range(g) for d in range(g) if s != d}


def _profile_chunk(topo: _File, given: int | None) -> int:
    if given is not None:
        return int(given)
    m = _SIZE.search(str(topo.data.get("name", "")))
    if m is None:
        raise topo.err(
            "name",
            "cannot tell the chunk size the costs are for",
            hint="name it like TACCL's examples (e.g. NDv2_1MB) or pass profile_chunk='1MB'",
        )
    return int(m.group(1)) * _UNIT[m.group(2).lower()]


def _bw(chunk: int, beta_us: float) -> float:
    """GB/s (2^30 B/s) of a link that moves ``chunk`` bytes in ``beta_us`` microseconds."""
    return chunk / (beta_us * 1e-6) / 2**30


def load_taccl(
    topology: str | Path, sketch: str | Path, *, kind: str | None = None, profile_chunk: int | None = None
) -> Network:
    """Read a TACCL topology profile and communication sketch (see the module docstring)."""
    topo = _File(topology, "topology profile")
    sk = _File(sketch, "communication sketch")
    k = _kind(topo, kind)
    g, intra = _intranode(topo, k)
    alpha = topo.number("alpha")
    chunk = _profile_chunk(topo, profile_chunk)
    nnodes = sk.get("nnodes", int)
    if nnodes < 1:
        raise sk.err("nnodes", f"must be >= 1, got {nnodes}")
    from ._sketch import apply_sketch

    net = apply_sketch(topo, sk, k, g, intra, alpha, chunk, nnodes)
    net.path = sk.path
    net.topology_path = topo.path
    return net


def make_graph(
    p: int,
    links: dict[tuple[int, int], tuple[float, float]],
    switches: list[tuple[list[int], float, float]],
    label: str,
) -> LinkGraph:
    """A link graph: ``links`` (src, dst) -> (GB/s, ns); each switch: member NPUs, port GB/s, ns."""
    out = [Link(s, d, bw, lat) for (s, d), (bw, lat) in sorted(links.items())]
    for i, (members, bw, lat) in enumerate(switches):
        sw = p + i
        for m in members:
            out += [Link(m, sw, bw, lat), Link(sw, m, bw, 0.0)]
    return LinkGraph(p, out, switches=len(switches), router=ShortestPathRouter(), name=label)
