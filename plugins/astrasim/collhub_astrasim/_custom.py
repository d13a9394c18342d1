"""``astrasim.custom``: import an existing ASTRA-sim custom-collective ET set as an Algorithm.

Such ETs (the reference converter's output, the TACOS writer's, hand-made ones) carry peers,
tags, byte sizes, dependencies and COMP durations, but **no buffer semantics**: no chunk offsets,
no statement of which buffer a message reads or writes (the converter drops them, ``chakra-et.md``
§6.2). The imported algorithm is therefore good for timing (``hub.simulate``, ``astrasim.run``)
but not for semantic verification; ``meta.extra`` says so.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from hub.chakra import Algorithm, Collective, NodeType
from hub.errors import AlgorithmError, UsageError

__all__ = ["CustomParams", "NO_SEMANTICS_NOTE", "produce_custom"]

NO_SEMANTICS_NOTE = (
    "imported from ASTRA-sim custom-collective ETs, which carry no buffer offsets: "
    "timing is exact, semantic verification is skipped"
)


class CustomParams(BaseModel):
    """Parameters of ``astrasim.custom``."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(description="ET prefix of the set: <path>.<rank>.et for rank 0..N-1")
    collective: str | None = Field(
        default=None, description="collective the ETs implement, when their GlobalMetadata does not say"
    )
    name: str | None = Field(default=None, description="algorithm name (default: the prefix's file name)")
    size: int | None = Field(
        default=None,
        ge=1,
        description="collective size in bytes the ETs were made for (labels results; sizes stay as written)",
    )
    collective_param_wins: bool = Field(
        default=False, description="use collective even when the files declare a different one"
    )
    ranks: int | None = Field(default=None, ge=1, description="expected number of ranks (checked)")


def _message_sizes(alg: Algorithm) -> list[int]:
    sizes: set[int] = set()
    for g in alg.graphs:
        comm = (g.kind == NodeType.SEND) | (g.kind == NodeType.RECV)
        sizes.update(int(s) for s in np.unique(g.size[comm]))
    return sorted(sizes)


def _global_metadata(path: Path) -> dict[str, Any]:
    """The GlobalMetadata attributes of one ET file, including what the core reader drops (the
    converter's ``input_file``, the whole MSCCL-IR); {} when
    the file cannot be read (the core reader has already accepted it: there is just no inference)."""
    from hub.chakra import read_global_metadata
    from hub.errors import TraceFormatError

    try:
        _version, attrs = read_global_metadata(path)
    except TraceFormatError:
        return {}
    return attrs


def _gpu_chunks(path: Path) -> tuple[int, int, int] | None:
    """(i_chunks, o_chunks, s_chunks) of the MSCCL-IR a reference-converter ET embeds, if any."""
    attrs = _global_metadata(path)
    xml = attrs.get("input_file")
    if not isinstance(xml, str):
        return None
    m = re.search(r"<gpu\b[^>]*>", xml)
    if not m:
        return None
    values = dict(re.findall(r"\b([io]_chunks|s_chunks)=\"(\d+)\"", m.group(0)))
    try:
        return int(values["i_chunks"]), int(values["o_chunks"]), int(values.get("s_chunks", 0))
    except KeyError:
        return None


