"""Systems: what NCCL's selection model needs to know about a cluster, and how users write it.

A system is a GPU generation, GPUs per node, nodes, the NIC speed and the three graphs NCCL's
topology search would return for one node (ring, tree, NVLS): channels, per-channel bandwidth
inside and across nodes, path types, pattern. Users write it as

* ``GEN:GPUSxNODES@nic=BW``: ``hopper:8x4@nic=400G``, ``ampere:1x16@nic=100G`` (GEN one of
  ``volta|ampere|hopper``; BW in Gb/s with an optional ``G``; ``@nic=`` defaults to 400G);
* a preset: ``dgx-a100``, ``dgx-h100`` (one node), ``dgx-h100x4`` or ``dgx-h100:4`` (four nodes);
* YAML (a file or an inline mapping): ``{gen: hopper, gpus_per_node: 8, nodes: 4, nic: 400G}`` and,
  optionally, ``graphs: {ring: {channels: 8, bw_intra: 48, bw_inter: 48, type_intra: NVL,
  type_inter: PIX}, tree: {..., pattern: 1}, nvls: {...}}`` exactly as NCCL logs its search
  ("Pattern 4, ..., nChannels 8, bw 48/48, type NVL/PIX"); given graphs replace the node model.

The node model (rules, not a table of answers) restates what NCCL's search finds on the node
families collhub describes, from its speed ladders and link bandwidths (``search.cc``, ``topo.h``):

1. across nodes, a ring channel runs at the highest ladder speed not above
   ``min(NIC, GPU<->NIC path)``; the path is the GPU's PCIe link (Gen3 12, Gen4 24, Gen5 48 GB/s;
   a 1-GPU Volta node without GPUDirect read settles at 10); one channel per NIC on a
   multi-GPU node (DGX-1 style Volta: 4 NICs; Ampere and Hopper: 8), one on a 1-GPU node;
2. channels double at half speed when the speed is >= 25 GB/s, except on sm > 80 with < 50 GB/s
   and > 4 channels (``ncclTopoDupChannels``);
3. the tree graph has the ring's channels and inter speed; its intra speed climbs the ladder up
   to twice that, bounded by the node's NVLink ceiling per channel (Volta 20, Ampere 30, Hopper
   48; unbounded with one GPU);
4. one node alone: the NVLink search results (Volta 6 x 20, Ampere 12 x 20, Hopper 12 x 30; Hopper
   NVLS 8 channels 40/60);
5. Hopper NVSwitch nodes have NVLS: 8 channels at ``min(40, ring speed)`` inside, the ring speed across;
   16 NVLS channels (``ncclNvlsTuning``).

Each rule is checked against the search results NCCL printed for the shared synthetic systems.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from hub.errors import UsageError

from ._constants import SPEED_INTER

__all__ = ["GENERATIONS", "PRESETS", "Graph", "System", "make_system", "network_of", "parse_system"]

#: path types in NCCL's order (PATH_LOC .. PATH_NET): LL128 needs typeIntra <= NVB and typeInter <= PXB / PXN
PATH_TYPES = ("LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS", "NET")


@dataclass(frozen=True)
class _Family:
    sm: int
    cpu_vendor: int  # 1 Intel, 2 AMD (the CPU of the node family: DGX-1 / DGX A100 / DGX H100)
    nics: int  # NICs of a multi-GPU node
    path_bw_1gpu: float  # GPU <-> NIC path on a 1-GPU node (GB/s)
    path_bw: float  # GPU <-> NIC path on a multi-GPU node
    tree_intra_cap: float  # tree intra-node ceiling per channel (NVLink)
    single: tuple[int, float]  # one multi-GPU node alone: ring/tree channels, speed
    same_channels_single: int


GENERATIONS: dict[str, _Family] = {
    "volta": _Family(70, 1, 4, 10.0, 12.0, 20.0, (6, 20.0), 0),
    "ampere": _Family(80, 2, 8, 24.0, 24.0, 30.0, (12, 20.0), 1),
    "hopper": _Family(90, 1, 8, 48.0, 48.0, 48.0, (12, 30.0), 1),
}

#: name -> (generation, GPUs per node, NIC Gb/s)
PRESETS: dict[str, tuple[str, int, int]] = {
    "dgx-a100": ("ampere", 8, 200),
    "dgx-h100": ("hopper", 8, 400),
}


@dataclass(frozen=True)
class Graph:
    """One topology-search result, as NCCL prints it."""

    pattern: int
    channels: int
    bw_intra: float
    bw_inter: float
    type_intra: str = "NVL"
    type_inter: str = "PIX"
    latency_inter: float = 0.0
    same_channels: int = 0
    #: per channel, the GPU order inside a node (local ranks); empty = 0..ppn-1 on every channel
    intra: tuple[tuple[int, ...], ...] = ()


@dataclass(frozen=True)
class System:
    """A homogeneous cluster as NCCL's tuner sees it (rank 0's view)."""

    gen: str
    sm: int
    gpus_per_node: int
    nodes: int
    nic_gbps: float
    cpu_vendor: int
    ring: Graph
    tree: Graph
    nvls: Graph
    nvls_channels: int = 0
    label: str = ""
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def ranks(self) -> int:
        return self.gpus_per_node * self.nodes

    @property
    def nvls_support(self) -> bool:
        return self.nvls.channels > 0 and self.nvls_channels > 0

    @property
    def nvls_heads(self) -> int:
        """NVLS heads per node (``nvls.nHeads``): one per NVLS search channel, at most one per GPU
        and ``NCCL_MAX_NVLS_ARITY``; head h is local GPU h (0 without NVLS)."""
        return min(self.nvls.channels, self.gpus_per_node, 32) if self.nvls_support else 0

    @property
    def channels(self) -> int:
        """The communicator's collective channels (``comm->nChannels``)."""
        ch = 2 * min(self.ring.channels, self.tree.channels)
        if self.sm >= 90 and self.nodes > 1 and self.ring.bw_intra > 45 and ch < 16:
            ch *= 2
        return min(ch, 64)

    def describe(self) -> str:
        return self.label or f"{self.gen}:{self.gpus_per_node}x{self.nodes}@nic={self.nic_gbps:g}G"


