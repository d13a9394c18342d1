"""``hub.verify`` as a pipeline transform: pass the algorithm through or fail the run."""

from __future__ import annotations

import logging
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..chakra import Algorithm
from ..verify import check, verify

__all__ = ["VerifyParams", "verify_transform"]

_log = logging.getLogger("hub.verify")


class VerifyParams(BaseModel):
    """Parameters of ``hub.verify``."""

    model_config = ConfigDict(extra="forbid")

    level: Literal["structure", "progress", "semantics"] = Field(
        "semantics", description="how much to prove: structure < progress (no deadlock) < semantics (correct data)"
    )
    strict: bool = Field(
        True,
        description="raise (fail the run) on problems, and when the requested level "
        "could not be checked (e.g. semantics of a CUSTOM collective); "
        "if false, only log a warning",
    )


def verify_transform(algorithm: Algorithm, params: VerifyParams, ctx: Any = None) -> Algorithm:
    """Check ``algorithm`` and return it unchanged; with ``strict``, raise the matching
    VerificationError subclass when it is wrong or when the level could not be checked."""
    if params.strict:
        check(algorithm, level=params.level, strict=True)
    else:
        rep = verify(algorithm, level=params.level)
        if not rep.complete:
            _log.warning("%s", rep.summary())
    return algorithm