def _with_chunk_model(alg: Algorithm, path: Path, size: int | None) -> tuple[Algorithm, str]:
    """Give an imported algorithm chunk counts so that ``bind`` can resize it.

    Message sizes are multiples of one chunk (the converter writes chunk_size x cnt), so the gcd
    g of all sizes is the chunk size; each message then has size / g chunks. The buffer sizes in
    chunks come from the embedded MSCCL-IR, or from ``size`` / g. Without either, the algorithm
    keeps fixed sizes.
    """
    if alg.meta.in_chunks > 0 or alg.meta.out_chunks > 0:
        return alg, "reader"
    sizes = [s for s in _message_sizes(alg) if s > 0]
    if not sizes:
        return alg, "none"
    g = 0
    for s in sizes:
        g = math.gcd(g, s)
    chunks = _gpu_chunks(path)
    if chunks is not None:
        i_chunks, o_chunks, s_chunks = chunks
        source = "embedded MSCCL-IR"
        if o_chunks == 0:  # MSCCL-IR writes 0 output chunks for in-place algorithms
            n = alg.ranks
            o_chunks = {Collective.ALLGATHER: i_chunks * n, Collective.REDUCESCATTER: max(i_chunks // n, 1)}.get(
                alg.collective, i_chunks
            )
    elif size is not None and size % g == 0:
        i_chunks = o_chunks = size // g
        s_chunks = 0
        if alg.collective is Collective.ALLGATHER:
            i_chunks = max(o_chunks // alg.ranks, 1)
        elif alg.collective is Collective.REDUCESCATTER:
            o_chunks = max(i_chunks // alg.ranks, 1)
        source = "size parameter"
    else:
        return alg, "none"
    graphs = []
    for gr in alg.graphs:
        g2 = gr.copy()
        comm = (g2.kind == NodeType.SEND) | (g2.kind == NodeType.RECV)
        g2.count = np.where(comm & (g2.size > 0), g2.size // g, g2.count).astype(g2.count.dtype)
        graphs.append(g2)
    meta = replace(alg.meta, in_chunks=i_chunks, out_chunks=o_chunks, scratch_chunks=s_chunks)
    out = Algorithm(meta, tuple(graphs))
    if size is None:
        out = out.with_meta(size=g * out.meta.reference_chunks)
    return out, source


def _collective_from_metadata(path: Path) -> Collective:
    """The collective a reference-converter ET names: GlobalMetadata ``collective`` ("allreduce",
    "algo@allreduce"), else the ``coll`` attribute of the embedded MSCCL-IR (``input_file``)."""
    attrs = _global_metadata(path)
    candidates = []
    if isinstance(attrs.get("collective"), str):
        candidates.append(attrs["collective"].rsplit("@", 1)[-1])
    if isinstance(attrs.get("input_file"), str):
        m = re.search(r"<algo\b[^>]*\bcoll=\"([A-Za-z_]+)\"", attrs["input_file"])
        if m:
            candidates.append(m.group(1))
    for text in candidates:
        try:
            return Collective.parse(text)
        except UsageError:
            continue
    return Collective.CUSTOM


def produce_custom(params: CustomParams, ctx: Any) -> Algorithm:
    """Read the ET set with the core reader and state what was inferred and what cannot be."""
    from hub.chakra import read_algorithm

    prefix = Path(params.path).expanduser()
    if not prefix.is_absolute() and ctx is not None and not Path(f"{prefix}.0.et").is_file():
        candidate = Path(ctx.workdir) / prefix
        if Path(f"{candidate}.0.et").is_file():
            prefix = candidate
    if not Path(f"{prefix}.0.et").is_file():
        raise UsageError(
            f"no ET set at {prefix} ({prefix}.0.et does not exist)", hint="path is the prefix without .<rank>.et"
        )
    alg: Algorithm = read_algorithm(prefix)
    if params.ranks is not None and alg.ranks != params.ranks:
        raise AlgorithmError(f"{prefix}: the ET set has {alg.ranks} ranks, not {params.ranks}")
    declared = alg.collective
    if declared is Collective.CUSTOM:
        declared = _collective_from_metadata(Path(f"{prefix}.0.et"))
    coll = declared
    notes: list[tuple[str, str | int | float | bool]] = []
    if params.collective is not None:
        wanted = Collective.parse(params.collective)
        if declared not in (Collective.CUSTOM, wanted) and not params.collective_param_wins:
            raise UsageError(
                f"{prefix}: the files declare collective {declared.value}, not {wanted.value}",
                hint="drop collective=, or set collective_param_wins=true to override",
            )
        coll = wanted
        notes.append(("astrasim.collective_source", "parameter"))
    elif declared is Collective.CUSTOM:
        raise UsageError(
            f"{prefix}: the ETs do not say which collective they implement",
            hint="pass collective=allreduce (or allgather, reducescatter, alltoall)",
        )
    else:
        notes.append(("astrasim.collective_source", "GlobalMetadata"))
    alg = alg.with_meta(collective=coll)
    alg, chunk_source = _with_chunk_model(alg, Path(f"{prefix}.0.et"), params.size)
    notes.append(("astrasim.chunks_from", chunk_source))
    sizes = _message_sizes(alg)
    notes.append(("astrasim.semantics", NO_SEMANTICS_NOTE))
    notes.append(("astrasim.message_bytes", ",".join(str(s) for s in sizes)))
    notes.append(("astrasim.source", str(prefix)))
    meta_changes: dict[str, Any] = {
        "collective": coll,
        "name": params.name or alg.meta.name or prefix.name,
        "producer": "astrasim.custom",
        "extra": tuple(alg.meta.extra) + tuple(notes),
    }
    if params.size is not None:
        meta_changes["size"] = params.size
    return alg.with_meta(**meta_changes)