def _ladder(speeds: tuple[float, ...], limit: float) -> float:
    return next((s for s in speeds if s <= limit), speeds[-1])


def model_graphs(gen: str, ppn: int, nodes: int, nic_gbps: float) -> tuple[Graph, Graph, Graph, int]:
    """(ring, tree, nvls, nvls channels) by the node model (module docstring)."""
    fam = GENERATIONS[gen]
    nvswitch = ppn > 1 and fam.sm >= 90
    none = Graph(5, 0, 0.0, 0.0, "LOC", "LOC")
    if nodes == 1:
        ch, bw = fam.single
        same = fam.same_channels_single
        ring = Graph(4, ch, bw, bw, "NVL", "PIX", same_channels=same)
        tree = Graph(1, ch, bw, bw, "NVL", "PIX", same_channels=same)
        nvls = Graph(5, 8, 40.0, 60.0, "NVL", "PIX") if nvswitch else none
        return ring, tree, nvls, 16 if nvswitch else 0
    ladder = SPEED_INTER[90 if fam.sm >= 90 else 70]
    path = fam.path_bw_1gpu if ppn == 1 else fam.path_bw
    bw = _ladder(ladder, min(nic_gbps / 8.0, path))
    ch = 1 if ppn == 1 else fam.nics
    if bw >= 25.0 and not (fam.sm > 80 and bw < 50.0 and ch > 4):
        ch, bw = ch * 2, bw / 2
    t_intra = "LOC" if ppn == 1 else "NVL"
    same = 1 if ppn == 1 else 0
    ring = Graph(4, ch, bw, bw, t_intra, "PIX", same_channels=same)
    intra = 2 * bw if ppn == 1 else max(bw, min(2 * bw, fam.tree_intra_cap))
    tree = Graph(3 if ppn == 1 else 1, ch, intra, bw, t_intra, "PIX", same_channels=same)
    nvls = Graph(5, 8, min(40.0, bw), bw, "NVL", "PIX") if nvswitch else none
    return ring, tree, nvls, 16 if nvswitch else 0


