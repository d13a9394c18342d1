"""The pipeline file model (pass 1 of validation): pure data, no code, ``extra`` keys forbidden.

A pipeline names algorithm *sources* (a producer plus its transforms), *consumers*, and an
optional *matrix* of variables whose cartesian product gives the sweep points. Strings may
reference variables as ``${name}``; interpolation happens per point (see :mod:`hub.pipeline._file.matrix`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, StringConstraints, Tag, WithJsonSchema

__all__ = ["ConsumerStep", "Pipeline", "SourceSpec", "TransformStep", "SCHEMA_ID"]

SCHEMA_ID = "https://collhub.dev/schema/pipeline-v1.json"

#: Step names become directory names, so keep them to a portable alphabet.
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"
#: Qualified component ids: ``<plugin>.<name>``.
COMPONENT_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_-]*\.[A-Za-z0-9_][A-Za-z0-9_.-]*$"
#: Variable names usable as ``${name}``.
VAR_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"

StepName = Annotated[str, StringConstraints(pattern=NAME_PATTERN)]
VarName = Annotated[str, StringConstraints(pattern=VAR_PATTERN)]


def _matrix_kind(value: Any) -> str:
    return "range" if isinstance(value, dict) else "values"


#: What editors see for a range (validation checks it in pass 2, with positions: :mod:`hub._ranges`).
_RANGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "title": "Range",
    "required": ["from", "to"],
    "additionalProperties": False,
    "description": "nccl-tests-style range: from, to and one of factor (multiply) or step (add)",
    "properties": {
        "from": {"type": ["integer", "string"]},
        "to": {"type": ["integer", "string"]},
        "factor": {"type": "integer", "minimum": 2},
        "step": {"type": ["integer", "string"]},
    },
}

#: A matrix entry: a list of values, or an nccl-tests-style range mapping (``{from:, to:, factor:|step:}``)
#: whose keys and bounds pass 2 checks with positions (:mod:`hub._ranges`) before expanding it to a list.
#: The tags keep pydantic to one branch, so a scalar gets one "valid list" error, not one per branch.
MatrixValues = Annotated[
    Annotated[Annotated[list[Any], Field(min_length=1)], Tag("values")]
    | Annotated[dict[str, Any], Tag("range"), WithJsonSchema(_RANGE_SCHEMA)],
    Discriminator(_matrix_kind),
]
#: The tags pydantic puts into error locations of :data:`MatrixValues` (validation drops them).
MATRIX_TAGS = ("values", "range")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TransformStep(_Strict):
    """One transform applied to a source's algorithm, in file order."""

    use: str = Field(description="qualified id of a transform, e.g. hub.verify")
    params: dict[str, Any] = Field(default_factory=dict, description="parameters of the transform; may use ${var}")
    timeout: float | None = Field(
        default=None,
        gt=0,
        description="seconds before the transform is stopped (default: collhub run --timeout, else none)",
    )


class SourceSpec(_Strict):
    """A named algorithm source: a producer and the transforms applied to what it makes."""

    producer: str = Field(description="qualified id of a producer, e.g. hub.ring")
    params: dict[str, Any] = Field(default_factory=dict, description="parameters of the producer; may use ${var}")
    transforms: list[TransformStep] = Field(default_factory=list, description="transforms applied in order")
    timeout: float | None = Field(
        default=None,
        gt=0,
        description="seconds before the producer is stopped (default: collhub run --timeout, else none)",
    )
    description: str | None = Field(default=None, description="free text shown in graphs")


class ConsumerStep(_Strict):
    """A named consumer, run on every source's algorithm at every matrix point."""

    use: str = Field(description="qualified id of a consumer, e.g. hub.simulate")
    params: dict[str, Any] = Field(default_factory=dict, description="parameters of the consumer; may use ${var}")
    sources: list[str] | None = Field(
        default=None, description="restrict this consumer to these sources (default: all sources)"
    )
    timeout: float | None = Field(
        default=None,
        gt=0,
        description="seconds before the consumer (per point) is stopped (default: collhub run --timeout, else none)",
    )
    description: str | None = Field(default=None, description="free text shown in graphs")


class Pipeline(_Strict):
    """A collhub pipeline file (``version: 1``)."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        title="collhub pipeline",
        json_schema_extra={"$id": SCHEMA_ID},
    )

    version: Literal[1] = Field(description="file-format version; only 1 exists")
    name: str | None = Field(default=None, description="a short name for the pipeline")
    description: str | None = Field(default=None, description="free text")
    requires: list[str] = Field(
        default_factory=list,
        description='distributions that must be installed, as PEP 508 requirements, e.g. "collhub-mscclang>=0.1"',
    )
    vars: dict[VarName, Any] = Field(default_factory=dict, description="constants usable as ${name}")
    matrix: dict[VarName, MatrixValues] = Field(
        default_factory=dict,
        description="sweep variables: the run covers the cartesian product of the value lists, in key order; "
        "a value may be a range {from: 1KiB, to: 1GiB, factor: 2} or {from: 8, to: 64, step: 8} "
        "(nccl-tests -b/-e/-f/-i)",
    )
    sources: dict[StepName, SourceSpec] = Field(min_length=1, description="named algorithm sources")
    consumers: dict[StepName, ConsumerStep] = Field(
        default_factory=dict, description="named consumers; without any the run only produces algorithms"
    )
    output: str | None = Field(
        default=None, description="run directory (relative to the pipeline file); may use ${var} from vars"
    )
    on_error: Literal["fail", "continue"] = Field(
        default="fail", description="fail: stop at the first failing step; continue: record the failure in its rows"
    )


def json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of pipeline files."""
    schema = Pipeline.model_json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}
