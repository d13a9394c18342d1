"""Link-graph presets: mesh, torus, hypercube, DGX-1 hybrid cube-mesh, two-level fat tree, rail."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import TopologyFormatError
from ._base import DEFAULT_BANDWIDTH, DEFAULT_LATENCY
from ._dims import _fmt, blocks_link_graph
from ._graph import FatTreeRouter, Link, LinkGraph, ShortestPathRouter

__all__ = ["dgx1", "fattree", "hypercube", "mesh", "rail", "torus"]

# NVLink count between the 8 V100 GPUs of a DGX-1 (hybrid cube-mesh; two quads 0-3 and 4-7,
# each GPU with 6 NVLinks). Same matrix as the DGX-1 topologies used by SCCL/TACCL and TE-CCL.
_DGX1_NVLINKS: tuple[tuple[int, ...], ...] = (
    (0, 2, 1, 1, 2, 0, 0, 0),
    (2, 0, 1, 2, 0, 1, 0, 0),
    (1, 1, 0, 2, 0, 0, 2, 0),
    (1, 2, 2, 0, 0, 0, 0, 1),
    (2, 0, 0, 0, 0, 2, 1, 1),
    (0, 1, 0, 0, 2, 0, 1, 2),
    (0, 0, 2, 0, 1, 1, 0, 2),
    (0, 0, 0, 1, 1, 2, 2, 0),
)


def _suffix(bw: float | Sequence[float], lat: float | Sequence[float]) -> str:
    def f(x: float | Sequence[float]) -> str:
        return "/".join(_fmt(v) for v in x) if isinstance(x, Sequence) else _fmt(x)

    return f"@bw={f(bw)},lat={f(lat)}"


PerDim = float | Sequence[float]


def _per_dim(kind: str, what: str, value: PerDim, dims: int) -> list[float]:
    """One value per dimension: a number applies to all, a sequence (``bw=100/50``) gives each its own."""
    if not isinstance(value, Sequence):
        return [float(value)] * dims
    if len(value) != dims:
        raise TopologyFormatError(
            f"{kind}: {len(value)} {what} values for {dims} dimensions",
            hint=f"give one {what} per dimension, e.g. bw=100/50 for AxB",
        )
    return [float(v) for v in value]


def _check_shape(kind: str, shape: Sequence[int], minimum: int) -> None:
    if not shape or any(int(s) != s or s < minimum for s in shape):
        raise TopologyFormatError(f"{kind}: every side must be an integer >= {minimum}, got {list(shape)}")


def mesh(shape: Sequence[int], bandwidth: PerDim = DEFAULT_BANDWIDTH, latency: PerDim = DEFAULT_LATENCY) -> LinkGraph:
    """An n-D mesh (no wrap-around); NPU ids dimension 0 fastest; dimension-order routing.
    ``bandwidth``/``latency`` may be per dimension (a heterogeneous mesh, TACOS's Mesh2DHetero);
    ``mesh:4x4x4`` is TACOS's Hypercube3D."""
    _check_shape("mesh", shape, 2)
    bws = _per_dim("mesh", "bandwidth", bandwidth, len(shape))
    lats = _per_dim("mesh", "latency", latency, len(shape))
    spec = "mesh:" + "x".join(str(s) for s in shape) + _suffix(bandwidth, latency)
    return blocks_link_graph(
        [("Line", s, b, la) for s, b, la in zip(shape, bws, lats, strict=False)], spec=spec, name="mesh"
    )


def torus(shape: Sequence[int], bandwidth: PerDim = DEFAULT_BANDWIDTH, latency: PerDim = DEFAULT_LATENCY) -> LinkGraph:
    """An n-D torus (wrap-around rings per dimension); dimension-order routing, ties clockwise.
    ``bandwidth``/``latency`` may be per dimension."""
    _check_shape("torus", shape, 2)
    bws = _per_dim("torus", "bandwidth", bandwidth, len(shape))
    lats = _per_dim("torus", "latency", latency, len(shape))
    spec = "torus:" + "x".join(str(s) for s in shape) + _suffix(bandwidth, latency)
    return blocks_link_graph(
        [("Ring", s, b, la) for s, b, la in zip(shape, bws, lats, strict=False)], spec=spec, name="torus"
    )


def hypercube(dim: int, bandwidth: float = DEFAULT_BANDWIDTH, latency: float = DEFAULT_LATENCY) -> LinkGraph:
    """A ``dim``-dimensional hypercube (2^dim NPUs); e-cube routing (lowest differing bit first)."""
    if int(dim) != dim or not 1 <= dim <= 16:
        raise TopologyFormatError(f"hypercube: dimension must be an integer in 1..16, got {dim}")
    spec = f"hypercube:{dim}" + _suffix(bandwidth, latency)
    return blocks_link_graph([("Line", 2, bandwidth, latency)] * int(dim), spec=spec, name="hypercube")


def dgx1(bandwidth: float = DEFAULT_BANDWIDTH, latency: float = DEFAULT_LATENCY) -> LinkGraph:
    """DGX-1 (V100) hybrid cube-mesh: 8 GPUs; ``bandwidth`` is per NVLink, so GPU pairs joined by
    two NVLinks get one link of twice the bandwidth. Shortest-path routing."""
    links = [Link(a, b, bandwidth * k, latency) for a, row in enumerate(_DGX1_NVLINKS) for b, k in enumerate(row) if k]
    return LinkGraph(8, links, router=ShortestPathRouter(), spec="dgx1" + _suffix(bandwidth, latency), name="dgx1")


def fattree(
    leaves: int,
    per_leaf: int,
    spines: int | None = None,
    bandwidth: float = DEFAULT_BANDWIDTH,
    latency: float = DEFAULT_LATENCY,
) -> LinkGraph:
    """Two-level fat tree: ``leaves`` leaf switches with ``per_leaf`` NPUs each, ``spines`` spine
    switches (default ``per_leaf``: full bisection), one link per direction between every leaf and
    every spine; every link has ``bandwidth``. Devices: NPUs, then leaves, then spines."""
    if int(leaves) != leaves or leaves < 1 or int(per_leaf) != per_leaf or per_leaf < 1 or leaves * per_leaf < 2:
        raise TopologyFormatError(f"fattree: need >= 1 leaf and >= 1 NPU per leaf (>= 2 NPUs), got {leaves}x{per_leaf}")
    spines = per_leaf if spines is None else spines
    if int(spines) != spines or spines < 1:
        raise TopologyFormatError(f"fattree: spines must be an integer >= 1, got {spines}")
    npus = leaves * per_leaf
    leaf_base, spine_base = npus, npus + leaves
    links: list[Link] = []
    for n in range(npus):
        leaf = leaf_base + n // per_leaf
        links += [Link(n, leaf, bandwidth, latency), Link(leaf, n, bandwidth, latency)]
    if leaves > 1:
        for lf in range(leaves):
            for sp in range(spines):
                links += [
                    Link(leaf_base + lf, spine_base + sp, bandwidth, latency),
                    Link(spine_base + sp, leaf_base + lf, bandwidth, latency),
                ]
    n_spines = spines if leaves > 1 else 0
    spec = (
        f"fattree:{leaves}x{per_leaf}"
        + _suffix(bandwidth, latency)
        + (f",spines={spines}" if spines != per_leaf else "")
    )
    return LinkGraph(
        npus,
        links,
        switches=leaves + n_spines,
        router=FatTreeRouter(leaves, per_leaf, spines, leaf_base, spine_base),
        spec=spec,
        name="fattree",
    )


def rail(nodes: int, gpus: int, bandwidth: float = DEFAULT_BANDWIDTH, latency: float = DEFAULT_LATENCY) -> LinkGraph:
    """Rail-optimised cluster: ``nodes`` nodes of ``gpus`` GPUs; a full mesh inside each node and a
    full mesh between the GPUs of the same local index (one rail per index) across nodes. NPU id =
    node * gpus + local index. Every link has ``bandwidth``; dimension-order routing (node first)."""
    if int(nodes) != nodes or nodes < 1 or int(gpus) != gpus or gpus < 1 or nodes * gpus < 2:
        raise TopologyFormatError(f"rail: need >= 1 node and >= 1 GPU per node (>= 2 NPUs), got {nodes}x{gpus}")
    blocks = [("FullyConnected", int(s), bandwidth, latency) for s in (gpus, nodes) if s > 1]
    spec = f"rail:{int(nodes)}x{int(gpus)}" + _suffix(bandwidth, latency)
    return blocks_link_graph(blocks, spec=spec, name="rail")