def make_system(
    gen: str,
    gpus_per_node: int,
    nodes: int,
    nic_gbps: float = 400.0,
    *,
    cpu_vendor: int | None = None,
    graphs: dict[str, Graph] | None = None,
    label: str = "",
) -> System:
    if gen not in GENERATIONS:
        raise UsageError(f"system: unknown GPU generation {gen!r}", hint="one of " + ", ".join(GENERATIONS))
    if gpus_per_node < 1 or nodes < 1 or gpus_per_node * nodes < 2:
        raise UsageError(
            f"system: {gpus_per_node} GPU(s) x {nodes} node(s): NCCL tunes nothing below 2 ranks",
            hint="e.g. hopper:8x4@nic=400G",
        )
    if gpus_per_node * nodes > 1 << 20 or not 0 < nic_gbps <= 1e5:
        raise UsageError("system: implausible size or NIC speed", hint="e.g. hopper:8x4@nic=400G")
    ring, tree, nvls, nvls_ch = model_graphs(gen, gpus_per_node, nodes, nic_gbps)
    if graphs:
        ring, tree, nvls = graphs.get("ring", ring), graphs.get("tree", tree), graphs.get("nvls", nvls)
        nvls_ch = 16 if nvls.channels > 0 and GENERATIONS[gen].sm >= 90 else 0
    fam = GENERATIONS[gen]
    return System(
        gen=gen,
        sm=fam.sm,
        gpus_per_node=gpus_per_node,
        nodes=nodes,
        nic_gbps=float(nic_gbps),
        cpu_vendor=fam.cpu_vendor if cpu_vendor is None else cpu_vendor,
        ring=ring,
        tree=tree,
        nvls=nvls,
        nvls_channels=nvls_ch,
        label=label,
    )


_STRING = re.compile(r"^(volta|ampere|hopper):(\d+)x(\d+)(?:@nic=(\d+(?:\.\d+)?)\s*(?:g|gb|gbps|gb/s)?)?$", re.I)
_PRESET = re.compile(r"^(dgx-a100|dgx-h100)(?:[x:](\d+))?$", re.I)


def _nic(value: Any, where: str) -> float:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(?:g|gb|gbps|gb/s)?\s*", str(value), re.I)
    if not m:
        raise UsageError(f"{where}: NIC speed {value!r} is not a number of Gb/s", hint="e.g. 400G")
    return float(m.group(1))


_GRAPH_KEYS = {"pattern", "channels", "bw_intra", "bw_inter", "type_intra", "type_inter", "latency_inter"}


def _graph(name: str, spec: Any, base: Graph, where: str) -> Graph:
    if not isinstance(spec, dict) or not set(spec) <= _GRAPH_KEYS:
        raise UsageError(f"{where}: graphs.{name} must be a mapping of {sorted(_GRAPH_KEYS)}", hint="see docs/nccl.md")
    g = replace(base, same_channels=0)
    try:
        changes: dict[str, Any] = {}
        for key, value in spec.items():
            if key in ("type_intra", "type_inter"):
                if str(value).upper() not in PATH_TYPES:
                    raise ValueError(f"{key} {value!r} not one of {', '.join(PATH_TYPES)}")
                changes[key] = str(value).upper()
            elif key in ("pattern", "channels"):
                changes[key] = int(value)
            else:
                v = float(value)
                if not math.isfinite(v) or v < 0:
                    raise ValueError(f"{key} {value!r} must be >= 0")
                changes[key] = v
        g = replace(g, **changes)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"{where}: graphs.{name}: {exc}", hint="see docs/nccl.md") from None
    if not 0 <= g.channels <= 64:
        raise UsageError(f"{where}: graphs.{name}.channels must be 0..64", hint="NCCL's MAXCHANNELS is 64")
    return g


def _from_mapping(doc: Any, where: str) -> System:
    if not isinstance(doc, dict):
        raise UsageError(f"{where}: a system mapping is expected", hint="{gen: hopper, gpus_per_node: 8, nodes: 4}")
    known = {"gen", "gpus_per_node", "nodes", "nic", "cpu", "graphs", "preset"}
    if not set(doc) <= known:
        raise UsageError(f"{where}: unknown keys {sorted(set(doc) - known)}", hint=f"allowed: {sorted(known)}")
    gen, ppn, nic = str(doc.get("gen", "")).lower(), doc.get("gpus_per_node"), doc.get("nic", 400)
    if "preset" in doc:
        gen, ppn, nic = PRESETS.get(str(doc["preset"]).lower(), ("", 0, 0))
        if not gen:
            raise UsageError(f"{where}: unknown preset {doc['preset']!r}", hint="one of " + ", ".join(PRESETS))
        ppn = doc.get("gpus_per_node", ppn)
        nic = doc.get("nic", nic)
    try:
        ppn_i, nodes_i = int(ppn), int(doc.get("nodes", 1))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise UsageError(f"{where}: gpus_per_node and nodes must be integers", hint="e.g. nodes: 4") from None
    cpu = {"intel": 1, "amd": 2, None: None}.get(doc.get("cpu"), -1)
    if cpu == -1:
        raise UsageError(f"{where}: cpu must be intel or amd", hint="the CPU vendor sets NCCL's LL ceiling")
    base = make_system(gen, ppn_i, nodes_i, _nic(nic, where))
    graphs = doc.get("graphs") or {}
    if not isinstance(graphs, dict) or not set(graphs) <= {"ring", "tree", "nvls"}:
        raise UsageError(f"{where}: graphs may give ring, tree and nvls", hint="see docs/nccl.md")
    given = {k: _graph(k, v, getattr(base, k), where) for k, v in graphs.items()}
    return make_system(gen, ppn_i, nodes_i, _nic(nic, where), cpu_vendor=cpu, graphs=given)


