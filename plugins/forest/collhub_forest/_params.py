"""Parameters of ``forest.synthesize`` (pydantic v2)."""

from __future__ import annotations

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator

from hub.chakra import Collective

__all__ = ["SynthesizeParams"]


class SynthesizeParams(BaseModel):
    """Parameters of ``forest.synthesize`` (spanning-tree packing, pipelined)."""

    model_config = ConfigDict(extra="forbid")

    collective: str = Field(description="allgather, reducescatter or allreduce (any spelling)")
    network: str = Field(
        validation_alias=AliasChoices("network", "topology"),
        description="topology string ('dgx1', 'switch:8', 'fattree:4x8', 'ring:4,switch:8', 'torus:4x4@bw=200/50') "
        "or a network.yml path (alias: topology)",
    )
    size: int | str = Field(
        description="collective size (nccl-tests' definition: output of all-gather, input otherwise), e.g. "
        "'64MiB'; sets the number of pipeline pieces and binds the result"
    )
    pieces: int | None = Field(
        default=None,
        description="pipeline pieces per rank's shard (default: chosen from the size, the tree depth and the "
        "link latency, within a message budget)",
    )
    rounds: int | None = Field(
        default=None,
        description="trees per root in the packing (each carries 1/rounds of the shard; default: the smallest of "
        "1, 2, 4, 8, 16 whose link loads are within 1 % of the cut bound, else the best)",
    )
    window: int | None = Field(
        default=None,
        ge=0,
        description="SENDs in flight per (rank, peer) (0 = unlimited; default: a hop's latency in serializations + 2)",
    )
    clock: int | None = Field(
        default=None,
        ge=0,
        description="all-gather: a rank sends its own piece j once its newest RECV of piece j-clock is done (0 = off)",
    )
    tune: bool = Field(
        default=True,
        description="simulate a few (window, clock) choices with hub.simulate (aware) and keep the fastest "
        "(small networks only; window or clock given: no tuning)",
    )
    reduction_comp: bool = Field(default=True, description="a cost-only COMP after every reducing RECV")
    verify: bool = Field(default=True, description="run hub.verify (semantics) before returning")
    name: str | None = Field(default=None, description="algorithm name (default forest-<collective>-<topology>)")

    @field_validator("collective", mode="before")
    @classmethod
    def _canonical(cls, value: object) -> str:
        return Collective.parse(str(value) if not isinstance(value, Collective) else value).value
