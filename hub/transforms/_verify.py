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
        "semantics", description="how much to prove: structure < progress (no deadlock) < semantics (correct data)")
    strict: bool = Field(True, description="raise (fail the run) on problems; if false, only log a warning")


def verify_transform(algorithm: Algorithm, params: VerifyParams, ctx: Any = None) -> Algorithm:
    """Check ``algorithm`` and return it unchanged; raise the matching VerificationError
    subclass when it is wrong and ``strict`` is set."""
    if params.strict:
        check(algorithm, level=params.level)
    else:
        rep = verify(algorithm, level=params.level)
        if not rep.ok:
            _log.warning("%s", rep.summary())
    return algorithm
