"""The compact topology string and :func:`load_topology`.

Grammar (case-insensitive, blanks ignored)::

    spec    := body ( ";" option )*          options after ";" apply to every block
    body    := item ( "," item )*
    item    := block | option                a bare option attaches to the block before it
    block   := kind [ ":" shape ] [ "@" option ]
    option  := key "=" number                keys: bw (bandwidth, GB/s = 2^30 B/s), lat (latency, ns),
                                             spines (fattree only); mesh/torus take one number
                                             per dimension too: bw=100/50 (heterogeneous)

Kinds: ``ring:N``, ``fc:N`` (``fullyconnected:N``), ``switch:N`` (dimensional, stackable:
``ring:4,switch:8``); link-graph presets ``mesh:AxB[xC..]``, ``torus:AxB[xC..]``,
``hypercube:D``, ``dgx1``, ``fattree:LxN``, ``rail:NODESxGPUS`` (used alone). Defaults: bw=50, lat=500.
Examples: ``ring:8@bw=100,lat=200``, ``ring:4@bw=200,switch:8;lat=1000``, ``torus:4x4x4;bw=25``.

Ranges (checked before anything is built, so a hostile string costs nothing): ``bw`` in
[:data:`MIN_BANDWIDTH`, :data:`MAX_BANDWIDTH`] GB/s, ``lat`` in [0, :data:`MAX_LATENCY`] ns,
``spines`` in 1..:data:`MAX_NPUS`, at most :data:`MAX_NPUS` NPUs in total (:data:`MAX_GRAPH_NPUS`
for mesh, torus and fattree). Outside them the
simulated times would underflow or overflow (``bw=1e-300`` reads as a deadlock), so they are
format errors, not results.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..errors import TopologyFormatError
from ._base import DEFAULT_BANDWIDTH, DEFAULT_LATENCY, Topology
from ._dims import Dimension, DimensionalTopology

__all__ = [
    "MAX_BANDWIDTH",
    "MAX_GRAPH_NPUS",
    "MAX_LATENCY",
    "MAX_NPUS",
    "MIN_BANDWIDTH",
    "load_topology",
    "parse_topology",
]

#: Per-link bandwidth bounds in GB/s (2^30 B/s): 1 MB/s .. 1 PB/s covers every real link.
MIN_BANDWIDTH = 1e-3
MAX_BANDWIDTH = 1e6
#: Per-hop latency bound in ns (1000 s).
MAX_LATENCY = 1e12
#: NPUs a topology string may describe: 2^20 for stacked dimensions (no per-NPU state), 2^16 for
#: the link-graph presets (mesh, torus, fattree), which allocate every link.
MAX_NPUS = 1 << 20
MAX_GRAPH_NPUS = 1 << 16
#: Digits in one shape number: more cannot be a real size and int() of it is quadratic.
_MAX_DIGITS = 9
#: Characters in one topology string.
_MAX_SPEC = 4096

_DIM_KINDS = {
    "ring": "Ring",
    "fc": "FullyConnected",
    "fullyconnected": "FullyConnected",
    "fully_connected": "FullyConnected",
    "switch": "Switch",
}
_PRESETS = ("mesh", "torus", "hypercube", "dgx1", "fattree", "rail")
_KEYS = {"bw": "bw", "bandwidth": "bw", "lat": "lat", "latency": "lat", "spines": "spines"}
_EXAMPLES = "e.g. 'ring:8', 'ring:4,switch:8', 'ring:8@bw=100,lat=200', 'torus:4x4', 'dgx1', 'fattree:4x8'"
_NUM = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


class _Block:
    def __init__(self, kind: str, shape: str, pos: int) -> None:
        self.kind, self.shape, self.pos = kind, shape, pos
        self.opts: dict[str, Any] = {}


def _err(spec: str, msg: str, hint: str | None = None) -> TopologyFormatError:
    return TopologyFormatError(f"topology {spec!r}: {msg}", hint=hint or _EXAMPLES)


def _option(spec: str, text: str) -> tuple[str, float | tuple[float, ...]]:
    key, eq, value = text.partition("=")
    if not eq:
        raise _err(spec, f"expected key=value, got {text!r}", "options are bw=<GB/s>, lat=<ns> (fattree: spines=<n>)")
    k = _KEYS.get(key)
    if k is None:
        import difflib  # only to suggest a spelling

        near = difflib.get_close_matches(key, list(_KEYS), n=1)
        raise _err(
            spec, f"unknown option {key!r}", f"did you mean {near[0]!r}?" if near else "options: bw, lat, spines"
        )
    parts = value.split("/") if k in ("bw", "lat") else [value]  # per dimension: mesh/torus only
    if len(value) > 40 * len(parts) or len(parts) > 8 or not all(_NUM.match(p) for p in parts):
        raise _err(
            spec,
            f"option {key}={value[:40]!r} is not a number"
            + (" or a '/'-separated list of numbers" if k in ("bw", "lat") else ""),
        )
    numbers = [float(p) for p in parts]
    for number in numbers:
        if k == "bw" and not MIN_BANDWIDTH <= number <= MAX_BANDWIDTH:
            raise _err(
                spec,
                f"bw={value} is outside {MIN_BANDWIDTH:g}..{MAX_BANDWIDTH:g} GB/s",
                "bw is the per-link bandwidth in GB/s (2^30 B/s), e.g. bw=50",
            )
        if k == "lat" and not 0 <= number <= MAX_LATENCY:
            raise _err(
                spec, f"lat={value} is outside 0..{MAX_LATENCY:g} ns", "lat is the per-hop latency in ns, e.g. lat=500"
            )
        if k == "spines" and (number != int(number) or not 1 <= number <= MAX_NPUS):
            raise _err(spec, f"spines={value} is not a whole number in 1..{MAX_NPUS}")
    return k, (tuple(numbers) if len(numbers) > 1 else numbers[0])


def _ints(spec: str, kind: str, shape: str, count: int | None) -> list[int]:
    parts = shape.split("x") if shape else []
    if not parts or not all(p.isdigit() and p.isascii() for p in parts) or (count is not None and len(parts) != count):
        want = {1: "N", 2: "AxB"}.get(count or 0, "AxB[xC...]")
        raise _err(spec, f"{kind} needs a shape like {kind}:{want}, got {shape[:40]!r}")
    if any(len(p.lstrip("0")) > _MAX_DIGITS for p in parts):
        raise _err(spec, f"{kind}:{shape[:40]} is larger than {MAX_NPUS} NPUs", f"at most {MAX_NPUS} NPUs")
    return [int(p) for p in parts]


def _check_npus(spec: str, total: int, cap: int = MAX_NPUS) -> None:
    if total > cap:
        raise _err(spec, f"{total} NPUs is more than the limit of {cap}", f"at most {cap} NPUs")


def parse_topology(spec: str) -> Topology:
    """Parse the compact string form (see the module docstring)."""
    if len(str(spec)) > _MAX_SPEC:
        raise _err(str(spec)[:40] + "...", f"topology string of {len(str(spec))} characters (limit {_MAX_SPEC})")
    text = re.sub(r"\s+", "", str(spec)).lower()
    if not text:
        raise _err(spec, "empty topology string")
    body, *globals_ = text.split(";")
    gopts: dict[str, Any] = {}
    for g in globals_:
        if g:
            k, v = _option(spec, g)
            gopts[k] = v
    blocks: list[_Block] = []
    for i, item in enumerate(body.split(",")):
        if not item:
            raise _err(spec, f"empty item at position {i + 1}")
        head, at, option = item.partition("@")
        if "=" in head and not at:
            if not blocks:
                raise _err(spec, f"option {item!r} before any block")
            k, v = _option(spec, item)
            blocks[-1].opts[k] = v
            continue
        kind, _, shape_text = head.partition(":")
        if kind not in _DIM_KINDS and kind not in _PRESETS:
            import difflib  # only to suggest a spelling

            near = difflib.get_close_matches(kind, [*_DIM_KINDS, *_PRESETS], n=1)
            raise _err(spec, f"unknown kind {kind!r}", f"did you mean {near[0]!r}? " + _EXAMPLES if near else None)
        b = _Block(kind, shape_text, i)
        if at:
            k, v = _option(spec, option)
            b.opts[k] = v
        blocks.append(b)

    def opt(b: _Block, key: str, default: float | None) -> Any:
        value = b.opts.get(key, gopts.get(key, default))
        if isinstance(value, tuple) and b.kind not in ("mesh", "torus"):
            raise _err(spec, f"{b.kind}: per-dimension values ({key}=a/b) apply to mesh and torus only")
        return value

    presets = [b for b in blocks if b.kind in _PRESETS]
    if presets:
        if len(blocks) > 1:
            raise _err(
                spec,
                f"preset {presets[0].kind!r} cannot be combined with other blocks",
                "stack only ring/fc/switch dimensions, e.g. 'ring:4,switch:8'",
            )
        from ._presets import dgx1, fattree, hypercube, mesh, rail, torus  # link graphs: rarely

        b = presets[0]
        bw = opt(b, "bw", DEFAULT_BANDWIDTH)
        lat = opt(b, "lat", DEFAULT_LATENCY)
        assert bw is not None and lat is not None
        if "spines" in b.opts or "spines" in gopts:
            if b.kind != "fattree":
                raise _err(spec, "option 'spines' applies to fattree only")
        try:
            if b.kind in ("mesh", "torus"):
                shape = _ints(spec, b.kind, b.shape, None)
                _check_npus(spec, _product(shape), MAX_GRAPH_NPUS)
                return (mesh if b.kind == "mesh" else torus)(shape, bw, lat)
            if b.kind == "hypercube":
                return hypercube(_ints(spec, "hypercube", b.shape, 1)[0], bw, lat)
            if b.kind == "rail":
                nodes, gpus = _ints(spec, "rail", b.shape, 2)
                return rail(nodes, gpus, bw, lat)
            if b.kind == "dgx1":
                if b.shape:
                    raise _err(spec, "dgx1 takes no shape (it is 8 GPUs)")
                return dgx1(bw, lat)
            leaves, per_leaf = _ints(spec, "fattree", b.shape, 2)
            _check_npus(spec, leaves * per_leaf, MAX_GRAPH_NPUS)
            sp = opt(b, "spines", None)
            return fattree(leaves, per_leaf, None if sp is None else int(sp), bw, lat)
        except TopologyFormatError as exc:
            if exc.message.startswith("topology "):
                raise
            raise _err(spec, exc.message, exc.hint) from None
    if "spines" in gopts or any("spines" in b.opts for b in blocks):
        raise _err(spec, "option 'spines' applies to fattree only")
    dims = []
    shapes = [_ints(spec, b.kind, b.shape, 1)[0] for b in blocks]
    _check_npus(spec, _product(shapes))
    for b, n in zip(blocks, shapes, strict=False):
        bw = opt(b, "bw", DEFAULT_BANDWIDTH)
        lat = opt(b, "lat", DEFAULT_LATENCY)
        assert bw is not None and lat is not None
        try:
            dims.append(Dimension(_DIM_KINDS[b.kind], n, bw, lat))
        except TopologyFormatError as exc:
            raise _err(spec, f"dimension {len(dims)}: {exc.message}") from None
    return DimensionalTopology(dims)


def _product(values: list[int]) -> int:
    total = 1
    for v in values:
        total *= v
        if total > MAX_NPUS:  # stop early: the product of many shape numbers is unbounded
            return total
    return total


def load_topology(spec: str | Path | Topology) -> Topology:
    """A topology from a compact string (``ring:8``, ``torus:4x4``, ...) or a ``network.yml`` path.

    A string is read as a file when it names an existing file or ends in ``.yml``/``.yaml``.
    A :class:`Topology` passes through unchanged.
    """
    if isinstance(spec, Topology):
        return spec
    s = str(spec).strip()
    if isinstance(spec, Path) or s.endswith((".yml", ".yaml")) or (("/" in s or ":" not in s) and Path(s).is_file()):
        from ._yaml import read_network_yml  # files only: a topology string needs no reader

        if isinstance(spec, Path):
            return read_network_yml(spec)
        if not Path(s).is_file():
            raise TopologyFormatError(
                f"network file {s} not found",
                hint="give a path to an ASTRA-sim network.yml or a topology string such as 'ring:8'",
            )
        return read_network_yml(s)
    return parse_topology(s)
