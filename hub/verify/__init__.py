"""Verification of collective algorithms at three cumulative levels.

* ``structure``: ids, dependencies (valid, acyclic), peers, chunk counts, buffer bounds, and
  FIFO send/recv matching per (src, dst, tag) with equal chunk counts and sizes.
* ``progress``: no deadlock under ASTRA-sim's execution semantics (eager SENDs, FIFO RECVs).
* ``semantics``: a symbolic execution of chunk contents meets the collective's postcondition.

See ``docs/verify.md``.
"""

from __future__ import annotations

from ..errors import Problem
from ._api import check, verify
from ._report import LEVELS, VerificationReport

__all__ = ["LEVELS", "Problem", "VerificationReport", "check", "verify"]
