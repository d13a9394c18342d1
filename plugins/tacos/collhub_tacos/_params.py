"""Parameters of ``tacos.synthesize`` (pydantic v2)."""

from __future__ import annotations

from typing import Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator

from hub.chakra import Collective

__all__ = ["SynthesizeParams"]


class SynthesizeParams(BaseModel):
    """Parameters of ``tacos.synthesize`` (greedy link-chunk matching on the time-expanded network)."""

    model_config = ConfigDict(extra="forbid")

    collective: str = Field(description="allgather, reducescatter or allreduce (any spelling)")
    # `network`, as hub.simulate and taccl.synthesize call it; `topology` is accepted too.
    network: str = Field(
        validation_alias=AliasChoices("network", "topology"),
        description="topology string ('torus:32x32', 'mesh:8x8@bw=100/50', 'fattree:32x32', "
        "'dgx1'), an ASTRA-sim network.yml path or a link-graph .json file; switches are "
        "unwound into NPU links (alias: topology)",
    )
    ranks: int | None = Field(default=None, description="if given, must equal the topology's NPU count")
    # chunks and the seed count are checked by the synthesizer (exit 3), not here (exit 2)
    chunks: int = Field(default=1, description="chunks per rank (each rank's contribution is cut into this many)")
    size: int | str | None = Field(
        default=None,
        description="collective size (nccl-tests' definition: output of all-gather, input "
        "otherwise), e.g. '64MiB'; binds the result and sets the chunk size the link times use "
        "(default: 1 MiB per rank, TACOS's setting, result left unbound)",
    )
    model: Literal["tacos", "pipelined"] = Field(
        default="tacos",
        description="link occupancy: 'tacos' = one whole chunk at a time, busy latency + "
        "chunk/bandwidth (TACOS's TEN); 'pipelined' = busy chunk/bandwidth, lands a latency later (ASTRA-sim links)",
    )
    seed: int = Field(default=0, description="seed of the first try; a seed reproduces the result exactly")
    seeds: int = Field(
        default=3,
        description="tries with seeds seed, seed+1, ...; the shortest makespan wins (stops early at the lower bound)",
    )
    policy: Literal["scarce", "random"] = Field(
        default="scarce",
        description="chunk choice per link: 'scarce' = the chunk the fewest other in-neighbours "
        "could supply, rarest first; 'random' = a random candidate (TACOS)",
    )
    fallback: Literal["direct", "none"] = Field(
        default="direct",
        description="on networks with switches: also simulate hub.direct (hub.simulate, aware, at "
        "size) and return it when it beats the greedy's schedule, stated in metadata "
        "(tacos.fallback) and a warning; 'none' always returns the greedy's schedule",
    )
    reduction_comp: bool = Field(default=True, description="a cost-only COMP after every reducing RECV")
    verify: bool = Field(
        default=True,
        description="run hub.verify (semantics) before returning; false skips it (benchmarks of synthesis alone)",
    )
    progress: bool | None = Field(
        default=None, description="progress bar on stderr (default: when stderr is a terminal and the problem is large)"
    )
    name: str | None = Field(default=None, description="algorithm name (default tacos-<collective>-<topology>)")

    @field_validator("collective", mode="before")
    @classmethod
    def _canonical(cls, value: object) -> str:
        return Collective.parse(str(value) if not isinstance(value, Collective) else value).value
