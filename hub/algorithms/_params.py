"""Parameter models of the built-in producers (pydantic v2, validated by the plugin manager).

Every model accepts ``collective`` in any spelling :meth:`Collective.parse` knows
(``all_reduce``, ``AllReduce`` ...) and stores the canonical one (``allreduce``). Whether an
algorithm implements the collective, and whether the rank count suits it, is checked when the
algorithm is built (``hub.errors.AlgorithmError``), so that the message can name the algorithm.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..chakra import Collective

__all__ = [
    "AlgorithmParams",
    "DirectParams",
    "DoubleBinaryTreeParams",
    "HalvingDoublingParams",
    "HierarchicalParams",
    "MAX_RANKS",
    "RingParams",
    "validated",
]


#: The most ranks a built-in producer builds unless ``max_ranks`` is raised: the node count grows
#: with ranks^2 (a 1024-rank ring all-reduce has ~4 million nodes, ~250 MB in memory), so
#: ``ranks=10**9`` is refused at once instead of exhausting memory (docs/security.md).
MAX_RANKS = 1024


class AlgorithmParams(BaseModel):
    """Fields every built-in producer takes."""

    # validators are built on first use, not at import: one run validates one producer's params
    model_config = ConfigDict(extra="forbid", defer_build=True)

    collective: str = Field(
        description="Collective to implement, e.g. allreduce, all_gather, reduce_scatter, alltoall."
    )
    ranks: int = Field(ge=1, description="Number of ranks (NPUs) taking part; at least 2, at most max_ranks.")
    max_ranks: int = Field(
        MAX_RANKS,
        ge=1,
        description=f"Refuse more ranks than this (default {MAX_RANKS}; memory grows with ranks^2). "
        "Raise it deliberately for a bigger algorithm.",
    )
    inplace: bool = Field(
        True,
        description="In-place buffers as CONTRACTS.md defines them (output aliases input, or the "
        "rank's block of it); False keeps the input untouched and adds local copies.",
    )

    @field_validator("collective", mode="before")
    @classmethod
    def _canonical_collective(cls, value: object) -> str:
        return Collective.parse(str(value) if not isinstance(value, Collective) else value).value

    @model_validator(mode="after")
    def _within_limit(self) -> AlgorithmParams:
        # checked before anything is allocated: the builders' arrays grow with ranks^2
        if self.ranks > self.max_ranks:
            raise ValueError(
                f"ranks={self.ranks} is more than max_ranks={self.max_ranks}; "
                "set max_ranks to build it anyway (memory grows with ranks^2)"
            )
        return self


class _Reducing(BaseModel):
    model_config = ConfigDict(defer_build=True)

    reduction_comp: bool = Field(
        True,
        description="Emit a cost-only COMP node (op NONE, count = chunks, duration unset) after each "
        "reducing RECV; the nodes that use the reduced data depend on it (MSCCL rrc = RECV + COMP).",
    )


class _Rooted(BaseModel):
    model_config = ConfigDict(defer_build=True)

    root: int = Field(0, ge=0, description="Root rank of broadcast, reduce, gather and scatter.")


class RingParams(AlgorithmParams, _Reducing, _Rooted):
    """Parameters of ``hub.ring``."""

    channels: int = Field(
        1,
        ge=1,
        le=64,
        description="Parallel rings; each handles its own slice of every segment with its own tags and chan value.",
    )
    pipeline: int = Field(
        1,
        ge=1,
        le=64,
        description="Chunks per segment and channel; each travels as its own message, so higher "
        "values mean more, smaller, independently pipelined messages.",
    )
    bidirectional: bool = Field(
        False, description="Odd channels run the ring the other way round (counter-rotating rings)."
    )


class DirectParams(AlgorithmParams, _Reducing, _Rooted):
    """Parameters of ``hub.direct`` (every rank talks to every other rank directly)."""


class HalvingDoublingParams(AlgorithmParams, _Reducing):
    """Parameters of ``hub.halving_doubling`` (recursive halving / doubling, power-of-two ranks)."""


class DoubleBinaryTreeParams(AlgorithmParams, _Reducing, _Rooted):
    """Parameters of ``hub.double_binary_tree`` (NCCL-style two complementary binary trees)."""

    pipeline: int = Field(
        1,
        ge=1,
        le=256,
        description="Chunks per tree; each is a separate message pipelined up and down the tree.",
    )


class HierarchicalParams(AlgorithmParams, _Reducing):
    """Parameters of ``hub.hierarchical`` (two-level: intra-node rings, inter-node rings)."""

    local_size: int | None = Field(
        None,
        ge=1,
        description="Ranks per node (must divide ranks). Default: the largest divisor of ranks "
        "that is at most 8 and smaller than ranks (1 if ranks is prime).",
    )
    fused: bool = Field(
        False,
        description="allreduce only: each intra-node step moves a whole 1/local_size of the data in one "
        "message (one lane) instead of one message per node block; about 5(N+L) nodes per rank instead "
        "of 5n, which is what makes thousands of ranks fit in memory.",
    )


def validated(model: type[AlgorithmParams], **values: object) -> AlgorithmParams:
    """Build ``model`` from keyword arguments; a bad value raises a one-line ``UsageError``."""
    from pydantic import ValidationError

    from ..errors import UsageError

    try:
        return model.model_validate(values)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err.get("loc", ())) or model.__name__
        msg = str(err.get("msg", exc)).removeprefix("Value error, ")
        raise UsageError(
            f"{model.__name__}: {where}: {msg}",
            hint="fields: " + ", ".join(model.model_fields),
        ) from None