def parse_system(text: str | System | dict[str, Any]) -> System:
    """A :class:`System` from a string, a preset, a YAML file / inline mapping, or a mapping."""
    if isinstance(text, System):
        return text
    if isinstance(text, dict):
        return _from_mapping(text, "system")
    s = str(text).strip()
    m = _STRING.match(s)
    if m:
        gen, ppn, nodes, nic = m.group(1).lower(), int(m.group(2)), int(m.group(3)), m.group(4)
        return make_system(gen, ppn, nodes, float(nic) if nic else 400.0)
    m = _PRESET.match(s)
    if m:
        gen, ppn, nic = PRESETS[m.group(1).lower()]
        return make_system(gen, ppn, int(m.group(2) or 1), nic, label=s.lower())
    import yaml

    path = Path(s)
    where = "system"
    if s.endswith((".yaml", ".yml")) or (len(s) < 4096 and "\n" not in s and path.is_file()):
        if not path.is_file():
            raise UsageError(f"system: no such file {s}", hint="a YAML file, a preset or GEN:GPUSxNODES@nic=BW")
        if path.stat().st_size > 1 << 20:
            raise UsageError(f"{s}: a system file over 1 MiB", hint="a system is a few lines")
        where, s = s, path.read_text(encoding="utf-8", errors="replace")
    if s.startswith("{") or "\n" in s or where != "system":
        try:
            doc = yaml.safe_load(s)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            pos = f" line {mark.line + 1}" if mark is not None else ""
            raise UsageError(f"{where}:{pos} invalid YAML", hint="see docs/nccl.md for the system form") from None
        return _from_mapping(doc, where)
    raise UsageError(
        f"system: cannot read {text!r}",
        hint="GEN:GPUSxNODES@nic=BW (e.g. hopper:8x4@nic=400G), dgx-a100, dgx-h100x4 or a YAML file",
    )


#: NVLink bandwidth per GPU (GB/s, 10^9 B/s) as NCCL's topology counts it: links x per-link speed
#: (``topo.h``: SM70/SM80 20, SM90 20.6 GB/s per link; V100 6, A100 12, H100 18 links)
NVLINK_PER_GPU = {"volta": 120.0, "ampere": 240.0, "hopper": 370.8}
#: link latencies of the simulated network (ns): NCCL's smallest per-step hardware latency of a
#: ring (LL) on NVLink (0.6 us) and on the network (2.7 us), ``tuning.cc``
NVLINK_LAT_NS, NET_LAT_NS = 600, 2700


def _astra_bw(gbps: float) -> str:
    return f"{gbps * 1e9 / 2**30:.6g}"  # ASTRA-sim's GB/s are 2^30 B/s


def network_of(s: System) -> str:
    """A collhub topology string for ``s``: a switch of NVLink inside a node (GPU id fastest, as
    NCCL numbers ranks), a switch of NICs across nodes; per-GPU bandwidths, NCCL's latencies."""
    blocks = []
    if s.gpus_per_node > 1:
        blocks.append(f"switch:{s.gpus_per_node}@bw={_astra_bw(NVLINK_PER_GPU[s.gen])},lat={NVLINK_LAT_NS}")
    if s.nodes > 1:
        nics = 1 if s.gpus_per_node == 1 else GENERATIONS[s.gen].nics
        per_gpu = s.nic_gbps / 8.0 * min(1.0, nics / s.gpus_per_node)
        blocks.append(f"switch:{s.nodes}@bw={_astra_bw(per_gpu)},lat={NET_LAT_NS}")
    return ",".join(blocks)
