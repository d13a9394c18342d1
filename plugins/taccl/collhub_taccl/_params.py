"""Parameters of ``taccl.synthesize``."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from hub.chakra import Collective

__all__ = ["COLLECTIVES", "SynthesizeParams"]

COLLECTIVES = frozenset({"allgather", "alltoall", "reducescatter", "allreduce"})


class SynthesizeParams(BaseModel):
    """Where to synthesize (a collhub network, or TACCL's topology profile + sketch) and what."""

    model_config = ConfigDict(extra="forbid")

    collective: str = Field(description="allgather, alltoall, reducescatter or allreduce (= reducescatter + allgather)")
    network: str | None = Field(
        None,
        description="collhub topology string (ring:8, torus:4x4, dgx1, rail:2x8, "
        "fattree:2x4, ...) or an ASTRA-sim network.yml path",
    )
    topology: str | None = Field(None, description="TACCL topology profile JSON (with sketch)")
    sketch: str | None = Field(None, description="TACCL communication sketch JSON (with topology)")
    topology_kind: str | None = Field(
        None,
        description="TACCL's <topo>: NDv2 (= DGX1), DGX2, HubAndSpoke, custom; "
        "default: from the profile's name (custom when it has links)",
    )
    profile_chunk: int | str | None = Field(
        None, description="chunk size the profile's costs are for (default: the _1MB/_32KB suffix of its name)"
    )
    chunks: int = Field(1, ge=1, le=64, description="chunks per rank (times the sketch's input_chunkup)")
    size: int | str | None = Field(
        None,
        description="collective size (nccl-tests' S) the costs are computed for; "
        "default 1MiB, or for TACCL files the size at which a chunk is profile_chunk",
    )
    time_limit: float = Field(
        60.0,
        gt=0,
        le=86_400,
        description="seconds for the whole synthesis; the MILP returns its best incumbent when it runs out",
    )
    seed: int = Field(0, ge=0, description="seed of the greedy tie-breaks, the restarts and HiGHS")
    restarts: int = Field(8, ge=1, le=256, description="stage-2 orderings tried (the first is unperturbed)")
    stage3: Literal["cpsat-routes", "cpsat", "fixed-order"] = Field(
        "cpsat-routes",
        description="stage 3 (needs ortools; without it the exact fixed-order timing of stage 2 "
        "stands): cpsat = CP-SAT no-overlap scheduling of the stage-2 routes; cpsat-routes = then also let CP-SAT "
        "re-route inside the DAGs with the time that is left; fixed-order = no CP-SAT",
    )
    link_order: Literal["auto", "queued", "data"] = Field(
        "auto",
        description="queued: a SEND also waits for the data of the schedule's previous SEND on its link; "
        "data: only for its own data; auto: build both, simulate each (hub.simulate, aware) and keep the "
        "faster (metadata taccl.link_order)",
    )
    reduction_comp: bool = Field(True, description="a cost-only COMP after each reducing RECV (as hub.ring)")

    @field_validator("collective", mode="before")
    @classmethod
    def _canonical(cls, value: object) -> str:
        c = Collective.parse(str(value) if not isinstance(value, Collective) else value).value
        if c not in COLLECTIVES:
            raise ValueError(f"taccl.synthesize does not synthesize {c}; one of: {', '.join(sorted(COLLECTIVES))}")
        return c

    @model_validator(mode="after")
    def _one_input(self) -> SynthesizeParams:
        files = self.topology is not None or self.sketch is not None
        if self.network is not None and files:
            raise ValueError("give either network or topology + sketch, not both")
        if self.network is None and not files:
            raise ValueError("give network (e.g. 'dgx1', 'torus:4x4') or a TACCL topology + sketch")
        if files and (self.topology is None or self.sketch is None):
            raise ValueError("a TACCL profile needs both topology and sketch")
        return self
